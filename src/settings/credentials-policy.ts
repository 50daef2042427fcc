// The credentials half of the policy, merged from the layers: entries naming the same variable or
// file are one credential (any deny wins, else the highest-precedence mask), AWS pairs by their
// variable names.

import type { AwsPair, CredentialMode, EnvCredential, FileCredential, InjectPlace, OnExtractNoMatch } from '../policy.js';
import { parseDomainEntry, type DomainRule } from '../proxy/domains.js';
import { SettingsError } from './errors.js';
import { SCOPE_ORDER, where, type Layer, type LayerMerge } from './layers.js';
import type { SettingsDocument } from './schema.js';

/** injectHosts use the allowedDomains grammar, canonicalised the same way (case, trailing dot,
 *  IDN, IPv6 spellings), so the proxy's comparison with the destination is exact. */
function injectHosts(m: LayerMerge, layer: Layer, key: string, hosts: string[] | undefined): DomainRule[] | undefined {
  if (!hosts) return undefined;
  const out = new Map<string, DomainRule>();
  hosts.forEach((h, i) => {
    const parsed = parseDomainEntry(h, 'allow', 'injectHosts');
    if (!parsed.ok) throw new SettingsError(`${where(layer.source, `${key}.injectHosts[${i}]`)}: ${parsed.error}`);
    if (parsed.warning) m.warnings.push(`${where(layer.source, `${key}.injectHosts[${i}]`)}: ${parsed.warning}`);
    for (const r of parsed.rules) out.set(r.text, r);
  });
  return [...out.values()];
}

/** Merge entries naming the same thing: any `deny` wins, else the highest-precedence `mask`. */
function pickCredential<C extends { entry: { mode: CredentialMode }; layer: Layer }>(m: LayerMerge, candidates: C[]): C {
  const rank = (layer: Layer) => SCOPE_ORDER.indexOf(layer.scope) * 1000 - m.layers.indexOf(layer);
  const sorted = [...candidates].sort((a, b) => rank(a.layer) - rank(b.layer));
  return sorted.find((c) => c.entry.mode === 'deny') ?? sorted[0]!;
}

export function envCredentials(m: LayerMerge): EnvCredential[] {
  const byName = new Map<string, Array<{ entry: NonNullable<NonNullable<SettingsDocument['credentials']>['envVars']>[number]; layer: Layer; i: number }>>();
  for (const layer of m.layers) {
    (layer.doc.credentials?.envVars ?? []).forEach((entry, i) => {
      byName.set(entry.name, [...(byName.get(entry.name) ?? []), { entry, layer, i }]);
    });
  }
  return [...byName.values()].map((candidates) => {
    const { entry, layer, i } = pickCredential(m, candidates);
    const out: EnvCredential = {
      name: entry.name,
      mode: entry.mode,
      injectInto: [...new Set<InjectPlace>(entry.injectInto ?? ['headers'])],
      onExtractNoMatch: (entry.onExtractNoMatch ?? 'warn') as OnExtractNoMatch,
      source: layer.source,
    };
    const hosts = injectHosts(m, layer, `credentials.envVars[${i}]`, entry.injectHosts);
    if (hosts) out.injectHosts = hosts;
    if (entry.source) out.sourceCommand = [...entry.source.command];
    if (entry.decode) out.decode = entry.decode;
    if (entry.maskClaims) out.maskClaims = [...entry.maskClaims];
    if (entry.extract !== undefined) out.extract = entry.extract;
    return out;
  });
}

export function fileCredentials(m: LayerMerge): FileCredential[] {
  type Entry = NonNullable<NonNullable<SettingsDocument['credentials']>['files']>[number];
  const byPath = new Map<string, Array<{ entry: Entry; layer: Layer; path: string; glob: boolean; i: number }>>();
  for (const layer of m.layers) {
    (layer.doc.credentials?.files ?? []).forEach((entry, i) => {
      const r = m.resolvePath(layer, `credentials.files[${i}].path`, entry.path);
      const id = `${r.glob}:${r.path}`;
      byPath.set(id, [...(byPath.get(id) ?? []), { entry, layer, path: r.path, glob: r.glob, i }]);
    });
  }
  return [...byPath.values()].map((candidates) => {
    const { entry, layer, path, glob, i } = pickCredential(m, candidates);
    const out: FileCredential = {
      path,
      glob,
      mode: entry.mode,
      injectInto: [...new Set<InjectPlace>(entry.injectInto ?? ['headers'])],
      onExtractNoMatch: (entry.onExtractNoMatch ?? 'warn') as OnExtractNoMatch,
      maskDuplicates: entry.maskDuplicates ?? false,
      source: layer.source,
    };
    if (entry.extract !== undefined) out.extract = entry.extract;
    const hosts = injectHosts(m, layer, `credentials.files[${i}]`, entry.injectHosts);
    if (hosts) out.injectHosts = hosts;
    if (entry.decode) out.decode = entry.decode;
    if (entry.maskClaims) out.maskClaims = [...entry.maskClaims];
    return out;
  });
}

export function awsPairs(m: LayerMerge): AwsPair[] {
  const out = new Map<string, AwsPair>();
  for (const layer of m.layers) {
    for (const p of layer.doc.credentials?.awsPairs ?? []) {
      const id = `${p.accessKeyIdVar}\0${p.secretAccessKeyVar}\0${p.sessionTokenVar ?? ''}`;
      if (out.has(id)) continue;
      const pair: AwsPair = { accessKeyIdVar: p.accessKeyIdVar, secretAccessKeyVar: p.secretAccessKeyVar, source: layer.source };
      if (p.sessionTokenVar !== undefined) pair.sessionTokenVar = p.sessionTokenVar;
      out.set(id, pair);
    }
  }
  return [...out.values()];
}
