// What the Linux and macOS sandboxes share around their own run: facts gathered at creation and
// again before any later run (the facts of a run that has happened are stale: the command may have
// created anything), a pure plan of each command from them, and one RunSession for messages,
// network updates, violations and disposal.

import type { Policy } from '../policy.js';
import { Messages, type CommandSpec, type PlatformBackend, type PlatformName, type SandboxOptions } from './backend.js';
import { commandArgv } from './command.js';
import { RunSession } from './session.js';
import type { SpawnPlan } from './spawn-plan.js';

export abstract class SandboxBase<Facts> implements PlatformBackend {
  abstract readonly platform: PlatformName;
  protected readonly session: RunSession;
  /** The facts the next run uses; `stale` once a run has used them. */
  protected gathered: Facts;
  private stale = false;

  protected constructor(
    readonly policy: Policy,
    private readonly opts: SandboxOptions,
    gathered: Facts,
    /** Gathers the facts again; `previous`: the last run's, for what may be reused of them. */
    private readonly gather: (opts: SandboxOptions, previous: Facts) => Promise<Facts>,
    private readonly plan: (policy: Policy, facts: Facts, argv: string[]) => SpawnPlan,
  ) {
    this.gathered = gathered;
    this.session = new RunSession(policy, new Messages(opts.onMessage), opts.debug ?? false, opts.audit);
  }

  prepare(cmd: CommandSpec): SpawnPlan {
    return this.plan(this.policy, this.gathered, commandArgv(cmd));
  }

  messages(): string[] {
    return this.session.out.list();
  }

  abstract run(cmd: CommandSpec): Promise<number>;

  /** The facts for the run about to start: those gathered last, unless a run has used them. */
  protected async factsForRun(): Promise<Facts> {
    if (this.stale) this.gathered = await this.gather({ ...this.opts, policy: this.policy }, this.gathered);
    this.stale = true;
    return this.gathered;
  }

  /** Replace the network policy for new connections while the command runs (`--control-fd`). */
  updateNetwork(network: Policy['network']): void {
    this.session.updateNetwork(network);
  }

  /** Once the last run's command has ended: whether it left the terminal mid-line (PlatformBackend). */
  commandEnd(): { midLine: boolean } | undefined {
    return this.session.commandEnd;
  }

  /** One printable line per distinct refusal by the proxy (`srt: blocked evil.example:443 — …`),
   *  then the run's own notes (on Linux: refused protected writes, new repositories). */
  violations(): string[] {
    return this.session.violations();
  }

  async dispose(): Promise<void> {
    await this.session.dispose();
  }
}
