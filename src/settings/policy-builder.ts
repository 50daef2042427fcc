// Settings layers → the one Policy (SPEC §2.3, §2.4). Three steps: validate and normalise each
// layer (paths absolute, domains parsed), drop what a scope may not set (one warning per key),
// then merge by scope precedence (scalars) and union (lists), where deny entries only add.

import { globBase, globToRegExp, isGlob, isWithin } from '../glob.js';
import { shellQuote } from '../shell.js';
import { isIP } from 'node:net';
import { isAbsolute, join, resolve } from 'node:path';
import type {
  AwsPair,
  CredentialMode,
  EnvCredential,
  ExposedPort,
  FileCredential,
  IgnoredEntry,
  InjectPlace,
  OnExtractNoMatch,
  PathRule,
  Policy,
  SigV4Handling,
  MintHandling,
  Source,
  SourcedDomain,
  TlsTerminate,
} from '../policy.js';
import { builtinBlockReason, embeddedIpv4, isOwnAddress, localAddresses } from '../proxy/address-guard.js';
import { parseDomainEntry, type DomainRule } from '../proxy/domains.js';
import { describeExpose, forwardedPorts, forwardListenAddresses, parseExposeEntry, srtPortUse } from '../proxy/local-services.js';
import { SettingsError } from './errors.js';
import type { FileScope } from './files.js';
import { PRESETS } from './presets.js';
import { UNSUPPORTED_REFERENCE_KEYS, validateSettings, type PathEntry, type SettingsDocument } from './schema.js';

/** One settings document with where it came from. */
export interface SettingsLayer {
  scope: FileScope;
  /** Absolute path of the file, for messages and sources. */
  file?: string;
  /** Directory relative paths resolve against (SPEC §2.3). */
  base: string;
  /** The settings object (already unwrapped from `{ "sandbox": ... }`); validated here. */
  settings: unknown;
  /**
   * Project and local layers only (SPEC §2.4): `approved` — the user approved this file's content
   * (`srt trust`), its allow entries apply; `unapproved` (the default: fail closed) — deny and
   * narrowing entries apply, allow entries are held back; `outside-root` — a file of a directory
   * between cwd and `/` other than the project root: only its deny entries apply.
   */
  approval?: 'approved' | 'unapproved' | 'outside-root';
  /** These exact bytes passed validation before (valid-cache.ts): not validated again. */
  knownValid?: true;
  /** A file written for the reference tool (files.ts isReferenceFile): its allowWrite is the
   *  whole list of writable paths, and the keys srt handles differently are summed up per file. */
  reference?: true;
}

/** The `--allow-domain`, `--allow-write`, `--deny-read`, `--with` flags (CLI scope, relative to cwd). */
export interface CliFlags {
  allowDomain?: string[];
  allowWrite?: string[];
  denyRead?: string[];
  /** Toolchain presets (names checked by the caller). */
  with?: string[];
}

export interface PolicyContext {
  /** Absolute, symlinks resolved. */
  cwd: string;
  home: string;
  /** Git work-tree top holding cwd, else cwd. */
  root: string;
  /** This host's own addresses, which project/local IP-literal allow entries may not name
   *  (default: the interfaces' addresses). */
  localAddresses?: () => string[];
  /** Default: this host's (`process.platform`). */
  platform?: NodeJS.Platform;
}

export interface PolicyBuild {
  policy: Policy;
  /** Source of every scalar (dotted key, e.g. `network.strictAllowlist`) and every
   *  deniedDomainReasons entry (`network.deniedDomainReasons["github.com:22"]`). */
  sources: Record<string, Source>;
}

export const SCOPE_ORDER: readonly FileScope[] = ['managed', 'cli', 'local', 'project', 'user'];

const DEFAULT: Source = { scope: 'default' };

interface Layer {
  scope: FileScope;
  source: Source;
  base: string;
  doc: SettingsDocument;
  approval: NonNullable<SettingsLayer['approval']>;
  reference?: true;
}

/** Build the policy from layers (any order; stable within a scope, a later layer wins). */
export function buildPolicy(ctx: PolicyContext, layers: SettingsLayer[], flags: CliFlags = {}): Policy {
  return buildPolicyWithSources(ctx, layers, flags).policy;
}

