// The access model (pure), shared by every backend: may the command read / write this path, and
// which rule says so. Backends translate the same rules into their mechanism (bubblewrap mounts,
// Seatbelt filters); tests hold each translation against mayRead/mayWrite.
//
// Every rule names a region: a real path and everything below it, or (for a glob) every path
// that has a prefix matching the glob. Paths are real paths: the platform resolves symlinks first
// (a write is judged where it lands).
//   read:  hidden when a denyRead (or a credential file) covers it that no allowRead re-opens. An
//          allowRead re-opens a deny when it is at least as specific and of at least the deny's
//          trust (TRUST below). "As specific": the prefix of the path it matches is at least as
//          deep as the deny's; when both rules are globs, only the same glob re-opens. A path
//          writable by policy counts as allowRead of its scope (writing blind makes no sense).
//   write: readable AND (inside srt's own TMPDIR, OR inside a write root and inside no denyWrite
//          or protected path: denyWrite wins whatever its depth and scope).

import { dirname, join } from 'node:path';
import { globBase, isGlob, isWithin, literalTokens, matchTokens, parseGlob, type GlobToken } from '../glob.js';
import type { PathRule, Policy, Scope, Source } from '../policy.js';
import type { Landing } from './bwrap.js';

/**
 * How far a scope's allowRead/allowWrite reaches over another scope's denies: an allow re-opens a
 * deny only of equal or lower trust. The current directory is the caller's own choice at
 * invocation, like a CLI flag. srt's own files (TMPDIR, run dir, helper) rank above every scope;
 * credential denies above everything.
 */
export const TRUST: Record<Scope, number> = { managed: 3, cli: 2, default: 2, user: 1, local: 0, project: 0 };
export const SRT_OWN = 10;
export const CREDENTIAL = Infinity;

/** A parent directory's project file ranks between the project root's files and the user: a
 *  nested repository cannot re-open its parents' denies. */
const OUTSIDE_ROOT = 0.5;

/** The current directory is a write root by default (SPEC §3), except under a reference-tool file
 *  whose allowWrite lists every writable path (then only an entry covering it makes it one). */
export function cwdIsWriteRoot(policy: Pick<Policy, 'filesystem'>): boolean {
  return policy.filesystem.wholeWriteList === undefined;
}

export function trustOf(rule: Pick<PathRule, 'source'>): number {
  return rule.source.outsideRoot ? OUTSIDE_ROOT : TRUST[rule.source.scope];
}

/** A rule's path with a trailing `/**` dropped; null when glob syntax remains. */
export function literalOf(rule: Pick<PathRule, 'path' | 'glob'>): string | null {
  if (!rule.glob) return rule.path;
  const trimmed = rule.path.replace(/\/\*\*$/, '');
  if (trimmed !== '' && !isGlob(trimmed)) return trimmed;
  return null;
}

/** A real directory or file, and (for a glob) the glob below it. */
export interface Region {
  base: string;
  /** Glob relative to `base` (no leading `/`); absent for a literal path. */
  tail?: string;
}

export type AccessKind =
  | 'denyRead' | 'allowRead' | 'credential' | 'allowWrite' | 'denyWrite' | 'protected' | 'cwd' | 'worktree' | 'srt';

export interface AccessRule {
  kind: AccessKind;
  region: Region;
  trust: number;
  /** For messages and profile comments: `denyRead ~/.ssh (user /h/.srt/settings.json)`. */
  origin: string;
}

/** A protected path (SPEC §3) as the backend found or describes it. */
export interface ProtectedRegion {
  region: Region;
  why: string;
}

export interface AccessRules {
  readDenies: AccessRule[];
  /** allowRead entries, every write root, srt's own files. */
  readAllows: AccessRule[];
  /** cwd, allowWrite, a linked worktree's git dirs. */
  writeRoots: AccessRule[];
  /** srt's TMPDIR: writable whatever denyWrite and protected paths say (it lives under ~/.srt). */
  ownWritable: AccessRule[];
  /** denyWrite entries and protected paths. */
  writeDenies: AccessRule[];
  warnings: string[];
  notes: string[];
  /** Why no sandbox may start (fail closed): a deny entry srt cannot resolve. */
  errors: string[];
}

export interface AccessFacts {
  /** Landing of every path from `accessPaths()`. */
  landings: ReadonlyMap<string, Landing>;
  tmpDir: string;
  runDir: string;
  /** The directory holding every run's directory: hidden but for `runDir`, so concurrent runs
   *  never see each other's TMPDIR or files. */
  runRoot?: string;
  /** srt's own files the sandbox must read (helper, Node preload, undici). */
  runtimeFiles?: { path: string }[];
  worktree?: { commonDir: string; gitDir: string };
  /** The protected paths for these write roots (real paths). */
  protect: (writeRoots: string[]) => ProtectedRegion[];
  /** Where existing matches of a deny glob lead, keyed by the rule's path, where that is not
   *  itself a match (a symlink whose name matches): the deny covers the target too. */
  globTargets?: ReadonlyMap<string, string[]>;
}

