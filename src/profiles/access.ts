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
import { globBase, isGlob, isWithin, literalTokens, matchTokens, parseGlob, selfAndAncestors, type GlobToken } from '../glob.js';
import type { PathRule, Policy, Scope, Source } from '../policy.js';
import { trustRecordPath } from '../settings/approvals.js';
import type { Landing } from './landing.js';

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
  | 'denyRead' | 'allowRead' | 'credential' | 'allowWrite' | 'denyWrite' | 'protected' | 'cwd' | 'worktree' | 'srt' | 'copy';

export interface AccessRule {
  kind: AccessKind;
  region: Region;
  trust: number;
  /** For messages and profile comments: `denyRead ~/.ssh (user /h/.srt/settings.json)`. */
  origin: string;
  /** Where the rule's literal path landed (a lowering mounts what exists and holds what does not). */
  landing?: Landing;
  /** That path as written, before symlinks. */
  written?: string;
  /** The settings entry, for a lowering's messages: `filesystem.denyRead: ~/.ssh`. */
  setting?: string;
  /** For a write deny: what must not appear where nothing is yet (a placeholder's kind). */
  shape?: 'file' | 'dir';
}

/** A protected path (SPEC §3) as the backend found or describes it: a region (macOS: patterns),
 *  or a path the search found, resolved like any rule's (Linux). */
export type ProtectedRegion = { region: Region; why: string } | { path: string; kind: 'file' | 'dir'; why: string };

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
  /** Globs expanded when the command is wrapped (Linux, SPEC §3): a glob rule covers the landings
   *  this gives (its matches now; for a deny also directories srt cannot read or name, whole)
   *  instead of a glob region. `key` names the setting, for notes and warnings. */
  expand?: (rule: PathRule, deny: boolean, key: string) => Landing[];
  /** With `expand`: read-deny globs are judged at each open (Linux's supervisor read gate), so they
   *  stay glob regions and are not expanded. */
  openTimeDenyGlobs?: boolean;
  /** Credential files unreadable inside: by default every credentials.files entry (macOS, no
   *  sentinel copies); on Linux the plan's denied files. */
  credentialDenies?: PathRule[];
  /** Files the command sees as a read-only copy (Linux's sentinel copies): readable, not writable. */
  copies?: string[];
}

/** The directory of srt's own secrets: the key of stable sentinels (platform/sentinel-key.ts). */
export function srtSecretsDir(home: string): string {
  return join(home, '.srt', 'keys');
}

/** srt's own secrets, unreadable in every sandbox exactly like a denied credential file (with
 *  filesystem.disabled too, whatever the write roots): the keys, and the record of the projects
 *  the user approved (which repositories on this machine an attacker's settings file would be
 *  trusted in, and what their approved content is: not the command's business). */
