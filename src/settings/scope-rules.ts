// What each settings scope may set (SPEC §2.4), applied to the layers before they are merged:
// reference-tool keys srt does not implement, managed-only keys, what a repository's file may not
// weaken, its allow entries held back until approved, presets expanded into layers of their own,
// and managed settings that make only their own domain or read lists count.

import { globBase, isWithin } from '../glob.js';
import { shellQuote } from '../shell.js';
import { builtinBlockReason, isOwnAddress, localAddresses } from '../proxy/address-guard.js';
import { embeddedIpv4 } from '../proxy/ip.js';
import type { DomainRule } from '../proxy/domains.js';
import { drop, get, label, type Layer, type LayerMerge } from './layers.js';
import { PRESETS } from './presets.js';
import { UNSUPPORTED_REFERENCE_KEYS, type PathEntry, type SettingsDocument } from './schema.js';

// Project/local files may narrow the policy but not weaken it (SPEC §2.4): key → what it would do.
const WEAKENING: Array<{ path: string[]; weakens: (v: unknown) => boolean; what: string }> = [
  { path: ['filesystem', 'disabled'], weakens: (v) => v === true, what: 'turn filesystem isolation off' },
  { path: ['credentials', 'awsPairs'], weakens: (v) => Array.isArray(v) && v.length > 0, what: 'send real AWS credentials out of the sandbox' },
  { path: ['credentials', 'sigv4'], weakens: (v) => v !== undefined, what: 'change how requests signed with masked AWS credentials are forwarded' },
  { path: ['credentials', 'allowPlaintextInject'], weakens: (v) => v === true, what: 'send real secrets over plain HTTP' },
  { path: ['network', 'tlsTerminate'], weakens: (v) => v !== undefined, what: 'configure TLS termination' },
  { path: ['network', 'strictAllowlist'], weakens: (v) => v === false, what: 'turn the strict domain allowlist off' },
  { path: ['network', 'allowAllUnixSockets'], weakens: (v) => v === true, what: 'allow Unix sockets' },
  { path: ['network', 'allowUnixSockets'], weakens: (v) => Array.isArray(v) && v.length > 0, what: 'allow Unix sockets' },
  { path: ['network', 'httpProxyPort'], weakens: (v) => v !== undefined, what: "replace srt's filtering proxy" },
  { path: ['network', 'socksProxyPort'], weakens: (v) => v !== undefined, what: "replace srt's filtering proxy" },
  { path: ['network', 'exposePorts'], weakens: (v) => Array.isArray(v) && v.length > 0, what: 'make ports inside the sandbox reachable from the host' },
  { path: ['enableWeakerNestedSandbox'], weakens: (v) => v === true, what: 'weaken the sandbox for nested containers' },
  { path: ['allowNestedUserNamespaces'], weakens: (v) => v === true, what: 'allow user namespaces inside the sandbox' },
  { path: ['allowAppleEvents'], weakens: (v) => v === true, what: 'allow Apple Events' },
  { path: ['enableWeakerNetworkIsolation'], weakens: (v) => v === true, what: 'weaken network isolation' },
  // Beyond the SPEC §2.4 list, for the same reason: each of these loosens a protection.
  { path: ['network', 'allowLocalBinding'], weakens: (v) => v === true, what: 'allow binding local ports' },
  { path: ['allowPty'], weakens: (v) => v === true, what: 'allow pseudo-terminals' },
];

/** The allow lists of a repository's file that wait for approval (SPEC §2.4). */
const ALLOW_LISTS: string[][] = [
  ['network', 'allowedDomains'],
  ['filesystem', 'allowWrite'],
  ['filesystem', 'allowRead'],
  ['network', 'tlsTerminate', 'excludeDomains'],
];

function entryText(entry: PathEntry): string {
  return typeof entry === 'string' ? entry : entry.path;
}