export function buildPolicyWithSources(ctx: PolicyContext, input: SettingsLayer[], flags: CliFlags = {}): PolicyBuild {
  const layers: Layer[] = input.map((l) => {
    const source: Source = { scope: l.scope };
    if (l.file !== undefined) source.file = l.file;
    if (l.approval === 'outside-root') source.outsideRoot = true;
    const where = l.file ?? `${l.scope} settings`;
    const repoScope = l.scope === 'project' || l.scope === 'local';
    return {
      scope: l.scope, source, base: l.base,
      doc: structuredClone(l.knownValid ? l.settings as SettingsDocument : validateSettings(l.settings, where)),
      approval: repoScope ? l.approval ?? 'unapproved' : 'approved',
      ...(l.reference ? { reference: true as const } : {}),
    };
  });
  const flagLayer = (flag: string, doc: SettingsDocument): Layer => ({ scope: 'cli', source: { scope: 'cli', flag }, base: ctx.cwd, doc, approval: 'approved' });
  if (flags.allowDomain?.length) layers.push(flagLayer('--allow-domain', { network: { allowedDomains: [...flags.allowDomain] } }));
  if (flags.allowWrite?.length) layers.push(flagLayer('--allow-write', { filesystem: { allowWrite: [...flags.allowWrite] } }));
  if (flags.denyRead?.length) layers.push(flagLayer('--deny-read', { filesystem: { denyRead: [...flags.denyRead] } }));
  if (flags.with?.length) layers.push(flagLayer('--with', { presets: [...flags.with] }));

  // Scope order, stable within a scope.
  const ordered = SCOPE_ORDER.flatMap((scope) => layers.filter((l) => l.scope === scope));
  return new Builder(ctx, ordered).build();
}

function label(source: Source): string {
  return source.file ?? source.flag ?? `${source.scope} settings`;
}

function where(source: Source, key: string): string {
  // A flag has no key path worth showing: `--allow-domain: invalid domain entry "x"`.
  return source.flag !== undefined ? source.flag : `${label(source)}: ${key}`;
}

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

/** A suffix under which anyone can register names: a single label (`com`, `io`) or a country's
 *  usual second level (`co.uk`, `com.au`). A heuristic, not the Public Suffix List. */
function isPublicSuffix(host: string): boolean {
  return !host.includes('.') || /^(co|com|org|net|ac|gov|edu|ne|or|go)\.[a-z]{2}$/.test(host);
}

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

function get(doc: SettingsDocument, path: string[]): unknown {
  let v: unknown = doc;
  for (const p of path) {
    if (v === null || typeof v !== 'object') return undefined;
    v = (v as Record<string, unknown>)[p];
  }
  return v;
}

function drop(doc: SettingsDocument, path: string[]): void {
  const parent = get(doc, path.slice(0, -1));
  if (parent && typeof parent === 'object') delete (parent as Record<string, unknown>)[path[path.length - 1]!];
}

class Builder {
  private readonly warnings: string[] = [];
  private readonly notices: string[] = [];
  private readonly ignored: IgnoredEntry[] = [];
  private readonly sources: Record<string, Source> = {};

  constructor(
    private readonly ctx: PolicyContext,
    /** Scope order: managed first, user last; within a scope in load order. */
    private readonly layers: Layer[],
  ) {}

  private ignore(layer: Layer, key: string, reason: string, value?: string): void {
    this.ignored.push({ key, ...(value !== undefined ? { value } : {}), source: layer.source, reason });
    this.warnings.push(`${label(layer.source)}: ${key}: ignored — ${reason}`);
  }

  /** Layers from the highest precedence down (managed; within a scope the last loaded first). */
  private byPrecedence(): Layer[] {
    return SCOPE_ORDER.flatMap((scope) => this.layers.filter((l) => l.scope === scope).reverse());
  }

  private scalar<T>(key: string, read: (doc: SettingsDocument) => T | undefined, fallback: T, layers = this.byPrecedence()): T {
    for (const layer of layers) {
      const v = read(layer.doc);
      if (v !== undefined) {
        this.sources[key] = layer.source;
        return v;
      }
    }
    this.sources[key] = DEFAULT;
    return fallback;
  }

