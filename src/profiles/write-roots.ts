// The writable roots of a policy (SPEC §3): the current directory unless it is too wide, each
// allowWrite entry that may be trusted where it lands, a linked worktree's git dirs.

import { isWithin } from '../glob.js';
import type { PathRule, Policy } from '../policy.js';
import type { AccessFacts } from './access.js';
import { describeSource, literalOf, TRUST, trustOf, type AccessKind, type AccessRule } from './access-rule.js';
import type { Landing } from './landing.js';

/** The current directory is a write root by default (SPEC §3), except under a reference-tool file
 *  whose allowWrite lists every writable path (then only an entry covering it makes it one). */
export function cwdIsWriteRoot(policy: Pick<Policy, 'filesystem'>): boolean {
  return policy.filesystem.wholeWriteList === undefined;
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
    add(l, 'allowWrite', trustOf(r), `allowWrite ${r.original} (${describeSource(r.source)})`);
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