const MAC_ONLY: Array<[string[], (v: unknown) => boolean]> = [
  [['allowPty'], (v) => v === true], [['allowAppleEvents'], (v) => v === true], [['enableWeakerNetworkIsolation'], (v) => v === true],
  [['network', 'allowLocalBinding'], (v) => v === true], [['network', 'allowUnixSockets'], (v) => Array.isArray(v) && v.length > 0],
];

const MANAGED_ONLY: string[][] = [
  ['network', 'allowManagedDomainsOnly'],
  ['filesystem', 'allowManagedReadPathsOnly'],
];

/** Drops from each layer what its scope may not set (one ignored entry and warning per key). */
export function applyScopeRules(m: LayerMerge): { managedDomainsOnly: boolean; managedReadOnly: boolean } {
  const managed = m.layers.filter((l) => l.scope === 'managed');
  const managedFirst = [...managed].reverse();

  // Keys of the reference tool srt does not implement: each listed by srt config, one line per file.
  for (const layer of m.layers) {
    let n = 0;
    for (const [key, why] of Object.entries(UNSUPPORTED_REFERENCE_KEYS)) {
      const path = key.split('.');
      if (get(layer.doc, path) === undefined) continue;
      drop(layer.doc, path);
      m.ignored.push({ key, source: layer.source, reason: `a reference-tool key srt does not implement (${why})` });
      n++;
    }
    // macOS-only keys do nothing on Linux, for the reference tool as for srt: in its files they
    // are counted here instead of warned about on every run (a --platform macos dry run on
    // Linux then goes without them).
    if (layer.reference && (m.ctx.platform ?? process.platform) !== 'darwin') {
      for (const [path, set] of MAC_ONLY) {
        if (!set(get(layer.doc, path))) continue;
        drop(layer.doc, path);
        m.ignored.push({ key: path.join('.'), source: layer.source, reason: 'only has an effect on macOS (the reference tool ignores it on Linux too)' });
        n++;
      }
    }
    if (n > 0) m.notices.push(`${label(layer.source)}: ${n === 1 ? '1 reference-tool key' : `${n} reference-tool keys`} handled differently (srt config lists them)`);
    delete (layer.doc as Record<string, unknown>).$schema;
  }

  const managedConfiguresFs = managed.some(
    (l) => l.doc.filesystem !== undefined || (l.doc.credentials?.files ?? []).some((f) => f.mode === 'deny'),
  );

  for (const layer of m.layers) {
    if (layer.scope === 'managed') continue;
    for (const path of MANAGED_ONLY) {
      if (get(layer.doc, path) === undefined) continue;
      drop(layer.doc, path);
      m.ignore(layer, path.join('.'), 'only managed settings may set this');
    }
    if (layer.scope === 'project' || layer.scope === 'local') {
      const who = `${layer.scope} settings (which come with the repository)`;
      if (layer.doc.presets?.length) {
        drop(layer.doc, ['presets']);
        m.ignore(layer, 'presets', `${who} may not name presets: they come from your own settings only (user, --with, managed)`);
      }
      depthFloor(m, layer, who);
      for (const rule of WEAKENING) {
        if (!rule.weakens(get(layer.doc, rule.path))) continue;
        drop(layer.doc, rule.path);
        m.ignore(layer, rule.path.join('.'), `${who} may not ${rule.what}`);
      }
      for (const list of ['envVars', 'files'] as const) {
        const entries = layer.doc.credentials?.[list];
        if (!entries) continue;
        const kept = entries.filter((entry, i) => {
          if (entry.mode !== 'mask') return true;
          const name = 'name' in entry ? entry.name : typeof entry.path === 'string' ? entry.path : entry.path.path;
          const command = 'source' in entry && entry.source ? ', nor run a command outside it (source)' : '';
          m.ignore(layer, `credentials.${list}[${i}]`, `${who} may not let a real secret leave the sandbox (${name}, mode "mask")${command}`);
          return false;
        });
        (layer.doc.credentials as Record<string, unknown>)[list] = kept;
      }
      if (layer.approval === 'outside-root') keepDenyOnly(m, layer);
      else if (layer.approval === 'unapproved') holdBackAllows(m, layer);
      else dropUntrustableAllows(m, layer, who);
    }
    if (managedConfiguresFs && layer.doc.filesystem?.disabled === true) {
      drop(layer.doc, ['filesystem', 'disabled']);
      m.ignore(layer, 'filesystem.disabled', 'managed settings configure the filesystem, so only they may set filesystem.disabled');
    }
  }

  expandPresets(m);
  const managedDomainsOnly = m.scalar('network.allowManagedDomainsOnly', (d) => d.network?.allowManagedDomainsOnly, false, managedFirst);
  const managedReadOnly = m.scalar('filesystem.allowManagedReadPathsOnly', (d) => d.filesystem?.allowManagedReadPathsOnly, false, managedFirst);
  for (const layer of m.layers) {
    if (layer.scope === 'managed') continue;
    if (managedDomainsOnly && layer.doc.network?.allowedDomains?.length) {
      drop(layer.doc, ['network', 'allowedDomains']);
      m.ignore(layer, 'network.allowedDomains', 'managed settings set allowManagedDomainsOnly, so only managed allowedDomains count');
    }
    if (managedReadOnly && layer.doc.filesystem?.allowRead?.length) {
      drop(layer.doc, ['filesystem', 'allowRead']);
      m.ignore(layer, 'filesystem.allowRead', 'managed settings set allowManagedReadPathsOnly, so only managed allowRead entries count');
    }
  }
  return { managedDomainsOnly, managedReadOnly };
}

