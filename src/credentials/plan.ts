// Policy → the ONE credential plan (SPEC §7), pure: what the command's environment loses and
// gains, which files it cannot read and which it reads as sentinel copies, every secret with its
// sentinel and where the proxy may put it back, and every warning as data. The sandbox, the
// proxy stages, `--dry-run` and `srt config` all read this plan, so they cannot disagree.
//
// The platform gathers the facts first (srt's environment, the bytes of each masked file, the
// output of `source` commands, jose when some entry decodes JWTs); nothing here does I/O.

import type { AwsPair, EnvCredential, FileCredential, InjectPlace, PathRule, Policy } from '../policy.js';
import { effectiveAllowList } from '../proxy/decide.js';
import type { DomainRule } from '../proxy/domains.js';
import { extractAwsCredentials, type AwsProfile } from './aws-files.js';
import { replaceCopies, type Copy, type Found as CopiesFound } from './copies.js';
import { extract } from './extract.js';
import { fakeJwt, parseJwt, type Jose, type ParsedJwt } from './jwt.js';
import { SentinelMint, type RandomInt } from './sentinels.js';
import { emptyCredentialPlan } from './env.js';

/** Larger masked files fall back to deny: a secret file is small, and the copy is held in memory. */
export const MAX_MASKED_FILE = 8 * 1024 * 1024;

/** What srt found at a credential file's path (outside the sandbox, symlinks followed). */
export type FileFact =
  | {
      kind: 'file';
      bytes: Buffer;
      /** Permission bits, kept on the copy (some tools refuse a credential file others may read). */
      mode?: number;
      /** Hard links to the file (other names show the real content). */
      links?: number;
    }
  | { kind: 'dir' }
  | { kind: 'missing' }
  | { kind: 'too-large'; size: number }
  | { kind: 'unreadable'; why: string };

export interface PlanInput {
  policy: Policy;
  /** srt's own environment (the command's starts as a copy). */
  env: Readonly<Record<string, string | undefined>>;
  /** By FileCredential.path, for literal mask entries. */
  files: ReadonlyMap<string, FileFact>;
  /** Output of each `source` command by variable name; undefined when they were not run (a dry
   *  run, `srt config`): those variables are then described, not masked. */
  sourced?: ReadonlyMap<string, string>;
  /** Loaded by the caller when some mask entry has `decode: "jwt"`. */
  jose?: Jose;
  /** false on macOS: a masked file is denied (no sentinel copy). */
  bindFiles: boolean;
  /** The per-user key that makes sentinels stable across runs (platform/sentinel-key.ts); without
   *  it they are drawn from `random` (tests) or a cryptographic source, afresh each run. */
  sentinelKey?: Buffer;
  /** Why there is no key although this is a run (told once at start: sentinels change each run). */
  sentinelKeyProblem?: string;
  random?: RandomInt;
}

/** A real value the proxy knows, and the sentinel the command sees instead. */
export interface Secret {
  /** The variable or file it came from, for reports: `GH_TOKEN`, `/home/a/.netrc`. */
  label: string;
  real: string;
  sentinel: string;
  /** Where the real value may be sent (canonical rules): the entry's injectHosts, else every
   *  allowedDomains entry that names one host (never a wildcard: it must be listed). */
  injectHosts: DomainRule[];
  injectInto: InjectPlace[];
  /** false: never swapped back; its sentinel may go nowhere. Every AWS secret access key, paired
   *  with its key id or not: it is only ever used to sign (the proxy re-signs requests with it). */
  inject: boolean;
}

/** A masked AWS credential: the proxy recognises requests by the key id's sentinel. */
export interface AwsCredential {
  accessKeyId: Secret;
  secretAccessKey: Secret;
  sessionToken?: Secret;
}

export interface EnvChange {
  name: string;
  /** The value the command sees (a sentinel, or a fake JWT); undefined while a `source`
   *  command has not run (dry run): `pending` says which. */
  value?: string;
  pending?: string[];
}

