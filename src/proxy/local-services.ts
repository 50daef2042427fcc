// Local services both ways (SPEC §6), pure:
//  - forwarded ports: every allowed loopback entry with a port (`localhost:5432`, `127.0.0.1:6379`,
//    `[::1]:8080`) gets a listener inside the sandbox on that loopback address and port; the
//    helper's relay hands each connection to srt's proxy, whose gate decides it like any other
//    (so clients without proxy support — psql, redis-cli, JDBC — reach the host's service);
//  - exposed ports (`network.exposePorts`): a listener on the host's loopback relayed into the
//    sandbox's loopback, for a server the command starts.
// Ports srt itself uses inside the sandbox can be neither.

import { isIP } from 'node:net';
import type { ExposedPort, Policy, Source } from '../policy.js';
import { isLoopbackAddress } from './address-guard.js';
import { effectiveAllowList } from './decide.js';
import { namedLoopback, type DomainRule } from './domains.js';
import { hostPort } from '../host-port.js';

/** Inside the sandbox, the relay listens here for srt's HTTP and SOCKS5 proxies. */
export const HTTP_RELAY_PORT = 3128;
export const SOCKS_RELAY_PORT = 1080;

/** What srt itself runs on `port` inside the sandbox, if anything. */
export function srtPortUse(port: number): string | undefined {
  if (port === HTTP_RELAY_PORT) return `srt's HTTP proxy listens on 127.0.0.1:${port} inside the sandbox`;
  if (port === SOCKS_RELAY_PORT) return `srt's SOCKS5 proxy listens on 127.0.0.1:${port} inside the sandbox`;
  return undefined;
}

/** Inside addresses a forwarded allow entry listens on; undefined when the entry forwards nothing. */
export function forwardListenAddresses(rule: DomainRule): readonly string[] | undefined {
  if (rule.kind !== 'host' || rule.port === undefined) return undefined;
  const named = namedLoopback(rule.host);
  if (named) return named;
  return rule.ip !== undefined && isLoopbackAddress(rule.host) ? [rule.host] : undefined;
}

export interface Forward {
  /** The destination the gate judges: the entry's host (`localhost` or a loopback literal). */
  host: string;
  port: number;
  /** Loopback addresses the relay listens on inside the sandbox (same port). */
  listen: string[];
  /** The allow entry, as `srt config` shows it. */
  rule: string;
  source: Source;
}

/**
 * The forwarded ports of a policy. One inside address:port serves one entry: a literal entry
 * takes its own address before `localhost` does (`localhost:5432` plus `127.0.0.1:5432` →
 * 127.0.0.1 for the literal, ::1 for localhost).
 */
export function forwardedPorts(network: Policy['network']): Forward[] {
  const entries = effectiveAllowList(network).flatMap((d) => {
    const listen = forwardListenAddresses(d.rule);
    return listen ? [{ d, listen }] : [];
  });
  const taken = new Set<string>();
  const out: Forward[] = [];
  const literalFirst = [...entries].sort((a, b) => Number(namedLoopback(a.d.rule.host) !== undefined) - Number(namedLoopback(b.d.rule.host) !== undefined));
  for (const { d, listen } of literalFirst) {
    const port = d.rule.port!;
    const free = listen.filter((a) => !taken.has(`${a} ${port}`));
    if (free.length === 0) continue;
    for (const a of free) taken.add(`${a} ${port}`);
    out.push({ host: d.rule.host, port, listen: free, rule: d.rule.text, source: d.source });
  }
  // Back in the order of the settings, for messages and `srt config`.
  const order = new Map(entries.map((e, i) => [e.d.rule.text, i]));
  return out.sort((a, b) => order.get(a.rule)! - order.get(b.rule)!);
}

function port(text: string): number | null {
  if (!/^[1-9]\d{0,4}$/.test(text)) return null;
  const n = Number(text);
  return n <= 65535 ? n : null;
}

/**
 * One `exposePorts` entry: `3000`, `"3000"`, `"8080:80"` (host 8080 → sandbox 80) or
 * `"127.0.0.1:8080:80"` / `"[::1]:8080:80"`. Only the host's loopback may be bound: a sandboxed
 * server must not become reachable from the network. An entry without an address is the host's
 * `localhost`, both loopbacks (a client may try either first); its ::1 only where the host has
 * one. A string is the reason it is invalid.
 */
export function parseExposeEntry(entry: number | string): Array<Omit<ExposedPort, 'source'>> | string {
  const text = String(entry).trim();
  const m = /^(?:(\[[^\]]*\]|[^:[\]]+):)?(?:([^:]+):)?([^:]+)$/.exec(text);
  if (!m) return `invalid entry "${text}" (use PORT, HOSTPORT:SANDBOXPORT or ADDRESS:HOSTPORT:SANDBOXPORT)`;
  // "8080:80" matches as address 8080, port 80: two parts are host port and sandbox port.
  const [addr, host] = m[1] !== undefined && m[2] === undefined ? [undefined, m[1]] : [m[1], m[2]];
  const sandbox = m[3]!;
  const sandboxPort = port(sandbox);
  const hostPort = host === undefined ? sandboxPort : port(host);
  if (sandboxPort === null || hostPort === null) return `invalid port in "${text}" (1-65535, no leading zero)`;
  const bare = addr?.replace(/^\[(.*)\]$/, '$1') ?? '127.0.0.1';
  if (addr !== undefined && (bare === addr) === bare.includes(':')) return `invalid address in "${text}" (IPv6 in brackets: [::1])`;
  if (isIP(bare) === 0 || !isLoopbackAddress(bare)) return `"${text}": only the host's loopback can be exposed (127.0.0.1 or [::1]), so the sandbox is never reachable from the network`;
  const use = srtPortUse(sandboxPort);
  if (use) return `"${text}": port ${sandboxPort} cannot be exposed: ${use}`;
  if (addr !== undefined) return [{ hostAddress: bare, hostPort, sandboxPort }];
  return [{ hostAddress: '127.0.0.1', hostPort, sandboxPort }, { hostAddress: '::1', hostPort, sandboxPort, ifAvailable: true }];
}

/** `127.0.0.1:3000 → sandbox :3000`, for `srt config` and `--dry-run`. */
export function describeExpose(e: Pick<ExposedPort, 'hostAddress' | 'hostPort' | 'sandboxPort'>): string {
  return `host ${hostPort(e.hostAddress, e.hostPort)} → sandbox 127.0.0.1:${e.sandboxPort}`;
}

/** `127.0.0.1:5432, [::1]:5432 → host localhost:5432`. */
export function describeForward(f: Pick<Forward, 'listen' | 'port' | 'host'>): string {
  return `sandbox ${f.listen.map((a) => hostPort(a, f.port)).join(', ')} → host ${hostPort(f.host, f.port)}`;
}
