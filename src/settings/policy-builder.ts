// Settings layers → the one Policy (SPEC §2.3, §2.4). Three steps: validate and normalise each
// layer (paths absolute, domains parsed), drop what a scope may not set (one warning per key),
// then merge by scope precedence (scalars) and union (lists), where deny entries only add.

import type { MintHandling, PathRule, Policy, SigV4Handling, Source } from '../policy.js';
import { forwardListenAddresses, srtPortUse } from '../proxy/local-services.js';
import { envCredentials, fileCredentials, awsPairs } from './credentials-policy.js';
import { SettingsError } from './errors.js';
import { located, type FileScope } from './files.js';
import { LayerMerge, SCOPE_ORDER, label, where, type Layer, type LayerApproval, type PolicyContext } from './layers.js';
import { cidr, exposeEntry, networkPolicy, protectTlsFiles } from './network-policy.js';
import { applyScopeRules } from './scope-rules.js';
import { validateSettings, type SettingsDocument } from './schema.js';

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
  approval?: LayerApproval;
  /** These exact bytes passed validation before (valid-cache.ts): not validated again. */
  knownValid?: true;
  /** A file written for the reference tool (files.ts isReferenceFile): its allowWrite is the
   *  whole list of writable paths, and the keys srt handles differently are summed up per file. */
  reference?: true;
}

/** The `--allow-domain`, `--allow-write`, `--deny-read`, `--with`, `--expose` flags (CLI scope, relative to cwd). */
export interface CliFlags {
  allowDomain?: string[];
  allowWrite?: string[];
  denyRead?: string[];
  /** Toolchain presets (names checked by the caller). */
  with?: string[];
  /** `--expose`: exposePorts entries. */
  expose?: string[];
}

export interface PolicyBuild {
  policy: Policy;
  /** Source of every scalar (dotted key, e.g. `network.strictAllowlist`) and every
   *  deniedDomainReasons entry (`network.deniedDomainReasons["github.com:22"]`). */
  sources: Record<string, Source>;
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
  if (flags.expose?.length) layers.push(flagLayer('--expose', { network: { exposePorts: [...flags.expose] } }));

  // Scope order, stable within a scope.
  const ordered = SCOPE_ORDER.flatMap((scope) => layers.filter((l) => l.scope === scope));
  return build(new LayerMerge(ctx, ordered));
}

/**
 * A bad entry is an error even where a trust rule would drop it: a broken file stays broken.
 * Every bad entry of a file is reported, in file order, not only the first.
 */
function checkEntries(m: LayerMerge): void {
  for (const layer of m.layers) {
    const problems: string[] = [];
    const check = (fn: () => unknown): void => {
      try {
        fn();
      } catch (err) {
        if (!(err instanceof SettingsError)) throw err;
        problems.push(...err.lines);
      }
    };
    const { network: n, filesystem: fs, credentials: c } = layer.doc;
    for (const [key, list] of [['allowedDomains', 'allow'], ['deniedDomains', 'deny']] as const) {
      (n?.[key] ?? []).forEach((e, i) => check(() => m.parseDomain(layer, `network.${key}[${i}]`, e, list, true)));
    }
    (n?.allowedDomains ?? []).forEach((e, i) => check(() => {
      let rules: ReturnType<LayerMerge['parseDomain']>;
      try {
        rules = m.parseDomain(layer, `network.allowedDomains[${i}]`, e, 'allow', true);
      } catch {
        return; // said by the loop above
      }
      for (const rule of rules) {
        const use = forwardListenAddresses(rule) && srtPortUse(rule.port!);
        if (use) throw new SettingsError(`${where(layer.source, `network.allowedDomains[${i}]`)}: "${e}": a host loopback port is forwarded into the sandbox at the same port, and ${use}; this port cannot be forwarded`);
      }
    }));
    (n?.exposePorts ?? []).forEach((e, i) => check(() => exposeEntry(layer, i, e)));
    for (const e of Object.keys(n?.deniedDomainReasons ?? {})) {
      check(() => m.parseDomain(layer, `network.deniedDomainReasons[${JSON.stringify(e)}]`, e, 'deny', true));
    }
    (n?.tlsTerminate?.excludeDomains ?? []).forEach((e, i) => check(() => m.parseDomain(layer, `network.tlsTerminate.excludeDomains[${i}]`, e, 'allow', true)));
    (n?.deniedResolvedAddresses ?? []).forEach((e, i) => check(() => cidr(layer, i, e)));
    for (const key of ['allowWrite', 'denyWrite', 'denyRead', 'allowRead'] as const) {
      (fs?.[key] ?? []).forEach((e, i) => check(() => m.resolvePath(layer, `filesystem.${key}[${i}]`, e)));
    }
    (c?.files ?? []).forEach((f, i) => check(() => m.resolvePath(layer, `credentials.files[${i}].path`, f.path)));
    if (problems.length) throw new SettingsError(layer.source.file !== undefined ? located(layer.source.file, problems) : problems);
  }
}

