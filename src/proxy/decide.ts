// The policy decision for one destination (SPEC §6 "Order"), pure. Every caller — HTTP
// absolute-form, CONNECT, SOCKS5 — passes the host exactly as the client named it; it is
// normalised once here (domains.ts: case, trailing dot, IDN, IPv6 brackets, IPv4 shorthands
// such as `127.1`/`2130706433`/`0x7f.1`, IPv4-mapped IPv6) and the decision, the resolution
// and the dial all use that one canonical form, so no spelling can be judged as one host and
// reach another. Anything normalizeHost refuses (`a@b`, `%`, spaces, zone ids) is denied.

import type { Policy, Source } from '../policy.js';
import type { DomainRule, NormalizedHost } from './domains.js';
import { namedLoopback, normalizeHost, ruleMatches } from './domains.js';
import { embeddedIpv4 } from './ip.js';
import { hostPort } from '../host-port.js';

export type Decision =
  | {
      allow: true;
      /** Canonical destination: what the guard resolves or dials. */
      host: NormalizedHost;
      port: number;
      /** The allow entry that matched, and where it came from. */
      rule: DomainRule;
      source: Source;
      /** The allow entry names this destination exactly — an IP literal, or `localhost` (the host's
       *  loopback): exempt from the address guard's built-in ranges, never from the deny lists. */
      explicit: boolean;
    }
  | { allow: false; host: string; port: number; reason: string; rule?: DomainRule; source?: Source };

/** `host:port` for messages, IPv6 bracketed; hostile input is escaped and shortened. */
export function displayHostPort(host: string, port: number): string {
  const safe = JSON.stringify(host.length > 100 ? `${host.slice(0, 100)}…` : host).slice(1, -1);
  return hostPort(safe, port);
}

export function decide(network: Policy['network'], rawHost: string, port: number): Decision {
  if (!Number.isInteger(port) || port < 1 || port > 65535) {
    return { allow: false, host: rawHost, port, reason: `invalid destination port ${port}` };
  }
  const host = normalizeHost(rawHost);
  if (!host) return { allow: false, host: rawHost, port, reason: 'invalid destination host' };

  // An IPv6 literal that carries an IPv4 address (NAT64, 6to4, compatible) is also judged as it,
  // and `localhost` as every address it stands for.
  const v4 = host.ip === 6 ? embeddedIpv4(host.host) : null;
  const denyNames = [host.host, ...(v4 ? [v4] : []), ...(namedLoopback(host.host) ?? [])];
  for (const { rule, source } of network.deniedDomains) {
    if (denyNames.some((h) => ruleMatches(rule, h, port))) {
      const custom = network.deniedDomainReasons[rule.text];
      const reason = custom
        ? `${custom} (network.deniedDomains: ${rule.text})`
        : `denied by network.deniedDomains (${rule.text})`;
      return { allow: false, host: host.host, port, reason, rule, source };
    }
  }

  const allowList = effectiveAllowList(network);
  const matches = allowList.filter((d) => ruleMatches(d.rule, host.host, port));
  if (matches.length === 0) {
    const reason = network.allowManagedDomainsOnly
      ? 'not in the managed network.allowedDomains (allowManagedDomainsOnly)'
      : 'not in network.allowedDomains';
    return { allow: false, host: host.host, port, reason };
  }
  // An allow `*` or `*.example` never opens the host's loopback; naming it does.
  const explicit = matches.find(({ rule: r }) => r.kind === 'host' && (r.ip !== undefined || namedLoopback(r.host) !== undefined));
  const chosen = explicit ?? matches[0]!;
  return { allow: true, host, port, rule: chosen.rule, source: chosen.source, explicit: explicit !== undefined };
}

/** The allow entries that count: only managed ones under allowManagedDomainsOnly. */
export function effectiveAllowList(network: Policy['network']): Policy['network']['allowedDomains'] {
  return network.allowManagedDomainsOnly ? network.allowedDomains.filter((d) => d.source.scope === 'managed') : network.allowedDomains;
}
