// Policy → the ONE credential plan (SPEC §7), pure: what the command's environment loses and
// gains, which files it cannot read and which it reads as sentinel copies, every secret with its
// sentinel and where the proxy may put it back, and every warning as data. The sandbox, the
// proxy stages, `--dry-run` and `srt config` all read this plan, so they cannot disagree.
//
// The platform gathers the facts first (srt's environment, the bytes of each masked file, the
// output of `source` commands, jose when some entry decodes JWTs); nothing here does I/O.

import type { EnvCredential, FileCredential, InjectPlace, PathRule, Policy } from '../policy.js';
import type { DomainRule } from '../proxy/domains.js';
import { extractAwsCredentials } from './aws-files.js';
import { awsFilePairing, awsLabels, awsPairing, DEFAULT_AWS, type AwsFile } from './aws-pairing.js';
import { commandView } from './command-view.js';
import { emptyCredentialPlan } from './env.js';
import { extract } from './extract.js';
import { defaultInjectHosts, defaultInjectNotice, injectionWarnings } from './inject-hosts.js';
import { fakeJwt, parseJwt, type Jose, type ParsedJwt } from './jwt.js';
import { SentinelMint, type RandomInt } from './sentinels.js';

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

/** A mask entry's values and how to render what the command sees. */
export interface Masking {
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

/** A file passed unmasked (onExtractNoMatch "warn"): still never with a value guarded elsewhere. */
export interface Unmatched { entry: FileCredential; text: string; mode: number }

export function buildCredentialPlan(input: PlanInput): CredentialPlan {
  const { policy } = input;
  const m = new Maskings(input);
  maskEnv(m);
  maskFiles(m);
  const byReal = mintSentinels(input, m.plan, m.list);
  defaultInjectNotice(policy, m.list, m.plan);
  commandView(m, (real) => byReal.get(real)!.sentinel);
  const { plan } = m;
  plan.unsetEnv = [...new Set(plan.unsetEnv)];
  awsPairing(policy, plan, byReal, input);
  for (const file of m.awsFiles) awsFilePairing(file, plan, byReal);
  injectionWarnings(policy, plan);
  // Each exposure is a warning too, said first.
  plan.warnings = [...new Set([...plan.exposures, ...plan.warnings])];
  return plan;
}

/** The plan being built and the mask entries' values as found. */
export class Maskings {
  readonly plan = emptyCredentialPlan();
  readonly list: Masking[] = [];
  readonly awsFiles: AwsFile[] = [];
  readonly unmatched: Unmatched[] = [];

  constructor(readonly input: PlanInput) {}

  deny(f: FileCredential, why: string): void {
    this.plan.denyFiles.push({ rule: { path: f.path, glob: f.glob, original: f.path, source: f.source }, why });
  }

  /** onExtractNoMatch for an entry whose extract/decode found nothing usable. */
  noMatch(e: EnvCredential | FileCredential, label: string, what: string): void {
    const { plan } = this;
    if (e.onExtractNoMatch === 'error') {
      plan.errors.push(`credentials: ${label}: ${what} (onExtractNoMatch is "error"); fix the entry's extract/decode or the value`);
    } else if (e.onExtractNoMatch === 'deny') {
      plan.warnings.push(`credentials: ${label}: ${what}; withheld from the command (onExtractNoMatch "deny")`);
      if ('name' in e) plan.unsetEnv.push(e.name);
      else this.deny(e, what);
    } else {
      plan.exposures.push(`credentials: ${label}: ${what}; passed to the command UNMASKED (onExtractNoMatch "warn"; set it to "deny" to withhold it)`);
    }
  }