function pathRules(m: LayerMerge, key: 'allowWrite' | 'denyWrite' | 'denyRead' | 'allowRead'): PathRule[] {
  const out = new Map<string, PathRule>();
  for (const layer of m.layers) {
    (layer.doc.filesystem?.[key] ?? []).forEach((entry, i) => {
      const r = m.resolvePath(layer, `filesystem.${key}[${i}]`, entry);
      const id = `${r.glob}:${r.path}`;
      if (!out.has(id)) out.set(id, { ...r, source: layer.source, key: `filesystem.${key}[${i}]`, ...(key === 'allowWrite' && layer.source.preset !== undefined ? { create: true as const } : {}) });
    });
  }
  return [...out.values()];
}

/** A suffix under which anyone can register names: a single label (`com`, `io`) or a country's
 *  usual second level (`co.uk`, `com.au`). A heuristic, not the Public Suffix List. */
function isPublicSuffix(host: string): boolean {
  return !host.includes('.') || /^(co|com|org|net|ac|gov|edu|ne|or|go)\.[a-z]{2}$/.test(host);
}

/** Settings that do nothing as written (credential warnings come with the credential plan). */
function startWarnings(m: LayerMerge, policy: Policy): void {
  for (const { rule, source } of policy.network.allowedDomains) {
    if (rule.kind === 'wildcard' && isPublicSuffix(rule.host)) {
      m.warnings.push(`${label(source)}: network.allowedDomains: "${rule.raw}" allows every host under the public suffix .${rule.host}; name the domain (*.example.${rule.host})`);
    }
  }
  for (const entry of Object.keys(policy.network.deniedDomainReasons)) {
    if (!policy.network.deniedDomains.some((d) => d.rule.text === entry)) {
      m.warnings.push(`network.deniedDomainReasons: "${entry}" names no deniedDomains entry, so it is never shown`);
    }
  }
}

function build(m: LayerMerge): PolicyBuild {
  checkEntries(m);
  const { managedDomainsOnly, managedReadOnly } = applyScopeRules(m);
  const s = <T>(key: string, read: (doc: SettingsDocument) => T | undefined, fallback: T) => m.scalar(key, read, fallback);
  const sigv4 = (k: 'presigned' | 'streaming' | 'sigv4a') =>
    s<SigV4Handling>(`credentials.sigv4.${k}`, (d) => d.credentials?.sigv4?.[k], 'deny');

  const network = networkPolicy(m, managedDomainsOnly);
  const tls = network.tlsTerminate;

  const policy: Policy = {
    cwd: m.ctx.cwd,
    home: m.ctx.home,
    root: m.ctx.root,
    network,
    filesystem: {
      allowWrite: pathRules(m, 'allowWrite'),
      denyWrite: pathRules(m, 'denyWrite'),
      denyRead: pathRules(m, 'denyRead'),
      allowRead: pathRules(m, 'allowRead'),
      disabled: s('filesystem.disabled', (d) => d.filesystem?.disabled, false),
      allowManagedReadPathsOnly: managedReadOnly,
    },
    credentials: {
      envVars: envCredentials(m),
      files: fileCredentials(m),
      awsPairs: awsPairs(m),
      sigv4: { presigned: sigv4('presigned'), streaming: sigv4('streaming'), sigv4a: sigv4('sigv4a'), mint: s<MintHandling>('credentials.sigv4.mint', (d) => d.credentials?.sigv4?.mint, 'deny') },
      allowPlaintextInject: s('credentials.allowPlaintextInject', (d) => d.credentials?.allowPlaintextInject, false),
    },
    mandatoryDenySearchDepth: s('mandatoryDenySearchDepth', (d) => d.mandatoryDenySearchDepth, 3),
    enableWeakerNestedSandbox: s('enableWeakerNestedSandbox', (d) => d.enableWeakerNestedSandbox, false),
    allowNestedUserNamespaces: s('allowNestedUserNamespaces', (d) => d.allowNestedUserNamespaces, false),
    allowPty: s('allowPty', (d) => d.allowPty, false),
    allowAppleEvents: s('allowAppleEvents', (d) => d.allowAppleEvents, false),
    enableWeakerNetworkIsolation: s('enableWeakerNetworkIsolation', (d) => d.enableWeakerNetworkIsolation, false),
    warnings: m.warnings,
    ignored: m.ignored,
  };
  const whole = m.layers.find((l) => l.reference && l.doc.filesystem?.allowWrite !== undefined);
  if (whole) policy.filesystem.wholeWriteList = whole.source;
  if (m.notices.length) policy.notices = m.notices;
  if (tls) protectTlsFiles(m, policy, tls);
  startWarnings(m, policy);
  return { policy, sources: m.sources };
}