export function srtSecretRules(home: string): PathRule[] {
  const own = (path: string, original: string): PathRule => ({ path, glob: false, original, source: { scope: 'default' } });
  return [own(srtSecretsDir(home), '~/.srt/keys'), own(trustRecordPath(home), '~/.srt/trusted.json')];
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

/** Directories of the system: the current directory is never writable by default when it is one
 *  of them or holds one (an MCP client starts its servers in `/`). */
const SYSTEM_DIRS = ['/bin', '/boot', '/dev', '/etc', '/lib', '/lib32', '/lib64', '/libx32', '/opt', '/proc', '/run',
  '/sbin', '/srv', '/sys', '/usr', '/var', '/Applications', '/Library', '/System', '/private'];

/** Why the current directory is too wide to be writable by default, or null. */
export function tooWideForCwd(cwd: string, home: string): string | null {
  if (cwd === '/') return 'is the root directory';
  const system = SYSTEM_DIRS.find((d) => isWithin(d, cwd));
  if (system) return system === cwd ? 'is a system directory' : `holds the system directory ${system}`;
  if (home !== cwd && isWithin(home, cwd)) return `holds the home directory ${home}`;
  return null;
}

/**
 * The writable roots of a policy (SPEC §3), the one derivation of every backend and of srt
 * doctor: the current directory, each `allowWrite` entry where it lands, and a linked worktree's
 * main `.git` and its own git dir. srt's TMPDIR is not among them (`ownWritable`). An entry is
 * left out, with a warning, when it is a glob, when it does not exist (nothing to make writable:
 * create it first), when it runs through a symlink (a link planted by an earlier run, `build ->
 * ~`, must not widen a later one; links root owns in directories root owns, `/var/run -> /run`,
 * are part of the system and stay usable unless they lie in the home directory, the current
 * directory or another writable root), when it leads to a directory that holds the entry itself
 * (`area/up -> ..`), and when a project or local file's entry leads outside the project (SPEC §2.4).
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
  if (cwdIsWriteRoot(policy)) {
    const wide = tooWideForCwd(cwd.real, policy.home);
    if (wide) {
      warnings.push(`the current directory ${cwd.real} ${wide}, so it is read-only in this run; ` +
        `run srt from a project directory, or name what the command may write with --allow-write`);
    } else add(cwd, 'cwd', TRUST.default, `the current directory ${cwd.real}`);
  }
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
    // A symlink to one of its own ancestors (`area/up -> ..`) would make writable a directory
    // holding the entry itself, system link or not: it names more than the user wrote.
    const around = l.via?.length ? [literalOf(r)!, ...l.via.map((v) => v.link)].find((p) => isWithin(p, l.real)) : undefined;
    if (around !== undefined && l.kind !== 'missing') {
      warnings.push(`filesystem.allowWrite: ${r.original}: leads to ${l.real}, which holds ${around} itself (a symlink to an ancestor of its own); ` +
        'entry ignored (name the directory meant instead)');
      continue;
    }
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
  /**
   * The region of one landing. A deny entry through a symlink loop would silently deny nothing
   * (the command could replace the loop and write the path): no sandbox starts. A deny inside a
   * directory srt cannot search (EACCES) cannot be placed, yet the command may open that directory
   * up (its owner can chmod it, inside or from outside during the run): the deny covers that whole
   * directory, which takes nothing away the command could reach now. An existing file where a
   * directory of a write-denied path would be is kept, so the path cannot appear.
   */
  const landed = (l: Landing, deny: 'read' | 'write' | false, what: string): Region | null => {
    if (l.kind !== 'impossible' || !deny) return { base: l.real };
    if (l.why === 'loop') {
      errors.push(`${what}: srt cannot tell where ${l.real} leads (its symlinks loop or nest deeper than 40); fix the path or remove the entry`);
      return null;
    }
    if (l.why === 'unreadable') {
      if (!l.blockedBy) {
        errors.push(`${what}: srt cannot look at ${l.real}; fix its permissions or remove the entry`);
        return null;
      }
      warnings.push(`${what}: srt cannot search ${l.blockedBy} (permission denied), so it cannot find ${l.real}: ` +
        `all of ${l.blockedBy} is ${deny === 'write' ? 'read-only' : 'hidden'} in this sandbox (make it searchable, e.g. chmod u+x, to deny only the entry)`);
      return { base: l.blockedBy };
    }
    return deny === 'write' && l.blockedBy ? { base: l.blockedBy } : { base: l.real };
  };
  /** A settings rule's regions: where its path lands, or for a glob its region (with, for a deny,
   *  the targets its matching symlinks lead to), or on Linux its matches now. */
  const rulesOf = (kind: AccessKind, r: PathRule, key: string, deny: 'read' | 'write' | false, trust = trustOf(r), shape?: 'file' | 'dir'): AccessRule[] => {
    const origin = `${kind} ${r.original} (${describe(r.source)})`;
    const one = (l: Landing, written?: string): AccessRule[] => {
      const setting = `${key}: ${r.original}`;
      const region = landed(l, deny, setting);
      return region ? [{ kind, region, trust, origin, landing: l, setting, ...(written !== undefined ? { written } : {}), ...(shape ? { shape } : {}) }] : [];
    };
    const lit = literalOf(r);
    if (lit !== null) return one(landing(lit), lit);
    if (facts.expand && !(deny === 'read' && facts.openTimeDenyGlobs)) return facts.expand(r, deny !== false, key).flatMap((l) => one(l));
    const { base, tail } = baseOf(r);
    const l = landing(base);
    const at = landed(l, deny, `${key}: ${r.original}`);
    if (!at) return [];
    if (at.base !== l.real) return [{ kind, region: at, trust, origin, landing: l }];
    const rule: AccessRule = { kind, region: { base: l.real, tail: tail! }, trust, origin };
    const targets = deny ? facts.globTargets?.get(r.path) ?? [] : [];
    return [rule, ...targets.map((t) => ({ ...rule, region: { base: t }, origin: `${rule.origin}, where a match leads: ${t}` }))];
  };
  const own = (kind: AccessKind, base: string, origin: string): AccessRule => ({ kind, region: { base }, trust: SRT_OWN, origin });

  const readDenies = (facts.credentialDenies ?? credentialRules(policy)).flatMap((r) => rulesOf('credential', r, 'credentials.files', 'read', CREDENTIAL));
  const ownWritable = [own('srt', facts.tmpDir, 'srt TMPDIR')];
  const copies = (facts.copies ?? []).map((c): AccessRule => ({ kind: 'copy', region: { base: c }, trust: CREDENTIAL, origin: `the sentinel copy over ${c}` }));
  if (fs.disabled) {
    // Only credential files stay hidden; everything else is the host's, writable where the user may write.
    const all: AccessRule = { kind: 'cwd', region: { base: '/' }, trust: TRUST.default, origin: 'filesystem.disabled' };
    return { readDenies, readAllows: [], writeRoots: [all], ownWritable, writeDenies: copies, warnings, notes, errors };
  }
  readDenies.unshift(...fs.denyRead.flatMap((r) => rulesOf('denyRead', r, 'filesystem.denyRead', 'read')));
  if (facts.runRoot) readDenies.push(own('srt', facts.runRoot, "other runs' directories"));

  const cwd = landing(policy.cwd);
  const planned = writeRootsOf(policy, landing, facts.worktree);
  warnings.push(...planned.warnings);
  notes.push(...planned.notes);
  const writeRoots = planned.roots;

  const readAllows: AccessRule[] = [
    ...fs.allowRead.flatMap((r) => rulesOf('allowRead', r, 'filesystem.allowRead', false)),
    ...writeRoots,
    ...ownWritable,
    own('srt', facts.runDir, 'srt run directory'),
    ...(facts.runtimeFiles ?? []).map((f) => own('srt', f.path, `srt runtime file ${f.path}`)),
  ];
  const rootPaths = writeRoots.map((w) => w.region.base);
  const protectedRules = facts.protect(rootPaths).flatMap((p): AccessRule[] => {
    if ('region' in p) return [{ kind: 'protected', region: p.region, trust: Infinity, origin: `protected ${p.why}` }];
    const l = landing(p.path);
    const region = landed(l, 'write', `protected path ${p.path}`);
    return region ? [{ kind: 'protected', region, trust: Infinity, origin: `protected ${p.why}`, landing: l, written: p.path, shape: p.kind }] : [];
  });
  const writeDenies: AccessRule[] = [
    ...fs.denyWrite.flatMap((r) => rulesOf('denyWrite', r, 'filesystem.denyWrite', 'write', trustOf(r), 'file')),
    ...protectedRules,
    ...copies,
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

/** Rules by kind of region: literal ones keyed by path (the highest trust there), glob ones listed. */
function byRegion(rules: AccessRule[]): { literal: Map<string, number>; globs: AccessRule[] } {
  const literal = new Map<string, number>();
  const globs: AccessRule[] = [];
  for (const r of rules) {
    if (r.region.tail !== undefined) globs.push(r);
    else literal.set(r.region.base, Math.max(r.trust, literal.get(r.region.base) ?? -Infinity));
  }
  return { literal, globs };
}

/**
 * mayRead's and mayWrite's answers without their reasons, for a lowering that asks about every
 * path it mounts: literal regions are looked up along the path's own chain (the path, its parent,
 * …, "/") instead of scanned (with 1,000 denied files, scanning took 0.15 s). Same rules, same
 * answers (test/unit/access.test.ts holds them together).
 */
export function accessIndex(rules: AccessRules): { read: (p: string) => boolean; write: (p: string) => boolean } {
  const denies = byRegion(rules.readDenies);
  const allows = byRegion(rules.readAllows);
  const covers = (x: ReturnType<typeof byRegion>, chain: string[], p: string) =>
    chain.some((q) => x.literal.has(q)) || x.globs.some((g) => coverDepth(g.region, p) !== null);
  const [own, roots, writeDenies] = [rules.ownWritable, rules.writeRoots, rules.writeDenies].map(byRegion) as [
    ReturnType<typeof byRegion>, ReturnType<typeof byRegion>, ReturnType<typeof byRegion>];
  const answers = new Map<string, boolean>();
  const readNow = (p: string, chain: string[]): boolean => {
    // chain[i] lies i levels above p: an allow at chain[j], j <= i, is at least as deep as a deny at chain[i].
    const depth = (i: number) => chain.length - 1 - i;
    const allowAt = (j: number) => allows.literal.get(chain[j]!) ?? -Infinity;
    for (let i = 0; i < chain.length; i++) {
      const trust = denies.literal.get(chain[i]!);
      if (trust === undefined) continue;
      let reopened = false;
      for (let j = 0; j <= i && !reopened; j++) reopened = allowAt(j) >= trust;
      reopened ||= allows.globs.some((a) => a.trust >= trust && (coverDepth(a.region, p) ?? -1) >= depth(i));
      if (!reopened) return false;
    }
    for (const d of denies.globs) {
      const at = coverDepth(d.region, p);
      if (at === null) continue;
      let reopened = allows.globs.some((a) => a.trust >= d.trust && sameRegion(a.region, d.region));
      for (let j = 0; j < chain.length && !reopened; j++) reopened = depth(j) >= at && allowAt(j) >= d.trust;
      if (!reopened) return false;
    }
    return true;
  };
  const read = (p: string): boolean => {
    let r = answers.get(p);
    if (r === undefined) answers.set(p, (r = readNow(p, selfAndAncestors(p))));
    return r;
  };
  const write = (p: string): boolean => {
    if (!read(p)) return false;
    const chain = selfAndAncestors(p);
    return covers(own, chain, p) || (covers(roots, chain, p) && !covers(writeDenies, chain, p));
  };
  return { read, write };
}