export interface MaskedFile {
  /** The path as the policy names it (the bind's destination after symlinks are followed). */
  path: string;
  /** What the command reads there: the file with every secret replaced by its sentinel. */
  content: Buffer;
  /** Permission bits of the original (without write bits: the copy is read-only). */
  mode: number;
  /** How many values were masked in it. */
  masked: number;
}

export interface DeniedFile {
  rule: PathRule;
  /** Why a mask entry is denied instead (empty for deny entries). */
  why: string;
}

export interface CredentialPlan {
  unsetEnv: string[];
  setEnv: EnvChange[];
  denyFiles: DeniedFile[];
  maskFiles: MaskedFile[];
  /** Distinct real values (one per value, however many entries name it). */
  secrets: Secret[];
  aws: AwsCredential[];
  /** Printed once at start as `srt: warning: …`, the ones in `exposures` first. */
  warnings: string[];
  /** Of the warnings, those that say a real value reaches the command (the worst: shown first,
   *  so a list cut short never hides one). */
  exposures: string[];
  /** Masked variables that are not set in srt's environment (a typo, or set too late): `srt
   *  doctor` warns; a run only notes it, since masking names defensively is good practice. */
  unsetMasked: string[];
  /** Each stops the run before the command starts (exit 125). */
  errors: string[];
  /** For --debug and --dry-run: decisions that are not worth a warning. */
  notes: string[];
}

/** One masked value as found, before sentinels are minted. */
interface Found {
  real: string;
  label: string;
  entry: EnvCredential | FileCredential;
  jwt?: ParsedJwt;
}

/** A mask entry's values and how to render what the command sees. */
interface Masking {
  entry: EnvCredential | FileCredential;
  label: string;
  values: string[];
  render(sentinelOf: (real: string) => string): string;
  /** decode "jwt": each value taken apart. */
  jwts?: Map<string, ParsedJwt>;
  /** Files: the original's permission bits. */
  mode?: number;
  /** A label per value where one file holds several (an AWS credentials file's profiles). */
  labelOf?: (real: string) => string;
}

/** A masked AWS credentials/config file's profiles, paired like the AWS_* variables. */
interface AwsFile {
  path: string;
  profiles: AwsProfile[];
}

const DEFAULT_AWS: AwsPair = { accessKeyIdVar: 'AWS_ACCESS_KEY_ID', secretAccessKeyVar: 'AWS_SECRET_ACCESS_KEY', sessionTokenVar: 'AWS_SESSION_TOKEN', source: { scope: 'default' } };

function isUtf8(bytes: Buffer): boolean {
  try {
    new TextDecoder('utf-8', { fatal: true }).decode(bytes);
    return true;
  } catch {
    return false;
  }
}

/** Could some destination match both rules? (Is an injectHosts entry reachable under an allow entry?) */
function overlaps(allow: DomainRule, inject: DomainRule): boolean {
  if (allow.port !== undefined && inject.port !== undefined && allow.port !== inject.port) return false;
  if (allow.kind === 'any' || inject.kind === 'any') return true;
  const under = (host: string, suffix: string) => host === suffix || host.endsWith(`.${suffix}`);
  if (inject.kind === 'host') {
    if (allow.kind === 'host') return allow.host === inject.host;
    return inject.ip === undefined && inject.host.endsWith(`.${allow.host}`);
  }
  if (allow.kind === 'host') return allow.ip === undefined && allow.host.endsWith(`.${inject.host}`);
  return under(allow.host, inject.host) || under(inject.host, allow.host);
}

/** Where an entry without injectHosts sends its value: every allowedDomains entry that names one
 *  host. A wildcard (`*.example.com`, `*`) would send it to hosts nobody named. */
export function defaultInjectHosts(policy: Policy): DomainRule[] {
  return effectiveAllowList(policy.network).map((d) => d.rule).filter((r) => r.kind === 'host');
}

