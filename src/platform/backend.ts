// What every platform's sandbox offers the library API (src/sandbox.ts), and what they share:
// the command, the options, srt's own failure and its messages. Linux: bubblewrap + srt-init
// (platform/linux.ts). macOS: sandbox-exec with a Seatbelt profile (platform/macos.ts). Both
// take the same policy and give the same lifecycle, exit statuses and end-of-run report.

import type { AuditSink } from '../audit.js';
import type { Policy } from '../policy.js';
import type { ConnectGroup } from '../loopback-refusals.js';
import type { RefusalGroup } from '../refusals.js';
import type { PlatformName, SpawnPlan } from './spawn-plan.js';

export type { PlatformName };

/** A command: its argv, or one string for bash -c (sh -c where there is no bash). */
export type CommandSpec = { argv: string[] } | { shell: string };

/** srt could not build the sandbox: print `srt: ${message}`, exit 125, nothing ran. */
export class SandboxError extends Error {}

export interface SandboxOptions {
  policy: Policy;
  /** `policy.cwd` is this process's working directory (the CLI): stop if, by the time srt
   *  resolves it, that path leads to another directory (renamed or swapped meanwhile). */
  pinCwd?: boolean;
  debug?: boolean;
  /** Default: this host's. `macos` also works on Linux for prepare/dryRun (to review the Seatbelt profile). */
  platform?: PlatformName;
  /** `--log FILE`: network decisions, connections and refused protected writes as data. */
  audit?: AuditSink;
  /** Only to describe the plan (`--dry-run`): credentials' `source` commands are not run and
   *  presets' cache directories are not made. */
  dryRun?: boolean;
  /** srt's own lines as they happen (`srt: warning: …`, `srt: …` errors, `srt[debug]: …`), not yet
   *  made printable. The library prints nothing: without a sink they are kept for `messages()`.
   *  The CLI passes one that prints them. */
  onMessage?: (line: string) => void;
  /** The sandbox runs one command (the CLI): its tree search is not watched for the commands
   *  after it (docs/library.md "Many commands"). */
  oneCommand?: boolean;
}

export interface PlatformBackend {
  readonly platform: PlatformName;
  readonly policy: Policy;
  /** What running `cmd` would spawn, with everything --dry-run shows; no side effect at all. */
  prepare(cmd: CommandSpec): SpawnPlan;
  /** Run the command; its exit status per SPEC §1 (125 when srt cannot start it). Each run is
   *  set up and cleaned up on its own; a sandbox runs one command at a time. */
  run(cmd: CommandSpec): Promise<number>;
  /** Replace the network policy while the command runs (`--control-fd`). */
  updateNetwork(network: Policy['network']): void;
  /** Once the last run's command has ended (undefined before and while it runs): `midLine` when
   *  its output left the terminal srt's stderr is on mid-line, as far as srt relayed it. */
  commandEnd(): { midLine: boolean } | undefined;
  /** One printable line per distinct refusal, for the end of the last run. */
  violations(): string[];
  /** What the sandbox refused on the way to files, grouped with what would allow it (Linux, with
   *  the supervisor: what it and the kernel refused). */
  refusalGroups?(): RefusalGroup[];
  /** Connections to a loopback port nothing listened on inside, grouped with the entry that would
   *  forward them (Linux, with the supervisor). */
  connectGroups?(): ConnectGroup[];
  /** srt's own lines so far (warnings, errors, debug) when no `onMessage` sink was given. */
  messages(): string[];
  dispose(): Promise<void>;
}

/** The backend for this host, or undefined where srt has none. */
export function hostPlatform(): PlatformName | undefined {
  if (process.platform === 'linux') return 'linux';
  if (process.platform === 'darwin') return 'macos';
  return undefined;
}

/** srt's own lines of one sandbox (warnings, errors, debug): to the caller's sink, else kept. */
export class Messages {
  private readonly kept: string[] = [];
  constructor(private readonly sink?: (line: string) => void) {}

  say(line: string): void {
    if (this.sink) this.sink(line);
    else this.kept.push(line);
  }

  list(): string[] {
    return [...this.kept];
  }
}
