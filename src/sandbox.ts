// The library API: a sandbox for commands under one policy. It gathers what a run needs
// (create), plans a command without side effects (prepare, dryRun), and runs commands, one at a
// time, each set up and cleaned up on its own (run). It prints nothing and never exits: srt's own
// lines go to `onMessage` (else `messages()`), and signals are handled only while a command runs
// (forwarded to it). Linux: platform/linux.ts; macOS: platform/macos.ts.

import type { Policy } from './policy.js';
import type { ConnectGroup } from './loopback-refusals.js';
import type { RefusalGroup } from './refusals.js';
import { hostPlatform, SandboxError, type CommandSpec, type PlatformBackend, type PlatformName, type SandboxOptions } from './platform/backend.js';
import { planJson, planText, type SpawnPlan } from './platform/spawn-plan.js';

export { SandboxError };
export type { CommandSpec, PlatformName, SandboxOptions, SpawnPlan };

export class Sandbox {
  private running = false;

  private constructor(private readonly backend: PlatformBackend, private readonly describeOnly: boolean) {}

  /**
   * Validate dependencies and gather what a run needs, for this host's platform or the one
   * `opts.platform` names; throws SandboxError. Runs the credentials' `source` commands and makes
   * presets' cache directories, unless `dryRun` (a sandbox only to describe plans).
   */
  static async create(given: SandboxOptions): Promise<Sandbox> {
    // Its own copy, whole: neither updateNetwork nor a later change to the caller's object
    // reaches the other.
    const opts = { ...given, policy: structuredClone(given.policy) };
    const platform = opts.platform ?? hostPlatform();
    let backend: PlatformBackend;
    if (platform === 'macos') backend = await (await import('./platform/macos.js')).MacosSandbox.create(opts);
    else if (platform === 'linux' && process.platform === 'linux') backend = await (await import('./platform/linux.js')).LinuxSandbox.create(opts);
    else throw new SandboxError(`sandboxing on ${process.platform} is not supported by this build`);
    return new Sandbox(backend, opts.dryRun === true);
  }

  get platform(): PlatformName {
    return this.backend.platform;
  }

  get policy(): Policy {
    return this.backend.policy;
  }

  /** What running `cmd` would spawn (argv, environment changes, mounts or profile, files,
   *  warnings); nothing is made or started. Throws SandboxError when no sandbox can keep the policy. */
  prepare(cmd: CommandSpec): SpawnPlan {
    return this.backend.prepare(cmd);
  }

  /** The plan as text, as `srt --dry-run` prints it. */
  dryRun(cmd: CommandSpec): string {
    return planText(this.prepare(cmd));
  }

  /** The plan as `srt --dry-run --json` prints it (docs/cli.md "Dry run"). */
  dryRunJson(cmd: CommandSpec): object {
    return planJson(this.prepare(cmd));
  }

  /** Run `cmd`; its exit status per SPEC §1 (125 when srt cannot start it, 128+N when a signal
   *  ended it or came before it started). One command at a time; `violations()` then describes it. */
  async run(cmd: CommandSpec): Promise<number> {
    if (this.describeOnly) throw new Error('this Sandbox was created with dryRun: it can describe plans, not run them');
    // Refused from the call on, not only once the command starts: two runs' gathering would
    // share the sandbox's run directory (mount plan, filter, TMPDIR) and overtake each other.
    if (this.running) throw new Error('a Sandbox runs one command at a time; wait for run() to finish');
    this.running = true;
    try {
      return await this.backend.run(cmd);
    } finally {
      this.running = false;
    }
  }

  /** Replace the sandbox's network policy (`--control-fd`): the running command's new connections
   *  follow it, and so do later commands of this sandbox until the next call. */
  updateNetwork(network: Policy['network']): void {
    this.backend.updateNetwork(structuredClone(network));
  }

  /** Once the last run's command has ended (undefined before and while it runs; srt's end-of-run
   *  lines follow): `midLine` when its output left the terminal on srt's stderr mid-line, as far
   *  as srt relayed it (a caller printing there starts a new line first). */
  commandEnd(): { midLine: boolean } | undefined {
    return this.backend.commandEnd();
  }

  /** One printable line per distinct refusal of the last run, then what srt did about its writes. */
  violations(): string[] {
    return this.backend.violations();
  }

  /** What the last run refused on the way to files, grouped with what would allow each group
   *  (Linux with the supervisor; empty elsewhere): what `srt --suggest` prints from. */
  refusalGroups(): RefusalGroup[] {
    return this.backend.refusalGroups?.() ?? [];
  }

  /** Connections of the last run to a loopback port nothing listened on inside, grouped with the
   *  entry that would forward them (Linux with the supervisor; empty elsewhere). */
  connectGroups(): ConnectGroup[] {
    return this.backend.connectGroups?.() ?? [];
  }

  /** srt's own lines so far (warnings, errors, debug), when no `onMessage` sink was given. */
  messages(): string[] {
    return this.backend.messages();
  }

  async dispose(): Promise<void> {
    await this.backend.dispose();
  }
}