/** Said at start: the allow entries a mask without injectHosts does not go to. */
function defaultInjectNotice(policy: Policy, maskings: readonly Masking[], plan: CredentialPlan): void {
  const labels = [...new Set(maskings.filter((m) => m.entry.injectHosts === undefined).map((m) => m.label))];
  const left = effectiveAllowList(policy.network).map((d) => d.rule).filter((r) => r.kind !== 'host').map((r) => r.text);
  if (labels.length === 0 || left.length === 0) return;
  plan.warnings.push(
    `credentials: ${labels.join(', ')} ${labels.length === 1 ? 'has' : 'have'} no injectHosts: the real value goes only to the allowedDomains entries that name one host, not to ${[...new Set(left)].join(', ')}; list ${left.length === 1 ? 'it' : 'them'} in injectHosts to send it there`,
  );
}

/** A warning that a real value reaches the command. */
function expose(plan: CredentialPlan, warning: string): void {
  plan.warnings.push(warning);
  plan.exposures.push(warning);
}


export function buildCredentialPlan(input: PlanInput): CredentialPlan {
  const { policy, env } = input;
  const plan = emptyCredentialPlan();
  const maskings: Masking[] = [];
  const awsFiles: AwsFile[] = [];
  const unmatched: Array<{ entry: FileCredential; text: string; mode: number }> = [];
  const deny = (f: FileCredential, why: string) => plan.denyFiles.push({ rule: { path: f.path, glob: f.glob, original: f.path, source: f.source }, why });

  /** onExtractNoMatch for an entry whose extract/decode found nothing usable. */
  const noMatch = (e: EnvCredential | FileCredential, label: string, what: string) => {
    if (e.onExtractNoMatch === 'error') {
      plan.errors.push(`credentials: ${label}: ${what} (onExtractNoMatch is "error"); fix the entry's extract/decode or the value`);
    } else if (e.onExtractNoMatch === 'deny') {
      plan.warnings.push(`credentials: ${label}: ${what}; withheld from the command (onExtractNoMatch "deny")`);
      if ('name' in e) plan.unsetEnv.push(e.name);
      else deny(e, what);
    } else {
      expose(plan, `credentials: ${label}: ${what}; passed to the command UNMASKED (onExtractNoMatch "warn"; set it to "deny" to withhold it)`);
    }
  };

  /** Values of `text` to mask for an entry (extract, decode or the whole value); null = no match handled. */
  const find = (e: EnvCredential | FileCredential, label: string, text: string): Masking | null => {
    const x = extract(text, e.extract, 'maskDuplicates' in e && e.maskDuplicates);
    if (!x) {
      noMatch(e, label, e.extract !== undefined ? `extract ${JSON.stringify(e.extract)} matches nothing` : 'the value is empty');
      return null;
    }
    const m: Masking = { entry: e, label, values: x.values, render: x.render };
    if (e.decode === 'jwt') {
      // Taken apart now, faked once every real value is known (see the mint below).
      m.jwts = new Map();
      for (const v of x.values) {
        const jwt = parseJwt(input.jose!, v, e.maskClaims);
        if (typeof jwt === 'string') {
          noMatch(e, label, `decode "jwt": ${jwt}`);
          return null;
        }
        m.jwts.set(v, jwt);
      }
    }
    return m;
  };

  // --- environment variables
  // An AWS session token exists only for temporary credentials: its variable may well be unset.
  const optionalVars = new Set([DEFAULT_AWS.sessionTokenVar, ...policy.credentials.awsPairs.map((p) => p.sessionTokenVar)]);
  for (const e of policy.credentials.envVars) {
    if (e.mode === 'deny') {
      plan.unsetEnv.push(e.name);
      continue;
    }
    let value = env[e.name];
    if (e.sourceCommand) {
      if (input.sourced === undefined) {
        plan.setEnv.push({ name: e.name, pending: e.sourceCommand });
        continue;
      }
      value = input.sourced.get(e.name);
    }
    if (value === undefined || value === '') {
      plan.notes.push(`credentials: ${e.name} is masked but not set in srt's environment: nothing to mask`);
      if (!optionalVars.has(e.name)) plan.unsetMasked.push(e.name);
      continue;
    }
    const m = find(e, e.name, value);
    if (m) maskings.push(m);
  }

  // --- files
  for (const f of policy.credentials.files) {
    if (f.mode === 'deny') {
      deny(f, '');
      continue;
    }
    const fallback = (why: string) => {
      plan.warnings.push(`credentials: ${f.path}: ${why}, so it cannot be masked safely; denied instead`);
      deny(f, why);
    };
    if (f.glob) { fallback('a glob names several files'); continue; }
    if (!input.bindFiles) { fallback('masked files need a sentinel copy bound over them, which this platform cannot do'); continue; }
    const fact = input.files.get(f.path) ?? { kind: 'missing' };
    switch (fact.kind) {
      case 'missing':
        plan.notes.push(`credentials: ${f.path} does not exist: nothing to mask`);
        continue;
      case 'dir': fallback('it is a directory'); continue;
      case 'too-large': fallback(`it is larger than ${MAX_MASKED_FILE / 1024 / 1024} MiB (${fact.size} bytes)`); continue;
      case 'unreadable': fallback(`srt cannot read it (${fact.why})`); continue;
      case 'file':
        if (!isUtf8(fact.bytes)) { fallback('it is not UTF-8 text'); continue; }
    }
    const text = fact.bytes.toString('utf8');
    // An AWS credentials/config file without an extract of its own: each key id, secret and
    // token masked where it stands (the file still parses), each profile one credential.
    const aws = f.extract === undefined && f.decode === undefined ? extractAwsCredentials(text) : null;
    if (aws) awsFiles.push({ path: f.path, profiles: aws.profiles });
    const m: Masking | null = aws ? { entry: f, label: f.path, values: aws.values, render: aws.render, labelOf: awsLabels(f.path, aws.profiles) } : find(f, f.path, text);
    if (!m) {
      // Passed unmasked (onExtractNoMatch "warn"): still never with a value guarded elsewhere.
      unmatched.push({ entry: f, text, mode: fact.mode ?? 0o600 });
      continue;
    }
    if (!aws && f.extract === undefined && f.decode === undefined && text.replace(/\r?\n$/, '').includes('\n')) {
      plan.warnings.push(`credentials: ${f.path}: masked whole (no extract) although it has several lines: the command reads one sentinel instead of the file, which its tools cannot parse, and the proxy would inject the whole file as one value; give it an extract (docs/tls-and-credentials.md has patterns for .npmrc, .netrc, gh's hosts.yml, .docker/config.json and .git-credentials)`);
    }
    m.mode = fact.mode ?? 0o600;
    maskings.push(m);
    if ((fact.links ?? 1) > 1) {
      expose(plan, `credentials: ${f.path} has ${fact.links} hard links: the sandbox sees the sentinel copy only under this name (deny or mask the others too)`);
    }
  }

  // --- sentinels: minted once every real value is known, so none clashes with any of them
  const found: Found[] = maskings.flatMap((m) => m.values.map((real) => ({ real, label: m.labelOf?.(real) ?? m.label, entry: m.entry, ...(m.jwts ? { jwt: m.jwts.get(real)! } : {}) })));
  const mint = new SentinelMint(found.map((f) => f.real), { ...(input.sentinelKey ? { key: input.sentinelKey } : {}), ...(input.random ? { random: input.random } : {}) });
  if (input.sentinelKeyProblem && found.length > 0) plan.warnings.push(`credentials: sentinels are new in this run, not the ones earlier runs used: ${input.sentinelKeyProblem}`);
  const byReal = new Map<string, Secret>();
  const extended = new Set<string>();
  const defaultHosts = defaultInjectHosts(policy);
  for (const { real, label, entry, jwt } of found) {
    const known = byReal.get(real);
    if (known) {
      // The same value under several entries: each entry's hosts and places authorise it.
      known.injectHosts = [...known.injectHosts, ...(entry.injectHosts ?? defaultHosts)];
      known.injectInto = [...new Set([...known.injectInto, ...entry.injectInto])];
      continue;
    }
    let sentinel: string;
    if (jwt) sentinel = fakeJwt(jwt, mint, mint.streamFor(real));
    else {
      const shape = mint.shaped(real);
      sentinel = shape.sentinel;
      if (shape.extendedBy > 0) extended.add(label);
    }
    const secret: Secret = { label, real, sentinel, injectHosts: [...(entry.injectHosts ?? defaultHosts)], injectInto: [...entry.injectInto], inject: true };
    byReal.set(real, secret);
    plan.secrets.push(secret);
  }
  for (const label of extended) {
    plan.warnings.push(`credentials: ${label}: the value is too short to hide behind a sentinel of the same length; its sentinel is longer (requests that carry it change length), and any response that contains the value is rewritten`);
  }
  const sentinelOf = (real: string) => byReal.get(real)!.sentinel;
  defaultInjectNotice(policy, maskings, plan);

  // --- what the command sees. Elsewhere (another variable, another file) a guarded value is
  // never handed over either, raw or base64/base64url-encoded (copies.ts): a masked value becomes
  // its sentinel encoded the same way; a denied one withholds what holds it.
  const deniedValues = policy.credentials.envVars.filter((e) => e.mode === 'deny' || plan.unsetEnv.includes(e.name)).map((e) => env[e.name]).filter((v): v is string => !!v);
  const copies: Array<Copy<Secret | null>> = [
    ...plan.secrets.map((s) => ({ real: s.real, sentinel: s.sentinel, tag: s })),
    ...deniedValues.map((real) => ({ real, sentinel: null, tag: null })),
  ];
  const labels = (tags: Array<Secret | null>) => [...new Set(tags.filter((t): t is Secret => t !== null).map((t) => t.label))].join(', ');
  const withheld = (found: CopiesFound<Secret | null>) => found.raw.includes(null) || found.encoded.includes(null)
    ? `holds the value of a denied variable${found.raw.includes(null) ? '' : ' (base64-encoded)'}`
    : `holds the value of masked ${labels(found.stuck)} base64-encoded inside a longer run srt cannot re-encode`;
  const files: Array<{ entry: FileCredential; text: string; mode: number; masked: number }> = unmatched.map((u) => ({ ...u, masked: 0 }));
  for (const m of maskings) {
    const rendered = m.render(sentinelOf);
    if ('name' in m.entry) plan.setEnv.push({ name: m.entry.name, value: rendered });
    else files.push({ entry: m.entry, text: rendered, mode: m.mode!, masked: m.values.length });
  }
  const order = (e: FileCredential) => policy.credentials.files.indexOf(e);
  for (const f of files.sort((a, b) => order(a.entry) - order(b.entry))) {
    const found = replaceCopies(f.text, copies);
    const label = f.entry.path;
    if (found.withhold) {
      const why = withheld(found);
      plan.warnings.push(`credentials: ${label} ${why}; denied too`);
      deny(f.entry, why);
      continue;
    }
    const hits = [...found.raw, ...found.encoded];
    if (f.masked === 0 && hits.length === 0) continue; // nothing guarded in it: passed as it is (warned above)
    if (f.masked === 0) plan.warnings.push(`credentials: ${label}: its extract matched nothing, but it holds the value of masked ${labels(hits)}: the command sees the sentinel there (the rest is passed unmasked)`);
    else if (hits.length > 0) plan.notes.push(`credentials: ${label} also holds ${labels(hits)}'s value: masked there too`);
    plan.maskFiles.push({ path: label, content: Buffer.from(found.text, 'utf8'), mode: f.mode & 0o555, masked: f.masked + hits.length });
  }
  for (const [name, value] of Object.entries(env)) {
    // A variable masked or pending a `source` command is set above; one passed unmasked (its
    // extract matched nothing) still never carries another entry's value.
    if (value === undefined || plan.unsetEnv.includes(name) || plan.setEnv.some((c) => c.name === name)) continue;
    const found = replaceCopies(value, copies);
    if (found.withhold) {
      plan.unsetEnv.push(name);
      plan.warnings.push(`credentials: ${name} ${withheld(found)}; unset too`);
      continue;
    }
    if (found.raw.length > 0) plan.warnings.push(`credentials: ${name} holds the value of masked ${labels(found.raw)}; the command sees the sentinel there too`);
    if (found.encoded.length > 0) plan.warnings.push(`credentials: ${name} holds the value of masked ${labels(found.encoded)} base64-encoded; the command sees the sentinel there, encoded the same way`);
    if (found.text !== value) plan.setEnv.push({ name, value: found.text });
  }
  plan.unsetEnv = [...new Set(plan.unsetEnv)];

  awsPairing(policy, plan, byReal, input);
  for (const file of awsFiles) awsFilePairing(file, plan, byReal);
  injectionWarnings(policy, plan);
  plan.warnings = [...new Set([...plan.exposures, ...plan.warnings])];
  return plan;
}

