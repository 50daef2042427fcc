// What the library API (Sandbox.create) hands back on every platform: a prepared sandbox for one
// command. Linux: bubblewrap + seccomp (src/sandbox.ts). macOS: sandbox-exec with a Seatbelt
// profile (src/platform/macos.ts). Both take the same policy and give the same lifecycle, exit
// statuses and end-of-run report.

import type { Policy } from '../policy.js';
import type { CommandSpec } from '../sandbox.js';

export type PlatformName = 'linux' | 'macos';

export interface PlatformBackend {
  readonly platform: PlatformName;
  readonly policy: Policy;
  /** The plan as text (bwrap argv or Seatbelt profile, network, environment, warnings); runs nothing. */
  dryRun(cmd: CommandSpec): string;
  /** Run the command once; its exit status per SPEC §1 (125 when srt cannot start it). */
  run(cmd: CommandSpec): Promise<number>;
  /** Replace the network policy while the command runs (`--control-fd`). */
  updateNetwork(network: Policy['network']): void;
  /** One printable line per distinct refusal, for the end of the run. */
  violations(): string[];
  /** srt's own lines of this sandbox so far (warnings, errors, debug) when no `onMessage` sink was given. */
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