  /** Values of `text` to mask for an entry (extract, decode or the whole value); null = no match handled. */
  find(e: EnvCredential | FileCredential, label: string, text: string): Masking | null {
    const x = extract(text, e.extract, 'maskDuplicates' in e && e.maskDuplicates);
    if (!x) {
      this.noMatch(e, label, e.extract !== undefined ? `extract ${JSON.stringify(e.extract)} matches nothing` : 'the value is empty');
      return null;
    }
    const m: Masking = { entry: e, label, values: x.values, render: x.render };
    if (e.decode === 'jwt') {
      // Taken apart now, faked once every real value is known (mintSentinels).
      m.jwts = new Map();
      for (const v of x.values) {
        const jwt = parseJwt(this.input.jose!, v, e.maskClaims);
        if (typeof jwt === 'string') {
          this.noMatch(e, label, `decode "jwt": ${jwt}`);
          return null;
        }
        m.jwts.set(v, jwt);
      }
    }
    return m;
  }
}

/** Masked and denied environment variables. */
function maskEnv(m: Maskings): void {
  const { input, plan } = m;
  // An AWS session token exists only for temporary credentials: its variable may well be unset.
  const optionalVars = new Set([DEFAULT_AWS.sessionTokenVar, ...input.policy.credentials.awsPairs.map((p) => p.sessionTokenVar)]);
  for (const e of input.policy.credentials.envVars) {
    if (e.mode === 'deny') {
      plan.unsetEnv.push(e.name);
      continue;
    }
    let value = input.env[e.name];
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
    const found = m.find(e, e.name, value);
    if (found) m.list.push(found);
  }
}

/** Masked and denied files; a mask that cannot be made safely is a deny. */
function maskFiles(m: Maskings): void {
  const { input, plan } = m;
  for (const f of input.policy.credentials.files) {
    if (f.mode === 'deny') {
      m.deny(f, '');
      continue;
    }
    const fallback = (why: string) => {
      plan.warnings.push(`credentials: ${f.path}: ${why}, so it cannot be masked safely; denied instead`);
      m.deny(f, why);
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
    if (aws) m.awsFiles.push({ path: f.path, profiles: aws.profiles });
    const found: Masking | null = aws ? { entry: f, label: f.path, values: aws.values, render: aws.render, labelOf: awsLabels(f.path, aws.profiles) } : m.find(f, f.path, text);
    if (!found) {
      m.unmatched.push({ entry: f, text, mode: fact.mode ?? 0o600 });
      continue;
    }
    if (!aws && f.extract === undefined && f.decode === undefined && text.replace(/\r?\n$/, '').includes('\n')) {
      plan.warnings.push(`credentials: ${f.path}: masked whole (no extract) although it has several lines: the command reads one sentinel instead of the file, which its tools cannot parse, and the proxy would inject the whole file as one value; give it an extract (docs/tls-and-credentials.md has patterns for .npmrc, .netrc, gh's hosts.yml, .docker/config.json and .git-credentials)`);
    }
    found.mode = fact.mode ?? 0o600;
    m.list.push(found);
    if ((fact.links ?? 1) > 1) {
      plan.exposures.push(`credentials: ${f.path} has ${fact.links} hard links: the sandbox sees the sentinel copy only under this name (deny or mask the others too)`);
    }
  }
}

/** Sentinels, minted once every real value is known so none clashes with any of them: one secret
 *  per distinct real value, authorised by every entry that names it. */
function mintSentinels(input: PlanInput, plan: CredentialPlan, maskings: readonly Masking[]): Map<string, Secret> {
  const found = maskings.flatMap((m) => m.values.map((real) => ({ real, label: m.labelOf?.(real) ?? m.label, entry: m.entry, jwt: m.jwts?.get(real) })));
  const mint = new SentinelMint(found.map((f) => f.real), { ...(input.sentinelKey ? { key: input.sentinelKey } : {}), ...(input.random ? { random: input.random } : {}) });
  if (input.sentinelKeyProblem && found.length > 0) plan.warnings.push(`credentials: sentinels are new in this run, not the ones earlier runs used: ${input.sentinelKeyProblem}`);
  const byReal = new Map<string, Secret>();
  const extended = new Set<string>();
  const defaultHosts = defaultInjectHosts(input.policy);
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
  return byReal;
}

function isUtf8(bytes: Buffer): boolean {
  try {
    new TextDecoder('utf-8', { fatal: true }).decode(bytes);
    return true;
  } catch {
    return false;
  }
}
