// `srt --control-fd N` (CLI only, loaded when the option is given).

import { createReadStream, fstatSync, lstatSync, readlinkSync } from 'node:fs';
import { Socket } from 'node:net';
import { createInterface } from 'node:readline';
import { insideWritable, writableRoots } from './platform/writable.js';
import type { Policy } from './policy.js';
import { forwardedPorts } from './proxy/local-services.js';
import type { Sandbox } from './sandbox.js';
import { SettingsError, type SettingsReport } from './settings/index.js';
import { say } from './shell.js';

/** A value as it decides, without where it came from. */
const canonical = (v: unknown): string => JSON.stringify(v, (k, x: unknown) => (k === 'source' ? undefined : x));

/** What was set up before the command started and stays as it was for the rest of the run. */
const FIXED: Array<[string, (p: Policy) => unknown]> = [
  ...(['allowWrite', 'denyWrite', 'denyRead', 'allowRead', 'disabled'] as const).map((k): [string, (p: Policy) => unknown] => [`filesystem.${k}`, (p) => p.filesystem[k]]),
  ...(['envVars', 'files', 'awsPairs', 'sigv4', 'allowPlaintextInject'] as const).map((k): [string, (p: Policy) => unknown] => [`credentials.${k}`, (p) => p.credentials[k]]),
  ['network.tlsTerminate', (p) => p.network.tlsTerminate ?? null],
  ['network.httpProxyPort', (p) => p.network.httpProxyPort ?? null],
  ['network.socksProxyPort', (p) => p.network.socksProxyPort ?? null],
  ['network.exposePorts', (p) => p.network.exposePorts],
  ['network.allowUnixSockets', (p) => p.network.allowUnixSockets],
  ['network.allowAllUnixSockets', (p) => p.network.allowAllUnixSockets],
  ['network.allowLocalBinding', (p) => p.network.allowLocalBinding],
  ...(['mandatoryDenySearchDepth', 'enableWeakerNestedSandbox', 'allowNestedUserNamespaces', 'allowPty', 'allowAppleEvents', 'enableWeakerNetworkIsolation'] as const)
    .map((k): [string, (p: Policy) => unknown] => [k, (p) => p[k]]),
];

/**
 * The policy a control line brings, split into what applies from the next connection (the domain
 * lists and the address rules) and the keys it would change that cannot change mid-run (mounts,
 * the environment, the seccomp filter, listeners): those keep their values from the start.
 */
export function applyControl(running: Policy, next: Policy): { policy: Policy; fixed: string[] } {
  const fixed = FIXED.filter(([, get]) => canonical(get(running)) !== canonical(get(next))).map(([key]) => key);
  const listening = new Set(forwardedPorts(running.network).map((f) => `${f.host} ${f.port}`));
  const unforwarded = forwardedPorts(next.network).filter((f) => !listening.has(`${f.host} ${f.port}`)).map((f) => f.rule);
  if (unforwarded.length) fixed.push(`forwarded ports (${unforwarded.join(', ')})`);
  const network: Policy['network'] = {
    ...next.network,
    exposePorts: running.network.exposePorts,
    allowUnixSockets: running.network.allowUnixSockets,
    allowAllUnixSockets: running.network.allowAllUnixSockets,
    allowLocalBinding: running.network.allowLocalBinding,
  };
  for (const k of ['tlsTerminate', 'httpProxyPort', 'socksProxyPort'] as const) {
    if (running.network[k] === undefined) delete network[k];
    else (network as Record<string, unknown>)[k] = running.network[k];
  }
  return { policy: { ...running, network, warnings: next.warnings, ignored: next.ignored }, fixed };
}

/**
 * Why descriptor `fd` may not carry the control lines of a run of `policy`, or null. A FIFO or file
 * the command may write would let it rewrite its own policy mid-run: its inode is judged where its
 * one name lies (the descriptor's path, checked to hold that very inode), as `--log` is, and
 * refused inside a writable root. One srt cannot name (another name elsewhere, a name that no
 * longer holds it, no /proc/self/fd to ask) is refused too. Anonymous pipes, sockets, and a deleted
 * file nothing names any more stay allowed.
 */
export function controlFdRefusal(fd: number, policy: Policy): string | null {
  const st = fstatSync(fd, { bigint: true });
  if (!st.isFIFO() && !st.isFile()) return null;
  const what = st.isFIFO() ? 'a FIFO' : 'a file';
  const label = `--control-fd ${fd}`;
  const instead = 'pass a pipe (srt --control-fd 3 ... 3< <(producer)) or a socket instead';
  let name = '';
  try {
    name = readlinkSync(`/proc/self/fd/${fd}`);
  } catch { /* no /proc (macOS): nothing names it */ }
  if (st.isFIFO() && /^pipe:\[\d+\]$/.test(name)) return null;
  if (st.nlink === 0n) return null;
  if (st.nlink > 1n) return `${label} is ${what} with ${st.nlink} names: srt cannot tell whether the command may write one of them; ${instead}`;
  let named = false;
  try {
    const at = lstatSync(name, { bigint: true });
    named = at.dev === st.dev && at.ino === st.ino;
  } catch { /* not there */ }
  if (!named) return `${label} is ${what} srt cannot find by name${name ? ` (${name} holds something else)` : ''}, so it cannot tell whether the command may write it; ${instead}`;
  if (policy.filesystem.disabled || insideWritable(name, writableRoots(policy))) {
    return `${label} is ${what} inside a path the command may write (${name}): the command could rewrite its own policy while it runs; ${instead}, or keep it outside`;
  }
  return null;
}

/**
 * `--control-fd N`: each line is a whole settings document that replaces the configuration below
 * managed scope (SPEC §1); its network lists apply to the next connection, and what cannot change
 * mid-run is reported. A bad line is reported and changes nothing. `onPolicy` gets each policy
 * that took effect. Returns the function that stops reading.
 */
export function followControlFd(fd: number, report: SettingsReport, sandbox: Pick<Sandbox, 'updateNetwork'>, onPolicy: (p: Policy) => void): () => void {
  const label = `--control-fd ${fd}`;
  // Pipes and sockets are read without blocking (a pending fs read could not be cancelled and
  // would keep srt alive after the command ends); a regular file is read as a file.
  const st = fstatSync(fd);
  const stream = st.isFIFO() || st.isSocket() ? new Socket({ fd, readable: true, writable: false }) : createReadStream('', { fd, autoClose: true });
  const lines = createInterface({ input: stream, crlfDelay: Infinity });
  let running = report.policy;
  let n = 0;
  lines.on('line', (line) => {
    n++;
    if (line.trim() === '') return;
    const where = `${label} line ${n}`;
    try {
      let settings: unknown;
      try {
        settings = JSON.parse(line);
      } catch (err) {
        throw new SettingsError(`${where}: invalid JSON: ${(err as Error).message}`);
      }
      const { policy, fixed } = applyControl(running, report.withControl({ label: where, settings }));
      sandbox.updateNetwork(policy.network);
      running = policy;
      onPolicy(policy);
      for (const w of policy.warnings.filter((w) => w.startsWith(where))) say(`srt: warning: ${w}`);
      if (fixed.length) say(`srt: warning: ${where}: ${fixed.join(', ')} cannot change while the command runs: they stay as they were at the start (the network lists changed from the next connection)`);
    } catch (err) {
      const lines = err instanceof SettingsError ? err.lines : [(err as Error).message];
      for (const l of lines) say(`srt: ${l} (ignored; the previous policy stays)`);
    }
  });
  stream.on('error', (err: Error) => say(`srt: ${label}: ${err.message}`));
  return () => { lines.close(); stream.destroy(); };
}
