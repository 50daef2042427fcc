// The network half of the policy, merged from the layers: domain lists (first entry wins, deny
// reasons by precedence), resolved-address denies, Unix sockets, exposed and forwarded ports,
// TLS termination and the files it reads.

import { isIP } from 'node:net';
import type { ExposedPort, Policy, SourcedDomain, TlsTerminate } from '../policy.js';
import type { DomainRule } from '../proxy/domains.js';
import { describeExpose, forwardedPorts, parseExposeEntry } from '../proxy/local-services.js';
import { SettingsError } from './errors.js';
import { label, where, type Layer, type LayerMerge } from './layers.js';
import type { SettingsDocument } from './schema.js';

/** Policy['network'], its scalars taken by precedence. */
export function networkPolicy(m: LayerMerge, managedDomainsOnly: boolean): Policy['network'] {
  const s = <T>(key: string, read: (doc: SettingsDocument) => T | undefined, fallback: T) => m.scalar(key, read, fallback);
  const network: Policy['network'] = {
    allowedDomains: domains(m, 'allow'),
    deniedDomains: domains(m, 'deny'),
    deniedDomainReasons: reasons(m),
    strictAllowlist: s('network.strictAllowlist', (d) => d.network?.strictAllowlist, true),
    allowManagedDomainsOnly: managedDomainsOnly,
    deniedResolvedAddresses: cidrs(m),
    allowUnixSockets: unixSockets(m),
    allowAllUnixSockets: s('network.allowAllUnixSockets', (d) => d.network?.allowAllUnixSockets, false),
    allowLocalBinding: s('network.allowLocalBinding', (d) => d.network?.allowLocalBinding, false),
    exposePorts: exposePorts(m),
  };
  const httpProxyPort = s<number | undefined>('network.httpProxyPort', (d) => d.network?.httpProxyPort, undefined);
  if (httpProxyPort !== undefined) network.httpProxyPort = httpProxyPort;
  const socksProxyPort = s<number | undefined>('network.socksProxyPort', (d) => d.network?.socksProxyPort, undefined);
  if (socksProxyPort !== undefined) network.socksProxyPort = socksProxyPort;
  const tls = tlsTerminate(m);
  if (tls) network.tlsTerminate = tls;
  checkLocalServices(network);
  return network;
}

function domains(m: LayerMerge, list: 'allow' | 'deny'): SourcedDomain[] {
  const key = list === 'allow' ? 'allowedDomains' : 'deniedDomains';
  const out = new Map<string, SourcedDomain>();
  for (const layer of m.layers) {
    (layer.doc.network?.[key] ?? []).forEach((entry, i) => {
      for (const rule of m.parseDomain(layer, `network.${key}[${i}]`, entry, list)) {
        if (!out.has(rule.text)) out.set(rule.text, { rule, source: layer.source, key: `network.${key}[${i}]` });
      }
    });
  }
  return [...out.values()];
}

function reasons(m: LayerMerge): Record<string, string> {
  const out: Record<string, string> = {};
  for (const layer of m.byPrecedence()) {
    for (const [entry, reason] of Object.entries(layer.doc.network?.deniedDomainReasons ?? {})) {
      const key = `network.deniedDomainReasons[${JSON.stringify(entry)}]`;
      for (const rule of m.parseDomain(layer, key, entry, 'deny')) {
        if (rule.text in out) continue;
        out[rule.text] = reason;
        m.sources[`network.deniedDomainReasons[${JSON.stringify(rule.text)}]`] = layer.source;
      }
    }
  }
  return out;
}

export function exposeEntry(layer: Layer, i: number, entry: number | string): ExposedPort[] {
  const parsed = parseExposeEntry(entry);
  if (typeof parsed === 'string') throw new SettingsError(`${where(layer.source, `network.exposePorts[${i}]`)}: ${parsed}`);
  return parsed.map((e) => ({ ...e, source: layer.source }));
}

/**
 * The union of every scope's exposePorts, one per host address:port; the same one exposed to
 * different sandbox ports is an error, except that an entry naming [::1] takes the ::1 of an
 * entry that named no address.
 */
function exposePorts(m: LayerMerge): ExposedPort[] {
  const out = new Map<string, ExposedPort>();
  for (const layer of m.layers) {
    (layer.doc.network?.exposePorts ?? []).forEach((entry, i) => {
      for (const e of exposeEntry(layer, i, entry)) {
        const key = `${e.hostAddress} ${e.hostPort}`;
        const seen = out.get(key);
        if (!seen || (seen.ifAvailable && !e.ifAvailable)) out.set(key, e);
        else if (seen.sandboxPort !== e.sandboxPort && !e.ifAvailable) {
          throw new SettingsError(`${where(layer.source, `network.exposePorts[${i}]`)}: ${describeExpose(e)} conflicts with ${describeExpose(seen)} (${label(seen.source)})`);
        }
      }
    });
  }
  return [...out.values()];
}

