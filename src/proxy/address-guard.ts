// Resolved-address guard (SPEC §6, invariant 4). An allowed *hostname* is resolved exactly once;
// every address that is loopback, unspecified, link-local, multicast, broadcast, a cloud
// metadata or pod-identity endpoint (METADATA below, with sources), one of this host's own
// addresses, a deniedDomains IP literal or inside a deniedResolvedAddresses CIDR is dropped, and
// the caller dials only what is left — by address, so nothing is ever resolved a second time (no
// DNS-rebinding window). IPv6 forms that carry an IPv4 address (IPv4-mapped, IPv4-translated,
// IPv4-compatible, NAT64 64:ff9b::/96, 6to4 2002::/16) are judged as that IPv4 address.
// IP-literal allow entries are explicit and skip the built-in ranges, and so does `localhost`,
// which is never resolved: it means the host's 127.0.0.1 and ::1. A name that resolves to a
// loopback address passes where that address with this port is itself allowed
// (`["myapp.test", "127.0.0.1:3000"]`): the user named the loopback service, so a test or a local
// setup can reach it by name, while a rebinding name (allowed by `*` or a wildcard) still cannot.

import { lookup } from 'node:dns/promises';
import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { networkInterfaces } from 'node:os';
import type { Policy } from '../policy.js';
import { decide, displayHostPort } from './decide.js';
import { namedLoopback } from './domains.js';
import { embeddedIpv4, inCidr, ipBytes, parseCidr } from './ip.js';

export type Resolver = (host: string) => Promise<string[]>;

/** Default resolver: the system's (getaddrinfo) answer, every address, in its order. */
export const systemResolver: Resolver = async (host) =>
  (await lookup(host, { all: true, verbatim: true })).map((a) => a.address);

/**
 * Cloud instance-metadata and pod-identity endpoints: they hand out the machine's own
 * credentials to anyone who asks from it. Each address as its provider documents it (or the
 * cloud-init datasource that reads it, canonical/cloud-init cloudinit/sources/), checked before
 * the generic ranges so a refusal names what the address is. IPv4-mapped, NAT64 and 6to4 forms
 * are judged as their IPv4 address (embeddedIpv4).
 * - 169.254.169.254: AWS EC2 IMDS, GCP, Azure IMDS, Oracle, DigitalOcean, Hetzner, OpenStack,
 *   Linode/Akamai, IBM, Huawei, Vultr, Exoscale, UpCloud (each one's cloud-init datasource).
 * - fd00:ec2::/32: AWS Nitro services over IPv6 — IMDS ::254, EKS Pod Identity ::23, DNS ::253,
 *   NTP ::123 (docs.aws.amazon.com/whitepapers/latest/ipv6-on-aws/supporting-amazon-vpc-services.html,
 *   docs.aws.amazon.com/eks/latest/userguide/pod-id-agent-setup.html).
 * - 169.254.170.23: AWS EKS Pod Identity agent (pod-id-agent-setup.html above).
 * - 169.254.170.2: AWS ECS task metadata and task-role credentials
 *   (docs.aws.amazon.com/AmazonECS/latest/developerguide/task-iam-roles.html).
 * - fd20:ce::254: GCP metadata server for IPv6-only VMs
 *   (cloud.google.com/compute/docs/metadata/querying-metadata).
 * - 168.63.129.16: Azure WireServer (learn.microsoft.com/azure/virtual-network/what-is-ip-address-168-63-129-16).
 * - 100.100.100.200 and fd00:100::100:200: Alibaba Cloud ECS (cloud-init DataSourceAliYun).
 * - 192.0.0.192: Oracle Cloud Infrastructure Classic; fd00:c1::a9fe:a9fe: OCI over IPv6
 *   (cloud-init DataSourceOracle).
 * - 169.254.42.42 and fd00:42::42: Scaleway (cloud-init DataSourceScaleway).
 * - fd00:a9fe:a9fe::1: Akamai/Linode over IPv6 (cloud-init DataSourceAkamai).
 * - 169.254.0.23: Tencent Cloud, metadata.tencentyun.com (intl.cloud.tencent.com/document/product/213/4934).
 * - fe80::a9fe:a9fe: OpenStack and Hetzner over IPv6 (link-local; cloud-init DataSourceOpenStack,
 *   DataSourceHetzner).
 * The reference tool refuses the same addresses outside link-local space.
 */
const METADATA: Array<[string, string]> = [
  ['169.254.169.254/32', 'instance metadata of AWS, GCP, Azure, Oracle, DigitalOcean, Hetzner, OpenStack and others'],
  ['169.254.170.2/32', 'AWS ECS task metadata and credentials'],
  ['169.254.170.23/32', 'AWS EKS Pod Identity'],
  ['169.254.42.42/32', 'Scaleway'],
  ['169.254.0.23/32', 'Tencent Cloud'],
  ['100.100.100.200/32', 'Alibaba Cloud'],
  ['168.63.129.16/32', 'Azure WireServer'],
  ['192.0.0.192/32', 'Oracle Cloud Classic'],
  ['fd00:ec2::/32', 'AWS over IPv6: IMDS, EKS Pod Identity, DNS, NTP'],
  ['fd20:ce::254/128', 'GCP over IPv6'],
  ['fd00:100::100:200/128', 'Alibaba Cloud over IPv6'],
  ['fd00:c1::a9fe:a9fe/128', 'Oracle Cloud over IPv6'],
  ['fd00:42::42/128', 'Scaleway over IPv6'],
  ['fd00:a9fe:a9fe::1/128', 'Akamai/Linode over IPv6'],
  ['fe80::a9fe:a9fe/128', 'OpenStack and Hetzner over IPv6'],
];