/** The directory of srt's own secrets: the key of stable sentinels (platform/sentinel-key.ts). */
export function srtSecretsDir(home: string): string {
  return join(home, '.srt', 'keys');
}

/** srt's own secrets, unreadable in every sandbox exactly like a denied credential file (with
 *  filesystem.disabled too, whatever the write roots). */
export function srtSecretRules(home: string): PathRule[] {
  return [{ path: srtSecretsDir(home), glob: false, original: '~/.srt/keys', source: { scope: 'default' } }];
}

/** Credential files are unreadable inside on macOS: `deny`, and `mask` too (no sentinel copy),
 *  exactly the credential plan's denyFiles there (Linux binds sentinel copies from the plan);
 *  srt's own secrets on every platform. */
export function credentialRules(policy: Policy): PathRule[] {
  return [...policy.credentials.files.map((f) => ({ path: f.path, glob: f.glob, original: f.path, source: f.source })), ...srtSecretRules(policy.home)];
}

/** The literal part of a rule: its path, or the directory before the glob's first wildcard. */
function baseOf(rule: PathRule): { base: string; tail?: string } {
  const lit = literalOf(rule);
  if (lit !== null) return { base: lit };
  const base = globBase(rule.path);
  return { base, tail: rule.path.slice(base === '/' ? 1 : base.length + 1) };
}

/** Deny-side glob rules (their matching symlinks' targets are denied too: `globTargets`). */
export function denyGlobRules(policy: Policy): PathRule[] {
  const fs = policy.filesystem;
  return [...fs.denyRead, ...fs.denyWrite, ...credentialRules(policy)].filter((r) => r.glob && literalOf(r) === null);
}

/** Every literal path (and glob base) whose landing the platform must resolve. */
export function accessPaths(policy: Policy, worktree?: AccessFacts['worktree']): string[] {
  const fs = policy.filesystem;
  const paths = new Set<string>([policy.cwd]);
  for (const r of [...fs.allowWrite, ...fs.denyWrite, ...fs.denyRead, ...fs.allowRead, ...credentialRules(policy)]) paths.add(baseOf(r).base);
  if (worktree) paths.add(worktree.commonDir).add(worktree.gitDir);
  return [...paths];
}

function describe(source: Source): string {
  if (source.flag) return `${source.scope} ${source.flag}`;
  return source.file ? `${source.scope} ${source.file}` : source.scope;
}

export interface WriteRoots {
  /** Real paths, one rule each, with the highest trust of the entries that land there. */
  roots: AccessRule[];
  warnings: string[];
  notes: string[];
}

/**
 * The writable roots of a policy (SPEC §3), the one derivation of every backend and of srt
 * doctor: the current directory, each `allowWrite` entry where it lands, and a linked worktree's
 * main `.git` and its own git dir. srt's TMPDIR is not among them (`ownWritable`). An entry is
 * left out, with a warning, when it is a glob, when it does not exist (nothing to make writable:
 * create it first), when it runs through a symlink (a link planted by an earlier run, `build ->
 * ~`, must not widen a later one; links root owns in directories root owns, `/var/run -> /run`,
 * are part of the system and stay usable unless they lie in the home directory, the current
 * directory or another writable root), and when a project or local file's entry leads outside
 * the project (SPEC §2.4).
 */
