// Domain grammar (SPEC §6) shared by settings validation and the proxy's decisions.
// Hosts are normalised with the WHATWG URL host parser — the same one Node's HTTP clients use —
// so every spelling a client can send (case, trailing dot, IDN, IPv4 shorthands such as
// `127.1` or `0x7f.0.0.1`, IPv6 forms) reaches one canonical form before it is compared.

export interface DomainRule {
  /** As written in the settings. */
  raw: string;
  /** Normalised spelling: `example.com`, `*.example.com`, `*`, `[::1]:8080`, `1.2.3.4:80`. */
  text: string;
  kind: 'host' | 'wildcard' | 'any';
  /** Lowercase ASCII (punycode), no trailing dot; for a wildcard the suffix after `*.`;
   *  IPv6 unbracketed and canonical; '' for `*`. */
  host: string;
  port?: number;
  /** Set when host is an IP literal. */
  ip?: 4 | 6;
}

export type ParsedDomainEntry =
  | { ok: true; rules: DomainRule[]; warning?: string }
  | { ok: false; error: string };

export interface NormalizedHost {
  host: string;
  ip?: 4 | 6;
}

const IPV4 = /^\d{1,3}(\.\d{1,3}){3}$/;
// Characters a hostname may carry before IDN conversion; anything else (`@ / ? # %`, spaces,
// control characters) is rejected rather than interpreted.
const HOST_CHARS = /^[\p{L}\p{M}\p{N}._-]+$/u;
const IPV6_CHARS = /^[0-9a-fA-F:.]+$/;

/**
 * Canonical form of a destination host as a client names it (`Example.COM.`, `[::1]`, `::1`,
 * `bücher.de`, `127.1`). IPv4-mapped IPv6 (`::ffff:127.0.0.1`) becomes the IPv4 address so a
 * rule about an IPv4 address cannot be sidestepped by the mapped spelling. Null when invalid.
 */
export function normalizeHost(input: string): NormalizedHost | null {
  let h = input.trim() === input ? input : '';
  if (h === '') return null;
  if (h.startsWith('[') && h.endsWith(']')) h = h.slice(1, -1);
  if (h.includes(':')) return normalizeIpv6(h);
  if (h.endsWith('.')) h = h.slice(0, -1);
  if (h === '' || h.includes('..') || h.startsWith('.') || !HOST_CHARS.test(h)) return null;
  let parsed: string;
  try {
    parsed = new URL(`http://${h}/`).hostname;
  } catch {
    return null;
  }
  if (parsed === '' || parsed.endsWith('.')) return null;
  if (IPV4.test(parsed)) return { host: parsed, ip: 4 };
  if (parsed.length > 253 || parsed.split('.').some((l) => l.length === 0 || l.length > 63)) return null;
  if (!/^[a-z0-9._-]+$/.test(parsed)) return null;
  // A purely numeric last label that the URL parser did not accept as IPv4 is not a hostname.
  if (/^\d+$/.test(parsed.slice(parsed.lastIndexOf('.') + 1))) return null;
  return { host: parsed };
}

function normalizeIpv6(h: string): NormalizedHost | null {
  if (!IPV6_CHARS.test(h)) return null; // zone ids (`%eth0`) and junk are refused
  let parsed: string;
  try {
    parsed = new URL(`http://[${h}]/`).hostname.slice(1, -1);
  } catch {
    return null;
  }
  const mapped = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(parsed);
  if (mapped) {
    const hi = parseInt(mapped[1]!, 16);
    const lo = parseInt(mapped[2]!, 16);
    return { host: `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`, ip: 4 };
  }
  return { host: parsed, ip: 6 };
}

function parsePort(s: string): number | null {
  if (!/^[1-9]\d{0,4}$/.test(s)) return null;
  const n = Number(s);
  return n <= 65535 ? n : null;
}

function ruleText(kind: DomainRule['kind'], host: string, ip: 4 | 6 | undefined, port?: number): string {
  const base = kind === 'any' ? '*' : kind === 'wildcard' ? `*.${host}` : ip === 6 ? `[${host}]` : host;
  return port === undefined ? base : `${base}:${port}`;
}

function makeRule(raw: string, kind: DomainRule['kind'], host: string, ip: 4 | 6 | undefined, port?: number): DomainRule {
  const rule: DomainRule = { raw, text: ruleText(kind, host, ip, port), kind, host };
  if (port !== undefined) rule.port = port;
  if (ip !== undefined) rule.ip = ip;
  return rule;
}

/** Parse `host[:port]` where host is not bracketed IPv6 and contains no colon. */
function parseHostPort(raw: string, spec: string): DomainRule | string {
  const colon = spec.lastIndexOf(':');
  let hostPart = spec;
  let port: number | undefined;
  if (colon !== -1) {
    hostPart = spec.slice(0, colon);
    const p = parsePort(spec.slice(colon + 1));
    if (p === null) return `invalid port "${spec.slice(colon + 1)}" (1-65535, no leading zero)`;
    port = p;
  }
  if (hostPart === '*') return makeRule(raw, 'any', '', undefined, port);
  if (hostPart.startsWith('*.')) {
    const suffix = normalizeHost(hostPart.slice(2));
    if (!suffix || suffix.ip) return `invalid wildcard "${hostPart}" (use *.example.com)`;
    return makeRule(raw, 'wildcard', suffix.host, undefined, port);
  }
  if (hostPart.includes('*')) return `wildcard "*" is only allowed as a whole first label ("*.example.com") or alone`;
  const host = normalizeHost(hostPart);
  if (!host) return `invalid host "${hostPart}"`;
  return makeRule(raw, 'host', host.host, host.ip, port);
}