const BUILTIN: Array<[string, string, string?]> = [
  ['0.0.0.0/8', 'unspecified address'],
  ['127.0.0.0/8', 'loopback address'],
  ...METADATA.map(([c, of]): [string, string, string] => [c, 'cloud metadata address', of]),
  ['169.254.0.0/16', 'link-local address'],
  ['224.0.0.0/4', 'multicast address'],
  ['255.255.255.255/32', 'broadcast address'],
  ['240.0.0.0/4', 'reserved address'],
  ['::/128', 'unspecified address'],
  ['::1/128', 'loopback address'],
  ['fe80::/10', 'link-local address'],
  ['fec0::/10', 'site-local address'],
  ['ff00::/8', 'multicast address'],
];
// Parsed on first use, not at import: srt imports the proxy on every run, and the first isIP
// compiles node's IPv6 regex (several ms) even when the command never opens a connection.
let builtinNets: Array<{ net: { bytes: Uint8Array; bits: number }; why: string; of?: string }> | undefined;

/** The built-in range that forbids `addr` (already reduced to its IPv4 form if it has one): what it is and, for a metadata endpoint, whose. */
function builtinBlock(addr: string): { why: string; of?: string } | null {
  const b = ipBytes(addr);
  if (!b) return { why: 'not an IP address' };
  builtinNets ??= BUILTIN.map(([c, why, of]) => ({ net: parseCidr(c)!, why, ...(of ? { of } : {}) }));
  for (const n of builtinNets) if (inCidr(b, n.net)) return n;
  return null;
}

/** Why the built-in ranges forbid `addr` (already reduced to its IPv4 form if it has one), or null. */
export function builtinBlockReason(addr: string): string | null {
  return builtinBlock(addr)?.why ?? null;
}

/** Is `addr` (an IP address, any IPv6 form of an IPv4 one included) on the loopback? */
export function isLoopbackAddress(addr: string): boolean {
  return builtinBlockReason(embeddedIpv4(addr) ?? addr) === 'loopback address';
}

/**
 * The addresses and ranges the kernel's `local` routing table accepts as this host's
 * (`/proc/net/fib_trie`: every `host LOCAL` entry, with its prefix), e.g. `192.0.2.2` or
 * `10.5.0.0/16` (an AnyIP route). Unlike getifaddrs as Node reports it, this includes interfaces
 * that are up without a carrier (docker0 with no container, a bridge without ports).
 */
export function parseFibTrieLocal(text: string): string[] {
  const out = new Set<string>();
  let ip: string | undefined;
  for (const line of text.split('\n')) {
    const leaf = /^[\s|+-]*-- (\d+\.\d+\.\d+\.\d+)\s*$/.exec(line);
    if (leaf) { ip = leaf[1]; continue; }
    const entry = /^\s+\/(\d+) host LOCAL\b/.exec(line);
    if (entry && ip) out.add(entry[1] === '32' ? ip : `${ip}/${entry[1]}`);
  }
  return [...out];
}

/** Every IPv6 address configured on any interface, up or not (`/proc/net/if_inet6`). */
export function parseIfInet6(text: string): string[] {
  const out: string[] = [];
  for (const line of text.split('\n')) {
    const hex = /^([0-9a-f]{32})\s/.exec(line)?.[1];
    if (hex) out.push(hex.match(/.{4}/g)!.join(':'));
  }
  return out;
}

function readOr(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return '';
  }
}

/**
 * This host's own addresses (and local ranges): the kernel's view from /proc where there is one,
 * plus the interfaces Node reports. Read on every check (two small files): interfaces come and go.
 */
export function localAddresses(): string[] {
  const out = new Set<string>([...parseFibTrieLocal(readOr('/proc/net/fib_trie')), ...parseIfInet6(readOr('/proc/net/if_inet6'))]);
  for (const list of Object.values(networkInterfaces())) {
    for (const a of list ?? []) out.add(a.address.split('%')[0]!);
  }
  return [...out];
}

/** Is `addr` (already reduced to its IPv4 form if it has one) one of `locals` (addresses or CIDRs)? */
export function isOwnAddress(addr: string, locals: readonly string[]): boolean {
  const bytes = ipBytes(addr);
  if (!bytes) return false;
  return locals.some((own) => {
    const [a, len] = own.split('%')[0]!.split('/');
    const net = parseCidr(`${embeddedIpv4(a!) ?? a}${len !== undefined ? `/${len}` : ''}`);
    return net !== null && inCidr(bytes, net);
  });
}