/** Group masked AWS variables into credentials (SPEC §7): the default names, then awsPairs. */
function awsPairing(policy: Policy, plan: CredentialPlan, byReal: ReadonlyMap<string, Secret>, input: PlanInput): void {
  const entries = new Map(policy.credentials.envVars.map((e) => [e.name, e]));
  const wholeMask = (name: string) => {
    const e = entries.get(name);
    return e !== undefined && e.mode === 'mask' && e.extract === undefined && e.decode === undefined;
  };
  const secretOf = (name: string | undefined): Secret | undefined => {
    if (!name) return undefined;
    const change = plan.setEnv.find((c) => c.name === name);
    return change?.value !== undefined ? [...byReal.values()].find((s) => s.sentinel === change.value) : undefined;
  };
  const pairs: AwsPair[] = [...policy.credentials.awsPairs];
  for (const p of policy.credentials.awsPairs) {
    for (const name of [p.accessKeyIdVar, p.secretAccessKeyVar, p.sessionTokenVar]) {
      if (name !== undefined && !wholeMask(name)) {
        plan.errors.push(`credentials.awsPairs: ${name} must be a credentials.envVars entry with mode "mask" masking the whole value (no extract or decode)`);
      }
    }
  }
  const d = DEFAULT_AWS;
  if (!pairs.some((p) => p.accessKeyIdVar === d.accessKeyIdVar)) pairs.push(d);
  // An AWS secret key is only ever used to sign: whatever its pairing, its sentinel may go nowhere
  // (a header or body that carries it is stopped everywhere). So is any masked variable whose
  // name says it is one (MY_AWS_SECRET_ACCESS_KEY) without an awsPairs entry.
  const secretVars = new Set(pairs.map((p) => p.secretAccessKeyVar));
  for (const e of policy.credentials.envVars) if (/SECRET_ACCESS_KEY$/i.test(e.name)) secretVars.add(e.name);
  for (const s of plan.secrets) if (secretVars.has(s.label)) s.inject = false;
  for (const name of secretVars) {
    const secret = secretOf(name);
    if (secret) secret.inject = false;
  }
  for (const p of pairs) {
    const keyMasked = wholeMask(p.accessKeyIdVar);
    const secretMasked = wholeMask(p.secretAccessKeyVar);
    if (secretMasked && !keyMasked) {
      plan.warnings.push(`credentials: ${p.secretAccessKeyVar} is masked but ${p.accessKeyIdVar} is not: srt cannot re-sign AWS requests without masking the key id too, and an AWS secret key's sentinel may go nowhere (it is only ever used to sign)`);
    } else if (secretMasked && secretOf(p.secretAccessKeyVar) && !secretOf(p.accessKeyIdVar)) {
      plan.warnings.push(`credentials: ${p.secretAccessKeyVar} is masked but ${p.accessKeyIdVar} is not set: srt cannot re-sign AWS requests without the key id, and an AWS secret key's sentinel may go nowhere (it is only ever used to sign)`);
    }
    if (keyMasked && !secretMasked && input.env[p.secretAccessKeyVar] !== undefined) {
      expose(plan, `credentials: ${p.accessKeyIdVar} is masked but ${p.secretAccessKeyVar} is not: the command sees the real secret key; mask it too`);
    }
    const accessKeyId = secretOf(p.accessKeyIdVar);
    const secretAccessKey = secretOf(p.secretAccessKeyVar);
    if (!accessKeyId || !secretAccessKey) continue;
    const cred: AwsCredential = { accessKeyId, secretAccessKey };
    const token = p.sessionTokenVar !== undefined && wholeMask(p.sessionTokenVar) ? secretOf(p.sessionTokenVar) : undefined;
    if (token) cred.sessionToken = token;
    plan.aws.push(cred);
  }
}

