// The protected-path supervisor's protocol (init/supervisor.c): the rules file srt writes for it,
// the report it writes back, and that report in words (refusal lines).

import { posix } from 'node:path';
import { isWithin } from '../glob.js';
import { PROTECTED_SUFFIXES } from './protected.js';

/** The supervisor's name rules (see init/supervisor.c); roots and paths come from the mounts plan. */
export interface SupervisorRules {
  names: string[];
  suffixes: string[];
  gitInternals: string[];
  /** Exempt from the git-internal rules: a linked worktree's own git dir. */
  exempt: string[];
  markers: string[];
}

/**
 * The rules file the helper reads (`--protect`): NUL-terminated records, a letter and a value.
 * `roots`: where the name rules apply; `paths`: every write-denied path, wherever it is; `free`:
 * where no rule applies (srt's own TMPDIR, below the protected `~/.srt`); `hidden`: read-denied
 * paths and globs whose opens the supervisor refuses, with the paths inside them that stay readable.
 */
export function encodeRules(rules: SupervisorRules, roots: string[], paths: string[], free: string[] = [],
  hidden: { path: string; glob?: true; reopened: string[] }[] = []): Buffer {
  const records = [
    // A read-denied path (H) or glob (h) whose opens the supervisor refuses, then the paths in it
    // that stay readable (O).
    ...hidden.flatMap((h) => [`${h.glob ? 'h' : 'H'}${h.path}`, ...h.reopened.map((o) => `O${o}`)]),
    ...free.map((r) => `F${r}`),
    ...roots.map((r) => `W${r}`),
    ...paths.map((p) => `P${p}`),
    ...rules.exempt.map((p) => `A${p}`),
    ...rules.names.map((n) => `N${n}`),
    ...rules.suffixes.map((s) => `S${s}`),
    ...rules.gitInternals.map((g) => `G${g}`),
    ...rules.markers.map((m) => `M${m}`),
  ];
  for (const r of records) if (r.length < 2 || r.includes('\0')) throw new Error(`protected-path rule ${JSON.stringify(r)} cannot be encoded`);
  return Buffer.from(records.map((r) => `${r}\0`).join(''));
}

/** What the supervisor reported (`--report-fd`, init/supervisor.c): refused calls, repository markers
 *  created, and calls the kernel refused. */
export interface SupervisorReport {
  /** `rule`: which rule refused it, as init/rules.c names it (`N.vscode`, `Ghooks`, `P/path`, `R.git`). */
  refused: { op: string; path: string; rule?: string }[];
  /** Where a new repository's git dir may be: as made, and where each ended up when the run ended. */
  created: string[];
  /** Refusals past the supervisor's list, counted only. */
  unlisted: number;
  /** More new repositories than the supervisor followed: srt must search for them itself. */
  lostTrack: boolean;
  /** Calls the kernel refused (`more`: past those listed, some were not). */
  kernel: { op: string; path: string; err: string }[];
  more: boolean;
  /** TCP connections to a loopback address and port nothing listened on inside, counted
   *  (`connectsUnlisted`: to pairs past the supervisor's list). */
  connects: { address: string; port: number; count: number }[];
  connectsUnlisted: number;
}

/** Parse the report: NUL-terminated fields, records `R` op path rule, `C` path, `N` count, `T`,
 *  `K` op path errno, `X`, `L` address port count, `Y` count. */
export function parseReport(buf: Buffer): SupervisorReport {
  const fields = buf.toString('utf8').split('\0');
  const out: SupervisorReport = { refused: [], created: [], unlisted: 0, lostTrack: false, kernel: [], more: false, connects: [], connectsUnlisted: 0 };
  for (let i = 0; i < fields.length;) {
    const kind = fields[i];
    if (kind === 'R' && i + 3 < fields.length) { out.refused.push({ op: fields[i + 1]!, path: fields[i + 2]!, rule: fields[i + 3]! }); i += 4; }
    else if (kind === 'C' && i + 1 < fields.length) { out.created.push(fields[i + 1]!); i += 2; }
    else if (kind === 'N' && i + 1 < fields.length) { out.unlisted += Number(fields[i + 1]) || 0; i += 2; }
    else if (kind === 'T' && i + 1 < fields.length) { out.lostTrack = true; i += 1; }
    else if (kind === 'K' && i + 3 < fields.length) { out.kernel.push({ op: fields[i + 1]!, path: fields[i + 2]!, err: fields[i + 3]! }); i += 4; }
    else if (kind === 'X' && i + 1 < fields.length) { out.more = true; i += 1; }
    else if (kind === 'L' && i + 3 < fields.length) {
      out.connects.push({ address: fields[i + 1]!, port: Number(fields[i + 2]), count: Number(fields[i + 3]) || 0 });
      i += 4;
    } else if (kind === 'Y' && i + 1 < fields.length) { out.connectsUnlisted += Number(fields[i + 1]) || 0; i += 2; }
    else break; // the rest was cut short
  }
  return out;
}

const VERBS: Record<string, string> = {
  create: 'writing', write: 'writing', 'create in': 'writing in', remove: 'removing', move: 'moving',
  replace: 'replacing', link: 'linking', chmod: 'changing the mode of', chown: 'changing the owner of',
  setxattr: 'setting an extended attribute or ACL on', removexattr: 'removing an extended attribute or ACL of',
};

/**
 * The rule behind a refusal, in words. `pathWhy`: why a protected path is protected where srt
 * knows more than its name (a link's target, an include), for `P` rules.
 */
export function describeRule(rule: string | undefined, pathWhy: (path: string) => string | undefined = () => undefined): string | undefined {
  if (!rule) return undefined;
  const what = rule.slice(1);
  switch (rule[0]) {
    case 'N': return `${(PROTECTED_SUFFIXES as readonly string[]).includes(what) ? `*${what}` : what} in a directory that existed before the run`;
    case 'G': return `${what} of a repository that existed before the run`;
    case 'R': return 'the .git of a repository that existed before the run';
    case 'P': return pathWhy(what);
    default: return undefined;
  }
}

/**
 * One line per refused path (first `max`, then a count of the rest, `unlisted` included), each
 * naming the rule; paths relative to cwd where inside it.
 */
export function refusalLines(refused: SupervisorReport['refused'], cwd: string, max = 10, opts: { unlisted?: number; pathWhy?: (path: string) => string | undefined } = {}): string[] {
  const seen = new Map<string, { op: string; rule?: string }>();
  for (const r of refused) if (!seen.has(r.path)) seen.set(r.path, r);
  const lines: string[] = [];
  for (const [path, { op, rule }] of seen) {
    if (lines.length === max) break;
    const shown = isWithin(path, cwd) && path !== cwd ? posix.relative(cwd, path) : path;
    const named = describeRule(rule, opts.pathWhy);
    lines.push(`refused ${VERBS[op] ?? 'writing'} ${shown} (protected${named ? `: ${named}` : ''})`);
  }
  const more = seen.size - lines.length + (opts.unlisted ?? 0);
  if (more > 0) lines.push(`… and ${more} more refused writes to protected paths`);
  return lines;
}