export function writeRootsOf(policy: Policy, landing: (p: string) => Landing, worktree?: AccessFacts['worktree']): WriteRoots {
  const warnings: string[] = [];
  const notes: string[] = [];
  const roots = new Map<string, AccessRule>();
  const add = (l: Landing, kind: AccessKind, trust: number, origin: string) => {
    if (l.kind !== 'dir' && l.kind !== 'file') {
      notes.push(`${origin}: does not exist, not writable`);
      return;
    }
    const had = roots.get(l.real);
    if (!had || had.trust < trust) roots.set(l.real, { kind, region: { base: l.real }, trust, origin });
  };
  const cwd = landing(policy.cwd);
  if (cwdIsWriteRoot(policy)) add(cwd, 'cwd', TRUST.default, `the current directory ${cwd.real}`);
  const entries: { rule: PathRule; l: Landing }[] = [];
  for (const r of policy.filesystem.allowWrite) {
    const lit = literalOf(r);
    if (lit === null) {
      warnings.push(`filesystem.allowWrite: ${r.original}: globs are not supported for write paths; entry ignored (name the directory instead)`);
      continue;
    }
    const l = landing(lit);
    if (l.kind === 'missing') {
      warnings.push(`filesystem.allowWrite: ${r.original} does not exist, so it is not writable in this run (srt makes only existing paths writable; create it first)`);
    }
    entries.push({ rule: r, l });
  }
  const direct = [policy.cwd, policy.home, ...entries.filter((e) => !e.l.via?.length).map((e) => e.l.real)];
  for (const { rule: r, l } of entries) {
    const planted = (l.via ?? []).find((v) => !v.system || direct.some((d) => isWithin(v.link, d)));
    if (planted) {
      warnings.push(`filesystem.allowWrite: ${r.original}: runs through the symlink ${planted.link} -> ${planted.target}; entry ignored ` +
        `(a sandboxed command could have planted that link; name the directory it points to instead)`);
      continue;
    }
    if ((r.source.scope === 'project' || r.source.scope === 'local') && l.kind !== 'missing' && !isWithin(l.real, policy.root)) {
      warnings.push(`${r.source.file ?? r.source.scope}: filesystem.allowWrite: ${r.original} leads to ${l.real}, outside the project root ${policy.root}; ignored`);
      continue;
    }
    add(l, 'allowWrite', trustOf(r), `allowWrite ${r.original} (${describe(r.source)})`);
  }
  if (worktree) {
    // The worktree's own git dir lies inside the protected `worktrees/` directory of the main one.
    for (const dir of [worktree.commonDir, worktree.gitDir]) add(landing(dir), 'worktree', TRUST.default, `git worktree ${dir}`);
  }
  if (!cwdIsWriteRoot(policy) && ![...roots.keys()].some((r) => isWithin(cwd.real, r))) {
    notes.push(`the current directory is read-only: ${policy.filesystem.wholeWriteList!.file ?? 'a reference-tool file'} lists every writable path in filesystem.allowWrite, and not it (add "." there to make it writable)`);
  }
  return { roots: [...roots.values()], warnings, notes };
}

export function buildAccessRules(policy: Policy, facts: AccessFacts): AccessRules {
  const fs = policy.filesystem;
  const warnings: string[] = [];
  const notes: string[] = [];
  const errors: string[] = [];
  const landing = (p: string): Landing => facts.landings.get(p) ?? { real: p, kind: 'missing', firstMissing: p };
  const regionOf = (r: PathRule): Region => {
    const { base, tail } = baseOf(r);
    return tail === undefined ? { base: landing(base).real } : { base: landing(base).real, tail };
  };
  const resolvable = (key: string, r: PathRule): boolean => {
    const l = landing(baseOf(r).base);
    if (l.kind !== 'impossible' || l.why !== 'loop') return true;
    errors.push(`${key}: ${r.original}: srt cannot tell where ${l.real} leads (its symlinks loop or nest deeper than 40); fix the path or remove the entry`);
    return false;
  };
  const fromRule = (kind: AccessKind, r: PathRule, trust = trustOf(r)): AccessRule =>
    ({ kind, region: regionOf(r), trust, origin: `${kind} ${r.original} (${describe(r.source)})` });
  /** A deny rule, and for a glob the targets its matching symlinks lead to. */
  const denyRules = (kind: AccessKind, r: PathRule, trust = trustOf(r)): AccessRule[] => {
    const rule = fromRule(kind, r, trust);
    const targets = r.glob ? facts.globTargets?.get(r.path) ?? [] : [];
    return [rule, ...targets.map((t) => ({ ...rule, region: { base: t }, origin: `${rule.origin}, where a match leads: ${t}` }))];
  };
  const own = (kind: AccessKind, base: string, origin: string): AccessRule => ({ kind, region: { base }, trust: SRT_OWN, origin });

  const readDenies = credentialRules(policy).filter((r) => resolvable('credentials.files', r)).flatMap((r) => denyRules('credential', r, CREDENTIAL));
  const ownWritable = [own('srt', facts.tmpDir, 'srt TMPDIR')];
  if (fs.disabled) {
    // Only credential files stay hidden; everything else is the host's, writable where the user may write.
    const all: AccessRule = { kind: 'cwd', region: { base: '/' }, trust: TRUST.default, origin: 'filesystem.disabled' };
    return { readDenies, readAllows: [], writeRoots: [all], ownWritable, writeDenies: [], warnings, notes, errors };
  }
  readDenies.unshift(...fs.denyRead.filter((r) => resolvable('filesystem.denyRead', r)).flatMap((r) => denyRules('denyRead', r)));
  if (facts.runRoot) readDenies.push(own('srt', facts.runRoot, "other runs' directories"));

  const cwd = landing(policy.cwd);
  const planned = writeRootsOf(policy, landing, facts.worktree);
  warnings.push(...planned.warnings);
  notes.push(...planned.notes);
  const writeRoots = planned.roots;

  const readAllows: AccessRule[] = [
    ...fs.allowRead.map((r) => fromRule('allowRead', r)),
    ...writeRoots,
    ...ownWritable,
    own('srt', facts.runDir, 'srt run directory'),
    ...(facts.runtimeFiles ?? []).map((f) => own('srt', f.path, `srt runtime file ${f.path}`)),
  ];
  const rootPaths = writeRoots.map((w) => w.region.base);
  const writeDenies: AccessRule[] = [
    ...fs.denyWrite.filter((r) => resolvable('filesystem.denyWrite', r)).flatMap((r) => denyRules('denyWrite', r)),
    ...facts.protect(rootPaths).map((p): AccessRule => ({ kind: 'protected', region: p.region, trust: Infinity, origin: `protected ${p.why}` })),
  ];
  const rules = { readDenies, readAllows, writeRoots, ownWritable, writeDenies, warnings, notes, errors };
  const cwdRead = mayRead(rules, cwd.real);
  if (!cwdRead.allowed) {
    warnings.push(`the current directory ${cwd.real} is inside a denyRead region that only managed or cli settings may re-open (${cwdRead.rule!.origin}): the command sees it empty and cannot write it`);
  }
  return rules;
}