  private applyTrust(): { managedDomainsOnly: boolean; managedReadOnly: boolean } {
    const managed = this.layers.filter((l) => l.scope === 'managed');
    const managedFirst = [...managed].reverse();

    // Keys of the reference tool srt does not implement: each listed by srt config, one line per file.
    for (const layer of this.layers) {
      let n = 0;
      for (const [key, why] of Object.entries(UNSUPPORTED_REFERENCE_KEYS)) {
        const path = key.split('.');
        if (get(layer.doc, path) === undefined) continue;
        drop(layer.doc, path);
        this.ignored.push({ key, source: layer.source, reason: `a reference-tool key srt does not implement (${why})` });
        n++;
      }
      // macOS-only keys do nothing on Linux, for the reference tool as for srt: in its files they
      // are counted here instead of warned about on every run (a --platform macos dry run on
      // Linux then goes without them).
      if (layer.reference && (this.ctx.platform ?? process.platform) !== 'darwin') {
        for (const [path, set] of MAC_ONLY) {
          if (!set(get(layer.doc, path))) continue;
          drop(layer.doc, path);
          this.ignored.push({ key: path.join('.'), source: layer.source, reason: 'only has an effect on macOS (the reference tool ignores it on Linux too)' });
          n++;
        }
      }
      if (n > 0) this.notices.push(`${label(layer.source)}: ${n === 1 ? '1 reference-tool key' : `${n} reference-tool keys`} handled differently (srt config lists them)`);
      delete (layer.doc as Record<string, unknown>).$schema;
    }

    const managedConfiguresFs = managed.some(
      (l) => l.doc.filesystem !== undefined || (l.doc.credentials?.files ?? []).some((f) => f.mode === 'deny'),
    );

    for (const layer of this.layers) {
      if (layer.scope === 'managed') continue;
      for (const path of MANAGED_ONLY) {
        if (get(layer.doc, path) === undefined) continue;
        drop(layer.doc, path);
        this.ignore(layer, path.join('.'), 'only managed settings may set this');
      }
      if (layer.scope === 'project' || layer.scope === 'local') {
        const who = `${layer.scope} settings (which come with the repository)`;
        if (layer.doc.presets?.length) {
          drop(layer.doc, ['presets']);
          this.ignore(layer, 'presets', `${who} may not name presets: they come from your own settings only (user, --with, managed)`);
        }
        this.depthFloor(layer, who);
        for (const rule of WEAKENING) {
          if (!rule.weakens(get(layer.doc, rule.path))) continue;
          drop(layer.doc, rule.path);
          this.ignore(layer, rule.path.join('.'), `${who} may not ${rule.what}`);
        }
        for (const list of ['envVars', 'files'] as const) {
          const entries = layer.doc.credentials?.[list];
          if (!entries) continue;
          const kept = entries.filter((entry, i) => {
            if (entry.mode !== 'mask') return true;
            const name = 'name' in entry ? entry.name : typeof entry.path === 'string' ? entry.path : entry.path.path;
            const command = 'source' in entry && entry.source ? ', nor run a command outside it (source)' : '';
            this.ignore(layer, `credentials.${list}[${i}]`, `${who} may not let a real secret leave the sandbox (${name}, mode "mask")${command}`);
            return false;
          });
          (layer.doc.credentials as Record<string, unknown>)[list] = kept;
        }
        if (layer.approval === 'outside-root') this.keepDenyOnly(layer);
        else if (layer.approval === 'unapproved') this.holdBackAllows(layer);
        else this.dropUntrustableAllows(layer, who);
      }
      if (managedConfiguresFs && layer.doc.filesystem?.disabled === true) {
        drop(layer.doc, ['filesystem', 'disabled']);
        this.ignore(layer, 'filesystem.disabled', 'managed settings configure the filesystem, so only they may set filesystem.disabled');
      }
    }

    this.expandPresets();
    const managedDomainsOnly = this.scalar('network.allowManagedDomainsOnly', (d) => d.network?.allowManagedDomainsOnly, false, managedFirst);
    const managedReadOnly = this.scalar('filesystem.allowManagedReadPathsOnly', (d) => d.filesystem?.allowManagedReadPathsOnly, false, managedFirst);
    for (const layer of this.layers) {
      if (layer.scope === 'managed') continue;
      if (managedDomainsOnly && layer.doc.network?.allowedDomains?.length) {
        drop(layer.doc, ['network', 'allowedDomains']);
        this.ignore(layer, 'network.allowedDomains', 'managed settings set allowManagedDomainsOnly, so only managed allowedDomains count');
      }
      if (managedReadOnly && layer.doc.filesystem?.allowRead?.length) {
        drop(layer.doc, ['filesystem', 'allowRead']);
        this.ignore(layer, 'filesystem.allowRead', 'managed settings set allowManagedReadPathsOnly, so only managed allowRead entries count');
      }
    }
    return { managedDomainsOnly, managedReadOnly };
  }

  /**
   * Each preset a layer names becomes a layer of its own right after it (same scope, the preset
   * in its source), so precedence, managed-only rules and `srt config` treat its entries like any
   * other entry of that scope.
   */
  private expandPresets(): void {
    for (let i = 0; i < this.layers.length; i++) {
      const layer = this.layers[i]!;
      const names = [...new Set(layer.doc.presets ?? [])];
      delete layer.doc.presets;
      const added: Layer[] = names.map((name) => {
        const p = PRESETS[name]!;
        return {
          scope: layer.scope, source: { ...layer.source, preset: name }, base: this.ctx.home, approval: 'approved',
          doc: { network: { allowedDomains: [...p.allowedDomains] }, filesystem: { allowWrite: [...p.caches], denyWrite: [...p.protect] } },
        };
      });
      this.layers.splice(i + 1, 0, ...added);
      i += added.length;
    }
  }

