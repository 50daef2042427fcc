// What would allow a refused destination, from the same policy the run used (pure): the hint that
// stands next to a `blocked` line, and the network half of `srt check net`. Advice never names
// anything a trust rule would ignore: a host that a repository's unapproved file lists gets
// `srt trust`, one the managed settings close gets no way around them.

import { isIP } from 'node:net';
import type { Policy } from '../policy.js';
import { isLoopbackAddress } from '../proxy/address-guard.js';
import { namedLoopback, normalizeHost, parseDomainEntry, ruleMatches } from '../proxy/domains.js';
import { bracketHost } from '../host-port.js';
import { shellQuote } from '../shell.js';

/** `host:port` as srt prints it (IPv6 bracketed) → its parts; null when it is not one. */
export function splitHostPort(text: string): { host: string; port: number } | null {
  const m = /^(?:\[([^\]]+)\]|([^:[\]]+)):(\d{1,5})$/.exec(text);
  if (!m) return null;
  const port = Number(m[3]);
  return port >= 1 && port <= 65535 ? { host: m[1] ?? m[2]!, port } : null;
}

/** The entry to add for a destination: the host alone for 443 and 80, else host:port. A loopback
 *  destination keeps its port always: only an entry with a port is forwarded into the sandbox
 *  (SPEC §6), so the same entry serves a client that uses the proxy and one that connects directly. */
export function allowEntryFor(host: string, port: number): string {
  const h = bracketHost(host);
  const loopback = namedLoopback(host) !== undefined || (isIP(host) !== 0 && isLoopbackAddress(host));
  return (port === 443 || port === 80) && !loopback ? h : `${h}:${port}`;
}

/**
 * How to allow a destination the policy refused for not being listed (`host` as the proxy judged
 * it). One sentence without `srt: `.
 */
export function networkAdvice(policy: Pick<Policy, 'network' | 'ignored'>, host: string, port: number): string {
  const canonical = normalizeHost(host)?.host ?? host;
  const matching = policy.ignored.filter((i) => {
    if (!/^network\.allowedDomains\[\d+\]$/.test(i.key) && i.key !== 'network.allowedDomains') return false;
    if (i.value === undefined) return i.key === 'network.allowedDomains';
    const parsed = parseDomainEntry(i.value, 'allow');
    return parsed.ok && parsed.rules.some((r) => ruleMatches(r, canonical, port));
  });
  const unapproved = matching.find((i) => i.reason.startsWith('not approved') && i.source.file !== undefined);
  if (unapproved) return `it is listed in ${unapproved.source.file}, which you have not approved: srt trust ${shellQuote(unapproved.source.file!)}`;
  if (policy.network.allowManagedDomainsOnly) return 'only the managed settings can allow it (they set network.allowManagedDomainsOnly)';
  const entry = allowEntryFor(canonical, port);
  return `run with --allow-domain ${entry}, or add "${entry}" to network.allowedDomains in ~/.srt/settings.json`;
}
