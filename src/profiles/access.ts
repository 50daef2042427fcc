// The access model (pure), shared by every backend: may the command read / write this path, and
// which rule says so. Backends translate the same rules into their mechanism (bubblewrap mounts,
// Seatbelt filters); tests hold each translation against mayRead/mayWrite.
//
// Every rule names a region: a real path and everything below it, or (for a glob) every path
// that has a prefix matching the glob. Paths are real paths: the platform resolves symlinks first
// (a write is judged where it lands).
//   read:  hidden when a denyRead (or a credential file) covers it that no allowRead re-opens. An
//          allowRead re-opens a deny when it is at least as specific and of at least the deny's
//          trust (TRUST in access-rule.ts). "As specific": the prefix of the path it matches is at least as
//          deep as the deny's; when both rules are globs, only the same glob re-opens. A path
//          writable by policy counts as allowRead of its scope (writing blind makes no sense).
//   write: readable AND (inside srt's own TMPDIR, OR inside a write root and inside no denyWrite
//          or protected path: denyWrite wins whatever its depth and scope).

import { join } from 'node:path';
import { globBase } from '../glob.js';
import type { PathRule, Policy } from '../policy.js';
import { trustRecordPath } from '../settings/approvals.js';
import {
  CREDENTIAL, describeSource, literalOf, SRT_OWN, TRUST, trustOf, type AccessKind, type AccessRule, type ProtectedRegion,
} from './access-rule.js';
import type { Landing } from './landing.js';
import type { Region } from './region.js';
import { mayRead } from './verdicts.js';
import { writeRootsOf } from './write-roots.js';

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
    const origin = `${kind} ${r.original} (${describeSource(r.source)})`;
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