/**
 * Parse one allowedDomains/deniedDomains entry. A deny entry may expand to several rules
 * (every reading of an ambiguous spelling is denied); an allow entry never widens on ambiguity.
 */
export function parseDomainEntry(raw: string, list: 'allow' | 'deny', what = list === 'allow' ? 'allowedDomains' : 'deniedDomains'): ParsedDomainEntry {
  const entry = raw.trim();
  if (entry === '') return { ok: false, error: 'empty domain entry' };
  if (/[\s@/?#\\]/.test(entry)) {
    // A URL or a host with a path: say what to write instead.
    const url = /^[a-z][a-z0-9+.-]*:\/\/(?:[^/?#@]*@)?([^/?#\s]+)/i.exec(entry) ?? /^([^/?#\s@\\:]+(?::\d+)?)[/?#]/.exec(entry);
    const hint = url ? `; write "${url[1]}"` : '';
    return { ok: false, error: `invalid domain entry "${raw}": a domain has no scheme, spaces, "@", path or query${hint}` };
  }

  if (entry.startsWith('[')) {
    const m = /^\[([^\]]+)\](?::(.*))?$/.exec(entry);
    if (!m) return { ok: false, error: `invalid domain entry "${raw}": bad bracketed IPv6 address` };
    const host = normalizeIpv6(m[1]!);
    if (!host) return { ok: false, error: `invalid domain entry "${raw}": "${m[1]}" is not an IPv6 address` };
    let port: number | undefined;
    if (m[2] !== undefined) {
      const p = parsePort(m[2]);
      if (p === null) return { ok: false, error: `invalid domain entry "${raw}": invalid port "${m[2]}" (1-65535, no leading zero)` };
      port = p;
    }
    return { ok: true, rules: [makeRule(raw, 'host', host.host, host.ip, port)] };
  }

  const colons = entry.split(':').length - 1;
  if (colons <= 1) {
    const r = parseHostPort(raw, entry);
    if (typeof r === 'string') return { ok: false, error: `invalid domain entry "${raw}": ${r}` };
    if (r.kind === 'any' && list === 'allow') {
      const where = r.port === undefined ? 'every destination' : `every host on port ${r.port}`;
      return { ok: true, rules: [r], warning: `${what} entry "${raw}" allows ${where}` };
    }
    return { ok: true, rules: [r] };
  }

  // Several colons without brackets: either a bare IPv6 address or IPv6 + ":port".
  const asAddress = normalizeIpv6(entry);
  const lastColon = entry.lastIndexOf(':');
  const hostPortHost = normalizeIpv6(entry.slice(0, lastColon));
  const hostPortPort = parsePort(entry.slice(lastColon + 1));
  const asHostPort =
    hostPortHost && hostPortPort !== null ? makeRule(raw, 'host', hostPortHost.host, hostPortHost.ip, hostPortPort) : null;

  if (!asAddress && !asHostPort) return { ok: false, error: `invalid domain entry "${raw}": not an IPv6 address` };
  if (list === 'deny') {
    const rules: DomainRule[] = [];
    if (asAddress) rules.push(makeRule(raw, 'host', asAddress.host, asAddress.ip));
    if (asHostPort) rules.push(asHostPort);
    const readings = rules.map((r) => r.text).join(' and ');
    return { ok: true, rules, warning: `${what} entry "${raw}" is ambiguous without brackets; denying ${readings}` };
  }
  if (asHostPort) {
    return {
      ok: true,
      rules: [asHostPort],
      warning: `${what} entry "${raw}" is ambiguous without brackets; read as ${asHostPort.text} (write "[${asHostPort.host}]" for the address alone)`,
    };
  }
  return {
    ok: true,
    rules: [],
    warning: `${what} entry "${raw}" is ambiguous without brackets and was dropped; write it as "[${asAddress!.host}]" or "[addr]:port"`,
  };
}

/**
 * `localhost` names the host's loopback (SPEC §6): the addresses it stands for, never resolved.
 * Undefined for every other host.
 */
export function namedLoopback(host: string): readonly string[] | undefined {
  return host === 'localhost' ? LOCALHOST_ADDRESSES : undefined;
}
const LOCALHOST_ADDRESSES: readonly string[] = ['127.0.0.1', '::1'];

/** Does `rule` cover destination `host` (already normalised) on `port`? A `localhost` rule also
 *  covers the addresses it stands for (`127.0.0.1`, `::1`). */
export function ruleMatches(rule: DomainRule, host: string, port: number): boolean {
  if (rule.port !== undefined && rule.port !== port) return false;
  switch (rule.kind) {
    case 'any':
      return true;
    case 'host':
      return rule.host === host || (namedLoopback(rule.host)?.includes(host) ?? false);
    case 'wildcard':
      return host.endsWith(`.${rule.host}`) && !IPV4.test(host) && !host.includes(':');
  }
}