/** An exposed sandbox port that is also a forwarded one would relay the host to itself in a loop. */
function checkLocalServices(network: Policy['network']): void {
  for (const f of forwardedPorts(network)) {
    const e = network.exposePorts.find((x) => x.sandboxPort === f.port);
    if (e) {
      throw new SettingsError(
        `${label(e.source)}: network.exposePorts: ${describeExpose(e)}: sandbox port ${f.port} is already forwarded from the host by network.allowedDomains "${f.rule}" (${label(f.source)}); use another port`,
      );
    }
  }
}

export function cidr(layer: Layer, i: number, entry: string): string {
  const m = /^([^/]+)(?:\/(\d{1,3}))?$/.exec(entry.trim());
  const family = m ? isIP(m[1]!) : 0;
  const max = family === 6 ? 128 : 32;
  const prefix = m?.[2] === undefined ? max : Number(m[2]);
  if (!m || family === 0 || prefix > max || (m[2] !== undefined && /^0\d/.test(m[2]))) {
    throw new SettingsError(
      `${where(layer.source, `network.deniedResolvedAddresses[${i}]`)}: "${entry}" is not an IP address or CIDR (e.g. 10.0.0.0/8, fd00::/8)`,
    );
  }
  return `${m[1]!.toLowerCase()}/${prefix}`;
}

function cidrs(m: LayerMerge): string[] {
  const out = new Set<string>();
  for (const layer of m.layers) {
    (layer.doc.network?.deniedResolvedAddresses ?? []).forEach((entry, i) => out.add(cidr(layer, i, entry)));
  }
  return [...out];
}

function tlsTerminate(m: LayerMerge): TlsTerminate | undefined {
  const withTls = m.byPrecedence().filter((l) => l.doc.network?.tlsTerminate !== undefined);
  const top = withTls[0];
  if (!top) return undefined;
  m.sources['network.tlsTerminate'] = top.source;
  const abs = (layer: Layer, key: string, p: string) => m.resolvePath(layer, key, { path: p, literal: true }).path;
  const ca = withTls.find((l) => l.doc.network!.tlsTerminate!.caCertPath !== undefined);
  const excludeDomains = new Map<string, DomainRule>();
  const extra = new Set<string>();
  for (const layer of m.layers.filter((l) => withTls.includes(l))) {
    const t = layer.doc.network!.tlsTerminate!;
    (t.excludeDomains ?? []).forEach((entry, i) => {
      for (const rule of m.parseDomain(layer, `network.tlsTerminate.excludeDomains[${i}]`, entry, 'allow')) {
        if (!excludeDomains.has(rule.text)) excludeDomains.set(rule.text, rule);
      }
    });
    (t.extraCaCertPaths ?? []).forEach((p, i) => extra.add(abs(layer, `network.tlsTerminate.extraCaCertPaths[${i}]`, p)));
  }
  const result: TlsTerminate = {
    excludeDomains: [...excludeDomains.values()],
    extraCaCertPaths: [...extra],
    maxTunnels: m.scalar('network.tlsTerminate.maxTunnels', (d) => d.network?.tlsTerminate?.maxTunnels, 256),
    handshakeTimeoutMs: m.scalar('network.tlsTerminate.handshakeTimeoutMs', (d) => d.network?.tlsTerminate?.handshakeTimeoutMs, 10000),
    source: top.source,
  };
  if (ca) {
    const t = ca.doc.network!.tlsTerminate!;
    result.caCertPath = abs(ca, 'network.tlsTerminate.caCertPath', t.caCertPath!);
    result.caKeyPath = abs(ca, 'network.tlsTerminate.caKeyPath', t.caKeyPath!);
    m.sources['network.tlsTerminate.caCertPath'] = ca.source;
  }
  return result;
}

/**
 * The CA key never enters the sandbox: it joins the credential deny set (unreadable inside, even
 * with filesystem.disabled), and no TLS file srt reads at start (CA certificate and key, extra
 * CAs) may be rewritten from inside, where a command could plant its own CA for the next run.
 */
export function protectTlsFiles(m: LayerMerge, policy: Policy, tls: TlsTerminate): void {
  const source = m.sources['network.tlsTerminate.caCertPath'] ?? tls.source;
  if (tls.caKeyPath && !policy.credentials.files.some((f) => f.path === tls.caKeyPath && f.mode === 'deny' && !f.glob)) {
    policy.credentials.files = policy.credentials.files.filter((f) => f.glob || f.path !== tls.caKeyPath);
    policy.credentials.files.push({ path: tls.caKeyPath, glob: false, mode: 'deny', injectInto: ['headers'], onExtractNoMatch: 'warn', maskDuplicates: false, source });
  }
  for (const path of [tls.caCertPath, tls.caKeyPath, ...tls.extraCaCertPaths]) {
    if (path && !policy.filesystem.denyWrite.some((r) => r.path === path && !r.glob)) {
      policy.filesystem.denyWrite.push({ path, glob: false, original: path, source: path === tls.caCertPath || path === tls.caKeyPath ? source : tls.source });
    }
  }
}

function unixSockets(m: LayerMerge): string[] {
  const out = new Set<string>();
  for (const layer of m.layers) {
    (layer.doc.network?.allowUnixSockets ?? []).forEach((p, i) =>
      out.add(m.resolvePath(layer, `network.allowUnixSockets[${i}]`, { path: p, literal: true }).path),
    );
  }
  return [...out];
}