/** `~/.aws/credentials [dev] aws_secret_access_key`: which profile's which value, for reports. */
function awsLabels(path: string, profiles: readonly AwsProfile[]): (real: string) => string {
  const fields = [['accessKeyId', 'aws_access_key_id'], ['secretAccessKey', 'aws_secret_access_key'], ['sessionToken', 'aws_session_token']] as const;
  return (real) => {
    for (const p of profiles) for (const [field, key] of fields) if (p[field] === real) return `${path} [${p.profile}] ${key}`;
    return path;
  };
}

/** Each profile of a masked AWS file with a key id and a secret is one credential. */
function awsFilePairing(file: AwsFile, plan: CredentialPlan, byReal: ReadonlyMap<string, Secret>): void {
  for (const p of file.profiles) {
    const accessKeyId = p.accessKeyId === undefined ? undefined : byReal.get(p.accessKeyId);
    const secretAccessKey = p.secretAccessKey === undefined ? undefined : byReal.get(p.secretAccessKey);
    // Only ever used to sign, with or without a key id beside it.
    if (secretAccessKey) secretAccessKey.inject = false;
    if (!accessKeyId || !secretAccessKey) {
      plan.warnings.push(`credentials: ${file.path}: profile [${p.profile}] has no ${accessKeyId ? 'aws_secret_access_key' : 'aws_access_key_id'}, so srt cannot re-sign its requests (its values are masked)`);
      continue;
    }
    const token = p.sessionToken === undefined ? undefined : byReal.get(p.sessionToken);
    // The same key pair in the environment and the file is one credential.
    if (plan.aws.some((a) => a.accessKeyId === accessKeyId && a.secretAccessKey === secretAccessKey && a.sessionToken === token)) continue;
    plan.aws.push({ accessKeyId, secretAccessKey, ...(token ? { sessionToken: token } : {}) });
  }
}