export interface GuardOptions {
  network: Policy['network'];
  resolver: Resolver;
  /** Defaults to `localAddresses()`; a seam for unit tests. */
  localAddresses?: () => string[];
  /**
   * TEST ONLY: addresses the built-in ranges and own-address check do not apply to, so e2e tests
   * can map a test hostname to a loopback server. Never set from settings, environment or CLI;
   * deniedDomains literals and deniedResolvedAddresses still apply.
   */
  testOnlyExemptAddresses?: readonly string[];
}

/** Why `addr` must not be dialed on `port`, or null when it may. `explicitlyAllowed` (an IP-literal
 *  allow entry names it) skips the built-in ranges and own-address check, never the deny lists. */
export function addressBlockReason(
  addr: string,
  port: number,
  opts: Omit<GuardOptions, 'resolver'>,
  explicitlyAllowed = false,
): string | null {
  const v4 = isIP(addr) === 6 ? embeddedIpv4(addr) : null;
  const judged = v4 ?? addr;
  const bytes = ipBytes(judged);
  if (!bytes) return `"${addr}" is not an IP address`;
  const label = v4 ? `${addr} (${v4})` : addr;

  for (const r of opts.network.deniedDomains) {
    if (r.rule.ip === undefined || (r.rule.port !== undefined && r.rule.port !== port)) continue;
    const rb = ipBytes(r.rule.host);
    if (rb && sameBytes(rb, bytes)) return `${label} is denied by network.deniedDomains (${r.rule.text})`;
  }
  for (const cidr of opts.network.deniedResolvedAddresses) {
    const net = parseCidr(cidr);
    if (!net) return `invalid deniedResolvedAddresses entry "${cidr}"`; // fail closed
    if (inCidr(bytes, net)) return `${label} is in network.deniedResolvedAddresses (${cidr})`;
  }

  if (explicitlyAllowed) return null;
  const exempt = (opts.testOnlyExemptAddresses ?? []).some((e) => {
    const eb = ipBytes(e);
    return eb !== null && (sameBytes(eb, bytes) || sameBytes(eb, ipBytes(addr)!));
  });
  if (exempt) return null;
  const builtin = builtinBlock(judged);
  if (builtin?.why === 'loopback address') {
    const literal = decide(opts.network, judged, port);
    if (literal.allow && literal.explicit) return null;
    return `${label} is a loopback address (allow ${displayHostPort(judged, port)} to reach it)`;
  }
  if (builtin) return `${label} is a ${builtin.why}${builtin.of ? ` (${builtin.of})` : ''}`;
  if (isOwnAddress(judged, (opts.localAddresses ?? localAddresses)())) return `${label} is an address of this host`;
  return null;
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((v, i) => v === b[i]);
}

export type GuardResult = { ok: true; addresses: string[] } | { ok: false; reason: string };

/**
 * Resolve `host` once and keep the addresses that may be dialed, in resolver order.
 * `explicit`: an allow entry names this destination exactly — an IP literal, or `localhost`
 * (dialed at 127.0.0.1 then ::1, never resolved) — so the built-in ranges do not apply (an
 * allowed `127.0.0.1:3000` or `localhost:5432` works), the user's deny lists still do. Any other
 * IP literal is judged like a resolved address (an allow `*` does not open loopback).
 */
export async function guardDestination(
  host: { host: string; ip?: 4 | 6 },
  port: number,
  explicit: boolean,
  opts: GuardOptions,
): Promise<GuardResult> {
  const literal = host.ip !== undefined ? [host.host] : explicit ? namedLoopback(host.host) : undefined;
  if (literal) {
    const passed: string[] = [];
    const refused: string[] = [];
    for (const addr of literal) {
      const why = addressBlockReason(addr, port, opts, explicit);
      if (why) refused.push(why);
      else passed.push(addr);
    }
    return passed.length > 0 ? { ok: true, addresses: passed } : { ok: false, reason: `blocked address: ${refused.join('; ')}` };
  }
  let resolved: string[];
  try {
    resolved = await opts.resolver(host.host);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code ?? (e as Error).message;
    return { ok: false, reason: `cannot resolve ${host.host} (${code})` };
  }
  return judgeResolved(host.host, resolved, port, opts);
}

/** The addresses `host` resolved to (once, by the caller) that may be dialed, in resolver order. */
function judgeResolved(host: string, resolved: readonly string[], port: number, opts: Omit<GuardOptions, 'resolver'>): GuardResult {
  const passed: string[] = [];
  const refused: string[] = [];
  // This host's addresses are read once for all the answers of one resolution, when one needs them.
  const read = opts.localAddresses ?? localAddresses;
  let locals: string[] | undefined;
  const once = { ...opts, localAddresses: () => (locals ??= read()) };
  for (const addr of resolved) {
    const why = addressBlockReason(addr, port, once);
    if (why) refused.push(why);
    else if (!passed.includes(addr)) passed.push(addr);
  }
  if (passed.length > 0) return { ok: true, addresses: passed };
  if (refused.length === 0) return { ok: false, reason: `cannot resolve ${host} (no addresses)` };
  return { ok: false, reason: `resolves only to blocked addresses: ${refused.slice(0, 3).join('; ')}` };
}
