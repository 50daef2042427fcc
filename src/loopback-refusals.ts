// Refused loopback connections you can act on (SPEC §6 local services): a client that connects
// straight to a loopback port nothing listens on inside the sandbox (no forwarded port, no server
// of its own) gets ECONNREFUSED; the supervisor counts those (init/loopback.c, `L` records) and
// this module says, when the command ends, which entry would forward each port. Judged by the same
// network decision and advice the proxy's refusals use (a deny entry is named, never suggested
// away; a host an unapproved file lists gets `srt trust`), and kept apart from the file refusals:
// it loads only what the proxy has loaded already, not the access model.

import { hostPort } from './host-port.js';
import type { Policy } from './policy.js';
import { decide } from './proxy/decide.js';
import { networkAdvice } from './settings/advice.js';

/** TCP connections to a loopback address and port nothing listened on inside the sandbox (the
 *  supervisor's `L` record): no forwarded port, no server of the command's own. */
export interface LoopbackRefusal {
  address: string;
  port: number;
  count: number;
}

/** Refused loopback connections to one port, with what would forward it. */
export interface ConnectGroup {
  /** The destination as an allow entry names it: `localhost:18080` (127.0.0.1 and ::1), `127.0.0.2:5432`. */
  target: string;
  count: number;
  /** The entry that would forward it, when one the user may add would (`--allow-domain` form). */
  allow?: string;
  /** What would allow it, or why nothing srt offers would: one sentence. */
  hint: string;
}

/** One refused loopback connection target: the `--log` record of kind `connect`. */
export interface ConnectRecord {
  kind: 'connect';
  /** The address and port the command connected to (`127.0.0.1:18080`, `[::1]:18080`). */
  target: string;
  count: number;
  rule: 'not-forwarded';
  allow?: string;
}

/**
 * Refused loopback connections, grouped by the entry that would forward them: 127.0.0.1 and ::1
 * are both `localhost` (what a `localhost:PORT` entry listens on), another loopback address its
 * own literal. The advice comes from the same policy check as `srt check net`: a deny entry is
 * named, never suggested away; a host an unapproved file lists gets `srt trust`. `root`: whether
 * srt runs as root (only then can ports below 1024 be forwarded).
 */
export function classifyConnects(policy: Policy, refused: readonly LoopbackRefusal[], root: boolean):
  { groups: ConnectGroup[]; records: ConnectRecord[] } {
  const groups = new Map<string, ConnectGroup>();
  const records: ConnectRecord[] = [];
  // A port the run exposes is one the command serves itself: a refused connect there is its own
  // server not listening yet (a wait-until-up loop), never a missing forward.
  const served = new Set(policy.network.exposePorts.map((e) => e.sandboxPort));
  for (const r of refused) {
    const host = r.address === '127.0.0.1' || r.address === '::1' ? 'localhost' : r.address;
    if (host === 'localhost' && served.has(r.port)) continue;
    const target = hostPort(host, r.port);
    let g = groups.get(target);
    if (!g) groups.set(target, (g = { target, count: 0, ...connectAdvice(policy, host, r.port, target, root) }));
    g.count += r.count;
    records.push({ kind: 'connect', target: hostPort(r.address, r.port), count: r.count,
      rule: 'not-forwarded', ...(g.allow ? { allow: g.allow } : {}) });
  }
  return { groups: [...groups.values()].sort((a, b) => b.count - a.count), records };
}

function connectAdvice(policy: Policy, host: string, port: number, entry: string, root: boolean): { allow?: string; hint: string } {
  if (port < 1024 && !root) return { hint: 'srt forwards ports below 1024 only when it runs as root' };
  const d = decide(policy.network, host, port);
  const add = `run with --allow-domain ${entry}, or add "${entry}" to network.allowedDomains in ~/.srt/settings.json`;
  // Allowed through the proxy by an entry without this port (`localhost`, `*`): only an entry
  // naming the port forwards it.
  if (d.allow && d.rule.text === entry) return { hint: `${entry} is allowed, but a port is forwarded only when it is allowed as the run starts` };
  if (d.allow) return { allow: entry, hint: `to allow, ${add} (${d.rule.text} does not forward a port)` };
  if (d.rule) return { hint: `network.deniedDomains "${d.rule.text}" in ${d.source?.file ?? d.source?.scope ?? 'the settings'} refuses it` };
  const advice = networkAdvice(policy, host, port);
  return advice === add ? { allow: entry, hint: `to allow, ${add}` } : { hint: `to allow, ${advice}` };
}

/** The lines printed when the command ends (without `srt: `), most refused first. */
export function connectReportLines(groups: readonly ConnectGroup[], unlisted: number, max = 10): string[] {
  const lines = groups.slice(0, max).map((g) => {
    const port = g.target.startsWith('localhost:') ? g.target.slice('localhost:'.length) : g.target;
    return `no forwarded port ${port} (${count(g.count, 'connection')} refused): ${g.hint}`;
  });
  const more = groups.slice(max).reduce((n, g) => n + g.count, 0) + unlisted;
  if (more > 0) lines.push(`… and ${count(more, 'more connection')} refused to loopback ports nothing listened on`);
  return lines;
}

function count(n: number, what: string): string {
  return `${n} ${what}${n === 1 ? '' : 's'}`;
}