/** Masks that can never be put back, said at start rather than found out by a failed login. */
function injectionWarnings(policy: Policy, plan: CredentialPlan): void {
  const { network, credentials } = policy;
  // Every mask entry that is not withheld instead, set in this environment or not: a mistake in
  // the settings is worth fixing before the day the variable is set.
  const entries: Array<EnvCredential | FileCredential> = [...credentials.envVars, ...credentials.files].filter((e) =>
    e.mode === 'mask' && ('name' in e ? !plan.unsetEnv.includes(e.name) : !plan.denyFiles.some((d) => d.rule.path === e.path)));
  const masked = entries.map((e) => ('name' in e ? e.name : e.path));
  if (masked.length === 0) return;
  if (!network.tlsTerminate && !credentials.allowPlaintextInject) {
    plan.warnings.push(
      `credentials: ${masked.join(', ')} masked without network.tlsTerminate: the sentinel would reach the server unchanged and authentication would fail; add "tlsTerminate": {} to network`,
    );
  }
  for (const e of entries) {
    const label = 'name' in e ? e.name : e.path;
    if (!e.injectHosts) {
      const why = network.allowedDomains.length === 0 ? 'is empty' : 'names no single host (a wildcard must be listed in injectHosts)';
      if (defaultInjectHosts(policy).length === 0) plan.warnings.push(`credentials: ${label}: network.allowedDomains ${why}, so its real value is never sent anywhere`);
      continue;
    }
    for (const rule of e.injectHosts) {
      if (!network.allowedDomains.some((a) => overlaps(a.rule, rule))) {
        plan.warnings.push(`credentials: ${label}: injectHosts entry "${rule.raw}" is not covered by network.allowedDomains, so the proxy never connects there and the value is never sent`);
      }
    }
  }
}