/**
 * Each preset a layer names becomes a layer of its own right after it (same scope, the preset
 * in its source), so precedence, managed-only rules and `srt config` treat its entries like any
 * other entry of that scope.
 */
function expandPresets(m: LayerMerge): void {
  for (let i = 0; i < m.layers.length; i++) {
    const layer = m.layers[i]!;
    const names = [...new Set(layer.doc.presets ?? [])];
    delete layer.doc.presets;
    const added: Layer[] = names.map((name) => {
      const p = PRESETS[name]!;
      return {
        scope: layer.scope, source: { ...layer.source, preset: name }, base: m.ctx.home, approval: 'approved',
        doc: { network: { allowedDomains: [...p.allowedDomains] }, filesystem: { allowWrite: [...p.caches], denyWrite: [...p.protect] } },
      };
    });
    m.layers.splice(i + 1, 0, ...added);
    i += added.length;
  }
}

/** A repository's file may raise mandatoryDenySearchDepth, never lower it below what the user
 *  settings (or the default) would give. */
function depthFloor(m: LayerMerge, layer: Layer, who: string): void {
  const v = layer.doc.mandatoryDenySearchDepth;
  if (v === undefined) return;
  const users = m.layers.filter((l) => l.scope === 'user' && l.doc.mandatoryDenySearchDepth !== undefined);
  const floor = Math.max(3, users.at(-1)?.doc.mandatoryDenySearchDepth ?? 3);
  if (v >= floor) return;
  drop(layer.doc, ['mandatoryDenySearchDepth']);
  m.ignore(layer, 'mandatoryDenySearchDepth', `${who} may not search fewer levels for protected paths than ${floor}`);
}

/** Until the user approves the file's content, its allow entries are held back (SPEC §2.4). */
function holdBackAllows(m: LayerMerge, layer: Layer): void {
  const file = layer.source.file ?? label(layer.source);
  let held = 0;
  for (const path of ALLOW_LISTS) {
    const list = get(layer.doc, path);
    if (!Array.isArray(list) || list.length === 0) continue;
    list.forEach((entry: PathEntry, i) => {
      m.ignored.push({
        key: `${path.join('.')}[${i}]`, value: entryText(entry), source: layer.source,
        reason: `not approved: allow entries of a repository's settings file apply once you approve it (srt trust ${shellQuote(file)})`,
      });
      held++;
    });
    drop(layer.doc, path);
  }
  if (held > 0) m.warnings.push(`${file}: its allow entries are not applied until you approve them: srt trust ${shellQuote(file)}`);
}