  /** A repository's file may raise mandatoryDenySearchDepth, never lower it below what the user
   *  settings (or the default) would give. */
  private depthFloor(layer: Layer, who: string): void {
    const v = layer.doc.mandatoryDenySearchDepth;
    if (v === undefined) return;
    const users = this.layers.filter((l) => l.scope === 'user' && l.doc.mandatoryDenySearchDepth !== undefined);
    const floor = Math.max(3, users.at(-1)?.doc.mandatoryDenySearchDepth ?? 3);
    if (v >= floor) return;
    drop(layer.doc, ['mandatoryDenySearchDepth']);
    this.ignore(layer, 'mandatoryDenySearchDepth', `${who} may not search fewer levels for protected paths than ${floor}`);
  }

  /** Until the user approves the file's content, its allow entries are held back (SPEC §2.4). */
  private holdBackAllows(layer: Layer): void {
    const file = layer.source.file ?? label(layer.source);
    let held = 0;
    for (const path of ALLOW_LISTS) {
      const list = get(layer.doc, path);
      if (!Array.isArray(list) || list.length === 0) continue;
      list.forEach((entry: PathEntry, i) => {
        this.ignored.push({
          key: `${path.join('.')}[${i}]`, value: entryText(entry), source: layer.source,
          reason: `not approved: allow entries of a repository's settings file apply once you approve it (srt trust ${shellQuote(file)})`,
        });
        held++;
      });
      drop(layer.doc, path);
    }
    if (held > 0) this.warnings.push(`${file}: its allow entries are not applied until you approve them: srt trust ${shellQuote(file)}`);
  }