// --- matching

export function regionTokens(region: Region): GlobToken[] {
  if (region.tail === undefined) return literalTokens(region.base);
  return [...literalTokens(region.base === '/' ? '/' : `${region.base}/`), ...parseGlob(region.tail)];
}

// Matched without a RegExp: a glob from a settings file must not be able to backtrack forever.
const compiled = new WeakMap<Region, { test: (p: string) => boolean }>();
function regionRegExp(region: Region): { test: (p: string) => boolean } {
  let re = compiled.get(region);
  if (!re) {
    const tokens = regionTokens(region);
    compiled.set(region, (re = { test: (p) => matchTokens(tokens, p) }));
  }
  return re;
}

function depthOf(p: string): number {
  return p === '/' ? 0 : p.split('/').length - 1;
}

/** Prefixes of an absolute path, shallowest first, ending with the path itself. */
function prefixes(p: string): string[] {
  const out: string[] = [];
  for (let q = p; ; q = dirname(q)) {
    out.unshift(q);
    if (q === '/') return out;
  }
}

/** Depth of the shallowest prefix of `p` the region names (null: it does not cover `p`). */
export function coverDepth(region: Region, p: string): number | null {
  if (region.tail === undefined) return isWithin(p, region.base) ? depthOf(region.base) : null;
  if (!isWithin(p, region.base)) return null;
  const re = regionRegExp(region);
  for (const q of prefixes(p)) if (re.test(q)) return depthOf(q);
  return null;
}

export function sameRegion(a: Region, b: Region): boolean {
  return a.base === b.base && a.tail === b.tail;
}

/** Does `allow` re-open `deny` at `p` (both covering it)? */
export function reopens(allow: AccessRule, deny: AccessRule, p: string): boolean {
  if (allow.trust < deny.trust) return false;
  const a = coverDepth(allow.region, p);
  const d = coverDepth(deny.region, p);
  if (a === null || d === null) return false;
  if (allow.region.tail !== undefined && deny.region.tail !== undefined) return sameRegion(allow.region, deny.region);
  return a >= d;
}

export interface Verdict {
  allowed: boolean;
  /** The rule that decided: the deny that hides it, or the write root / re-opening allow. */
  rule?: AccessRule;
  why: string;
}

export function mayRead(rules: Pick<AccessRules, 'readDenies' | 'readAllows'>, p: string): Verdict {
  let opener: AccessRule | undefined;
  for (const d of rules.readDenies) {
    if (coverDepth(d.region, p) === null) continue;
    const a = rules.readAllows.find((r) => reopens(r, d, p));
    if (!a) return { allowed: false, rule: d, why: `hidden by ${d.origin}` };
    opener ??= a;
  }
  return opener ? { allowed: true, rule: opener, why: `re-opened by ${opener.origin}` } : { allowed: true, why: 'reads are allowed by default' };
}

export function mayWrite(rules: AccessRules, p: string): Verdict {
  const read = mayRead(rules, p);
  if (!read.allowed) return { allowed: false, ...(read.rule ? { rule: read.rule } : {}), why: `not readable: ${read.why}` };
  const own = rules.ownWritable.find((r) => coverDepth(r.region, p) !== null);
  if (own) return { allowed: true, rule: own, why: `inside ${own.origin}` };
  const root = rules.writeRoots.find((r) => coverDepth(r.region, p) !== null);
  if (!root) return { allowed: false, why: 'outside every writable path (the current directory, TMPDIR, filesystem.allowWrite)' };
  const deny = rules.writeDenies.find((r) => coverDepth(r.region, p) !== null);
  if (deny) return { allowed: false, rule: deny, why: `write-denied by ${deny.origin}` };
  return { allowed: true, rule: root, why: `inside ${root.origin}` };
}