/** A project file of another directory than the root: its deny entries only. */
function keepDenyOnly(m: LayerMerge, layer: Layer): void {
  const why = `only the deny entries of a settings file outside the project root (${m.ctx.root}) apply`;
  const d = layer.doc;
  const kept: SettingsDocument = {};
  const keep = <K extends string>(section: Record<string, unknown> | undefined, keys: readonly K[], prefix: string, into: Record<string, unknown>) => {
    for (const [k, v] of Object.entries(section ?? {})) {
      if ((keys as readonly string[]).includes(k)) into[k] = v;
      else m.ignored.push({ key: `${prefix}${k}`, source: layer.source, reason: why });
    }
  };
  const network: Record<string, unknown> = {};
  const filesystem: Record<string, unknown> = {};
  const credentials: Record<string, unknown> = {};
  keep(d.network, ['deniedDomains', 'deniedDomainReasons', 'deniedResolvedAddresses'], 'network.', network);
  keep(d.filesystem, ['denyRead', 'denyWrite'], 'filesystem.', filesystem);
  keep(d.credentials, ['envVars', 'files'], 'credentials.', credentials);
  for (const k of Object.keys(d)) {
    if (k !== 'network' && k !== 'filesystem' && k !== 'credentials') m.ignored.push({ key: k, source: layer.source, reason: why });
  }
  if (d.network) kept.network = network;
  if (d.filesystem) kept.filesystem = filesystem;
  if (d.credentials) kept.credentials = credentials; // mask entries were dropped already
  layer.doc = kept;
}

/**
 * Even approved, a repository's file may not make paths outside the project root writable, nor
 * open the host's loopback, link-local/metadata or own addresses (SPEC §2.4): only managed, cli
 * and user settings may.
 */
function dropUntrustableAllows(m: LayerMerge, layer: Layer, who: string): void {
  const fs = layer.doc.filesystem;
  if (fs?.allowWrite) {
    fs.allowWrite = fs.allowWrite.filter((entry, i) => {
      const key = `filesystem.allowWrite[${i}]`;
      const r = m.resolvePath(layer, key, entry);
      if (isWithin(globBase(r.path), m.ctx.root)) return true;
      m.ignore(layer, key, `${who} may only make paths inside the project root ${m.ctx.root} writable (${r.original})`, r.original);
      return false;
    });
  }
  const net = layer.doc.network;
  if (net?.allowedDomains) {
    net.allowedDomains = net.allowedDomains.filter((entry, i) => {
      const key = `network.allowedDomains[${i}]`;
      const guarded = m.parseDomain(layer, key, entry, 'allow', true).map((r) => guardedReason(m, r)).find((w) => w !== null);
      if (!guarded) return true;
      m.ignore(layer, key, `${who} may not open ${guarded} (${entry}); only managed, cli and user settings may`, entry);
      return false;
    });
  }
}

/** Why an allow rule names the host's loopback, a link-local/metadata address or one of its own addresses. */
function guardedReason(m: LayerMerge, rule: DomainRule): string | null {
  if (rule.kind === 'host' && (rule.host === 'localhost' || rule.host.endsWith('.localhost'))) return "the host's loopback";
  if (rule.ip === undefined) return null;
  const judged = (rule.ip === 6 ? embeddedIpv4(rule.host) : null) ?? rule.host;
  const builtin = builtinBlockReason(judged);
  if (builtin) return `a ${builtin}`;
  return isOwnAddress(judged, (m.ctx.localAddresses ?? localAddresses)()) ? 'an address of this host' : null;
}