  /** A project file of another directory than the root: its deny entries only. */
  private keepDenyOnly(layer: Layer): void {
    const why = `only the deny entries of a settings file outside the project root (${this.ctx.root}) apply`;
    const d = layer.doc;
    const kept: SettingsDocument = {};
    const keep = <K extends string>(section: Record<string, unknown> | undefined, keys: readonly K[], prefix: string, into: Record<string, unknown>) => {
      for (const [k, v] of Object.entries(section ?? {})) {
        if ((keys as readonly string[]).includes(k)) into[k] = v;
        else this.ignored.push({ key: `${prefix}${k}`, source: layer.source, reason: why });
      }
    };
    const network: Record<string, unknown> = {};
    const filesystem: Record<string, unknown> = {};
    const credentials: Record<string, unknown> = {};
    keep(d.network, ['deniedDomains', 'deniedDomainReasons', 'deniedResolvedAddresses'], 'network.', network);
    keep(d.filesystem, ['denyRead', 'denyWrite'], 'filesystem.', filesystem);
    keep(d.credentials, ['envVars', 'files'], 'credentials.', credentials);
    for (const k of Object.keys(d)) {
      if (k !== 'network' && k !== 'filesystem' && k !== 'credentials') this.ignored.push({ key: k, source: layer.source, reason: why });
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
  private dropUntrustableAllows(layer: Layer, who: string): void {
    const fs = layer.doc.filesystem;
    if (fs?.allowWrite) {
      fs.allowWrite = fs.allowWrite.filter((entry, i) => {
        const key = `filesystem.allowWrite[${i}]`;
        const r = this.resolvePath(layer, key, entry);
        if (isWithin(globBase(r.path), this.ctx.root)) return true;
        this.ignore(layer, key, `${who} may only make paths inside the project root ${this.ctx.root} writable (${r.original})`, r.original);
        return false;
      });
    }
    const net = layer.doc.network;
    if (net?.allowedDomains) {
      net.allowedDomains = net.allowedDomains.filter((entry, i) => {
        const key = `network.allowedDomains[${i}]`;
        const guarded = this.parseDomain(layer, key, entry, 'allow', true).map((r) => this.guardedReason(r)).find((w) => w !== null);
        if (!guarded) return true;
        this.ignore(layer, key, `${who} may not open ${guarded} (${entry}); only managed, cli and user settings may`, entry);
        return false;
      });
    }
  }

  /** Why an allow rule names the host's loopback, a link-local/metadata address or one of its own addresses. */
  private guardedReason(rule: DomainRule): string | null {
    if (rule.kind === 'host' && (rule.host === 'localhost' || rule.host.endsWith('.localhost'))) return "the host's loopback";
    if (rule.ip === undefined) return null;
    const judged = (rule.ip === 6 ? embeddedIpv4(rule.host) : null) ?? rule.host;
    const builtin = builtinBlockReason(judged);
    if (builtin) return `a ${builtin}`;
    return isOwnAddress(judged, (this.ctx.localAddresses ?? localAddresses)()) ? 'an address of this host' : null;
  }

  private resolvePath(layer: Layer, key: string, entry: PathEntry): { path: string; glob: boolean; original: string } {
    const original = typeof entry === 'string' ? entry : entry.path;
    const literal = typeof entry !== 'string' && entry.literal === true;
    let p = original;
    if (p === '~' || p.startsWith('~/')) p = join(this.ctx.home, p.slice(1));
    else if (p.startsWith('~')) throw new SettingsError(`${where(layer.source, key)}: "${original}": ~user paths are not supported; write the absolute path`);
    const path = isAbsolute(p) ? resolve(p) : resolve(layer.base, p);
    const glob = !literal && isGlob(original);
    if (glob) {
      try {
        globToRegExp(path);
      } catch (e) {
        throw new SettingsError(`${where(layer.source, key)}: "${original}": invalid glob (${(e as Error).message.replace(/^Invalid regular expression: /, '')})`);
      }
    }
    return { path, glob, original };
  }

  private pathRules(key: 'allowWrite' | 'denyWrite' | 'denyRead' | 'allowRead'): PathRule[] {
    const out = new Map<string, PathRule>();
    for (const layer of this.layers) {
      (layer.doc.filesystem?.[key] ?? []).forEach((entry, i) => {
        const r = this.resolvePath(layer, `filesystem.${key}[${i}]`, entry);
        const id = `${r.glob}:${r.path}`;
        if (!out.has(id)) out.set(id, { ...r, source: layer.source, key: `filesystem.${key}[${i}]`, ...(key === 'allowWrite' && layer.source.preset !== undefined ? { create: true as const } : {}) });
      });
    }
    return [...out.values()];
  }

  private domains(list: 'allow' | 'deny'): SourcedDomain[] {
    const key = list === 'allow' ? 'allowedDomains' : 'deniedDomains';
    const out = new Map<string, SourcedDomain>();
    for (const layer of this.layers) {
      (layer.doc.network?.[key] ?? []).forEach((entry, i) => {
        for (const rule of this.parseDomain(layer, `network.${key}[${i}]`, entry, list)) {
          if (!out.has(rule.text)) out.set(rule.text, { rule, source: layer.source, key: `network.${key}[${i}]` });
        }
      });
    }
    return [...out.values()];
  }

  private parseDomain(layer: Layer, key: string, entry: string, list: 'allow' | 'deny', quiet = false): DomainRule[] {
    const parsed = parseDomainEntry(entry, list);
    if (!parsed.ok) throw new SettingsError(`${where(layer.source, key)}: ${parsed.error}`);
    if (parsed.warning && !quiet) this.warnings.push(`${where(layer.source, key)}: ${parsed.warning}`);
    return parsed.rules;
  }

  /** A bad entry is an error even where a trust rule would drop it: a broken file stays broken. */
  private checkEntries(): void {
    for (const layer of this.layers) {
      const { network: n, filesystem: fs, credentials: c } = layer.doc;
      for (const [key, list] of [['allowedDomains', 'allow'], ['deniedDomains', 'deny']] as const) {
        (n?.[key] ?? []).forEach((e, i) => this.parseDomain(layer, `network.${key}[${i}]`, e, list, true));
      }
      (n?.allowedDomains ?? []).forEach((e, i) => {
        for (const rule of this.parseDomain(layer, `network.allowedDomains[${i}]`, e, 'allow', true)) {
          const use = forwardListenAddresses(rule) && srtPortUse(rule.port!);
          if (use) throw new SettingsError(`${where(layer.source, `network.allowedDomains[${i}]`)}: "${e}": a host loopback port is forwarded into the sandbox at the same port, and ${use}; this port cannot be forwarded`);
        }
      });
      (n?.exposePorts ?? []).forEach((e, i) => this.exposeEntry(layer, i, e));
      for (const e of Object.keys(n?.deniedDomainReasons ?? {})) {
        this.parseDomain(layer, `network.deniedDomainReasons[${JSON.stringify(e)}]`, e, 'deny', true);
      }
      (n?.tlsTerminate?.excludeDomains ?? []).forEach((e, i) => this.parseDomain(layer, `network.tlsTerminate.excludeDomains[${i}]`, e, 'allow', true));
      (n?.deniedResolvedAddresses ?? []).forEach((e, i) => this.cidr(layer, i, e));
      for (const key of ['allowWrite', 'denyWrite', 'denyRead', 'allowRead'] as const) {
        (fs?.[key] ?? []).forEach((e, i) => this.resolvePath(layer, `filesystem.${key}[${i}]`, e));
      }
      (c?.files ?? []).forEach((f, i) => this.resolvePath(layer, `credentials.files[${i}].path`, f.path));
    }
  }

  private exposeEntry(layer: Layer, i: number, entry: number | string): ExposedPort {
    const parsed = parseExposeEntry(entry);
    if (typeof parsed === 'string') throw new SettingsError(`${where(layer.source, `network.exposePorts[${i}]`)}: ${parsed}`);
    return { ...parsed, source: layer.source };
  }

  /** The union of every scope's exposePorts; a host address:port exposed twice to different sandbox ports is an error. */
  private exposePorts(): ExposedPort[] {
    const out = new Map<string, ExposedPort>();
    for (const layer of this.layers) {
      (layer.doc.network?.exposePorts ?? []).forEach((entry, i) => {
        const e = this.exposeEntry(layer, i, entry);
        const key = `${e.hostAddress} ${e.hostPort}`;
        const seen = out.get(key);
        if (!seen) out.set(key, e);
        else if (seen.sandboxPort !== e.sandboxPort) {
          throw new SettingsError(`${where(layer.source, `network.exposePorts[${i}]`)}: ${describeExpose(e)} conflicts with ${describeExpose(seen)} (${label(seen.source)})`);
        }
      });
    }
    return [...out.values()];
  }

  /** An exposed sandbox port that is also a forwarded one would relay the host to itself in a loop. */
  private checkLocalServices(network: Policy['network']): void {
    for (const f of forwardedPorts(network)) {
      const e = network.exposePorts.find((x) => x.sandboxPort === f.port);
      if (e) {
        throw new SettingsError(
          `${label(e.source)}: network.exposePorts: ${describeExpose(e)}: sandbox port ${f.port} is already forwarded from the host by network.allowedDomains "${f.rule}" (${label(f.source)}); use another port`,
        );
      }
    }
  }

  private cidr(layer: Layer, i: number, entry: string): string {
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

  private cidrs(): string[] {
    const out = new Set<string>();
    for (const layer of this.layers) {
      (layer.doc.network?.deniedResolvedAddresses ?? []).forEach((entry, i) => out.add(this.cidr(layer, i, entry)));
    }
    return [...out];
  }

  private reasons(): Record<string, string> {
    const out: Record<string, string> = {};
    for (const layer of this.byPrecedence()) {
      for (const [entry, reason] of Object.entries(layer.doc.network?.deniedDomainReasons ?? {})) {
        const key = `network.deniedDomainReasons[${JSON.stringify(entry)}]`;
        for (const rule of this.parseDomain(layer, key, entry, 'deny')) {
          if (rule.text in out) continue;
          out[rule.text] = reason;
          this.sources[`network.deniedDomainReasons[${JSON.stringify(rule.text)}]`] = layer.source;
        }
      }
    }
    return out;
  }

  private tlsTerminate(): TlsTerminate | undefined {
    const withTls = this.byPrecedence().filter((l) => l.doc.network?.tlsTerminate !== undefined);
    const top = withTls[0];
    if (!top) return undefined;
    this.sources['network.tlsTerminate'] = top.source;
    const abs = (layer: Layer, key: string, p: string) => this.resolvePath(layer, key, { path: p, literal: true }).path;
    const ca = withTls.find((l) => l.doc.network!.tlsTerminate!.caCertPath !== undefined);
    const excludeDomains = new Map<string, DomainRule>();
    const extra = new Set<string>();
    for (const layer of this.layers.filter((l) => withTls.includes(l))) {
      const t = layer.doc.network!.tlsTerminate!;
      (t.excludeDomains ?? []).forEach((entry, i) => {
        for (const rule of this.parseDomain(layer, `network.tlsTerminate.excludeDomains[${i}]`, entry, 'allow')) {
          if (!excludeDomains.has(rule.text)) excludeDomains.set(rule.text, rule);
        }
      });
      (t.extraCaCertPaths ?? []).forEach((p, i) => extra.add(abs(layer, `network.tlsTerminate.extraCaCertPaths[${i}]`, p)));
    }
    const result: TlsTerminate = {
      excludeDomains: [...excludeDomains.values()],
      extraCaCertPaths: [...extra],
      maxTunnels: this.scalar('network.tlsTerminate.maxTunnels', (d) => d.network?.tlsTerminate?.maxTunnels, 256),
      handshakeTimeoutMs: this.scalar('network.tlsTerminate.handshakeTimeoutMs', (d) => d.network?.tlsTerminate?.handshakeTimeoutMs, 10000),
      source: top.source,
    };
    if (ca) {
      const t = ca.doc.network!.tlsTerminate!;
      result.caCertPath = abs(ca, 'network.tlsTerminate.caCertPath', t.caCertPath!);
      result.caKeyPath = abs(ca, 'network.tlsTerminate.caKeyPath', t.caKeyPath!);
      this.sources['network.tlsTerminate.caCertPath'] = ca.source;
    }
    return result;
  }

  /**
   * The CA key never enters the sandbox: it joins the credential deny set (unreadable inside, even
   * with filesystem.disabled), and no TLS file srt reads at start (CA certificate and key, extra
   * CAs) may be rewritten from inside, where a command could plant its own CA for the next run.
   */
  private protectTlsFiles(policy: Policy, tls: TlsTerminate): void {
    const source = this.sources['network.tlsTerminate.caCertPath'] ?? tls.source;
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

  /** injectHosts use the allowedDomains grammar, canonicalised the same way (case, trailing dot,
   *  IDN, IPv6 spellings), so the proxy's comparison with the destination is exact. */
  private injectHosts(layer: Layer, key: string, hosts: string[] | undefined): DomainRule[] | undefined {
    if (!hosts) return undefined;
    const out = new Map<string, DomainRule>();
    hosts.forEach((h, i) => {
      const parsed = parseDomainEntry(h, 'allow', 'injectHosts');
      if (!parsed.ok) throw new SettingsError(`${where(layer.source, `${key}.injectHosts[${i}]`)}: ${parsed.error}`);
      if (parsed.warning) this.warnings.push(`${where(layer.source, `${key}.injectHosts[${i}]`)}: ${parsed.warning}`);
      for (const r of parsed.rules) out.set(r.text, r);
    });
    return [...out.values()];
  }

  /** Merge entries naming the same thing: any `deny` wins, else the highest-precedence `mask`. */
  private pickCredential<C extends { entry: { mode: CredentialMode }; layer: Layer }>(candidates: C[]): C {
    const rank = (layer: Layer) => SCOPE_ORDER.indexOf(layer.scope) * 1000 - this.layers.indexOf(layer);
    const sorted = [...candidates].sort((a, b) => rank(a.layer) - rank(b.layer));
    return sorted.find((c) => c.entry.mode === 'deny') ?? sorted[0]!;
  }

  private envCredentials(): EnvCredential[] {
    const byName = new Map<string, Array<{ entry: NonNullable<NonNullable<SettingsDocument['credentials']>['envVars']>[number]; layer: Layer; i: number }>>();
    for (const layer of this.layers) {
      (layer.doc.credentials?.envVars ?? []).forEach((entry, i) => {
        byName.set(entry.name, [...(byName.get(entry.name) ?? []), { entry, layer, i }]);
      });
    }
    return [...byName.values()].map((candidates) => {
      const { entry, layer, i } = this.pickCredential(candidates);
      const out: EnvCredential = {
        name: entry.name,
        mode: entry.mode,
        injectInto: [...new Set<InjectPlace>(entry.injectInto ?? ['headers'])],
        onExtractNoMatch: (entry.onExtractNoMatch ?? 'warn') as OnExtractNoMatch,
        source: layer.source,
      };
      const hosts = this.injectHosts(layer, `credentials.envVars[${i}]`, entry.injectHosts);
      if (hosts) out.injectHosts = hosts;
      if (entry.source) out.sourceCommand = [...entry.source.command];
      if (entry.decode) out.decode = entry.decode;
      if (entry.maskClaims) out.maskClaims = [...entry.maskClaims];
      if (entry.extract !== undefined) out.extract = entry.extract;
      return out;
    });
  }

  private fileCredentials(): FileCredential[] {
    type Entry = NonNullable<NonNullable<SettingsDocument['credentials']>['files']>[number];
    const byPath = new Map<string, Array<{ entry: Entry; layer: Layer; path: string; glob: boolean; i: number }>>();
    for (const layer of this.layers) {
      (layer.doc.credentials?.files ?? []).forEach((entry, i) => {
        const r = this.resolvePath(layer, `credentials.files[${i}].path`, entry.path);
        const id = `${r.glob}:${r.path}`;
        byPath.set(id, [...(byPath.get(id) ?? []), { entry, layer, path: r.path, glob: r.glob, i }]);
      });
    }
    return [...byPath.values()].map((candidates) => {
      const { entry, layer, path, glob, i } = this.pickCredential(candidates);
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
      const hosts = this.injectHosts(layer, `credentials.files[${i}]`, entry.injectHosts);
      if (hosts) out.injectHosts = hosts;
      if (entry.decode) out.decode = entry.decode;
      if (entry.maskClaims) out.maskClaims = [...entry.maskClaims];
      return out;
    });
  }

  private awsPairs(): AwsPair[] {
    const out = new Map<string, AwsPair>();
    for (const layer of this.layers) {
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

  private unixSockets(): string[] {
    const out = new Set<string>();
    for (const layer of this.layers) {
      (layer.doc.network?.allowUnixSockets ?? []).forEach((p, i) =>
        out.add(this.resolvePath(layer, `network.allowUnixSockets[${i}]`, { path: p, literal: true }).path),
      );
    }
    return [...out];
  }

  /** Settings that do nothing as written (credential warnings come with the credential plan). */
  private startWarnings(policy: Policy): void {
    for (const { rule, source } of policy.network.allowedDomains) {
      if (rule.kind === 'wildcard' && isPublicSuffix(rule.host)) {
        this.warnings.push(`${label(source)}: network.allowedDomains: "${rule.raw}" allows every host under the public suffix .${rule.host}; name the domain (*.example.${rule.host})`);
      }
    }
    for (const entry of Object.keys(policy.network.deniedDomainReasons)) {
      if (!policy.network.deniedDomains.some((d) => d.rule.text === entry)) {
        this.warnings.push(`network.deniedDomainReasons: "${entry}" names no deniedDomains entry, so it is never shown`);
      }
    }
  }

  build(): PolicyBuild {
    this.checkEntries();
    const { managedDomainsOnly, managedReadOnly } = this.applyTrust();
    const s = <T>(key: string, read: (doc: SettingsDocument) => T | undefined, fallback: T) => this.scalar(key, read, fallback);
    const sigv4 = (k: 'presigned' | 'streaming' | 'sigv4a') =>
      s<SigV4Handling>(`credentials.sigv4.${k}`, (d) => d.credentials?.sigv4?.[k], 'deny');

    const network: Policy['network'] = {
      allowedDomains: this.domains('allow'),
      deniedDomains: this.domains('deny'),
      deniedDomainReasons: this.reasons(),
      strictAllowlist: s('network.strictAllowlist', (d) => d.network?.strictAllowlist, true),
      allowManagedDomainsOnly: managedDomainsOnly,
      deniedResolvedAddresses: this.cidrs(),
      allowUnixSockets: this.unixSockets(),
      allowAllUnixSockets: s('network.allowAllUnixSockets', (d) => d.network?.allowAllUnixSockets, false),
      allowLocalBinding: s('network.allowLocalBinding', (d) => d.network?.allowLocalBinding, false),
      exposePorts: this.exposePorts(),
    };
    const httpProxyPort = s<number | undefined>('network.httpProxyPort', (d) => d.network?.httpProxyPort, undefined);
    if (httpProxyPort !== undefined) network.httpProxyPort = httpProxyPort;
    const socksProxyPort = s<number | undefined>('network.socksProxyPort', (d) => d.network?.socksProxyPort, undefined);
    if (socksProxyPort !== undefined) network.socksProxyPort = socksProxyPort;
    const tls = this.tlsTerminate();
    if (tls) network.tlsTerminate = tls;
    this.checkLocalServices(network);

    const policy: Policy = {
      cwd: this.ctx.cwd,
      home: this.ctx.home,
      root: this.ctx.root,
      network,
      filesystem: {
        allowWrite: this.pathRules('allowWrite'),
        denyWrite: this.pathRules('denyWrite'),
        denyRead: this.pathRules('denyRead'),
        allowRead: this.pathRules('allowRead'),
        disabled: s('filesystem.disabled', (d) => d.filesystem?.disabled, false),
        allowManagedReadPathsOnly: managedReadOnly,
      },
      credentials: {
        envVars: this.envCredentials(),
        files: this.fileCredentials(),
        awsPairs: this.awsPairs(),
        sigv4: { presigned: sigv4('presigned'), streaming: sigv4('streaming'), sigv4a: sigv4('sigv4a'), mint: s<MintHandling>('credentials.sigv4.mint', (d) => d.credentials?.sigv4?.mint, 'deny') },
        allowPlaintextInject: s('credentials.allowPlaintextInject', (d) => d.credentials?.allowPlaintextInject, false),
      },
      mandatoryDenySearchDepth: s('mandatoryDenySearchDepth', (d) => d.mandatoryDenySearchDepth, 3),
      enableWeakerNestedSandbox: s('enableWeakerNestedSandbox', (d) => d.enableWeakerNestedSandbox, false),
      allowNestedUserNamespaces: s('allowNestedUserNamespaces', (d) => d.allowNestedUserNamespaces, false),
      allowPty: s('allowPty', (d) => d.allowPty, false),
      allowAppleEvents: s('allowAppleEvents', (d) => d.allowAppleEvents, false),
      enableWeakerNetworkIsolation: s('enableWeakerNetworkIsolation', (d) => d.enableWeakerNetworkIsolation, false),
      warnings: this.warnings,
      ignored: this.ignored,
    };
    const whole = this.layers.find((l) => l.reference && l.doc.filesystem?.allowWrite !== undefined);
    if (whole) policy.filesystem.wholeWriteList = whole.source;
    if (this.notices.length) policy.notices = this.notices;
    if (tls) this.protectTlsFiles(policy, tls);
    this.startWarnings(policy);
    return { policy, sources: this.sources };
  }
}
