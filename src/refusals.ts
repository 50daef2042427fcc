// Refusals you can act on (SPEC §1): every read and write the sandbox refused, reported when the
// command ends, grouped by what refused it — a read-only place by the directory an allowWrite
// entry would name, a denyWrite/denyRead entry by that entry with its file and line — with what
// would allow it. The supervisor reports what the kernel refused (`K` records: a read-only mount,
// Landlock, a read-denied path, or the file's own permissions); this module tells them apart by
// the same policy and access model the run used (check.ts), and drops what the policy allows (the
// file's own permissions refused it, not srt). Advice is conservative: an entry is offered only
// when the access model, with that entry added, allows the writes it is offered for — so never a
// protected path, nothing a managed or credential rule keeps, never the home directory itself.

import { accessSync, constants, statSync } from 'node:fs';
import { dirname, join, posix, relative, sep } from 'node:path';
import { rulesFor, ruleEntry, settingsRuleOf, type CheckResult } from './check.js';
import { isWithin } from './glob.js';
import type { Policy, Source } from './policy.js';
import { credentialRules } from './profiles/access.js';
import type { AccessRule } from './profiles/access-rule.js';
import { mayRead, mayWrite } from './profiles/verdicts.js';
import { tooWideForCwd } from './profiles/write-roots.js';
import { resolveLanding } from './platform/landing.js';
import { PRESETS } from './settings/presets.js';
import { shellQuote } from './shell.js';
import {
  HOME_PROTECTED, HOME_PROTECTED_FILES, MANAGED_DIR, PROTECTED_DIR_NAMES, PROTECTED_FILE_NAMES, PROTECTED_SUFFIXES,
  TOOL_RUN_DIRS, USER_SETTINGS_FILES,
} from './profiles/protected.js';

/** A call the kernel refused inside the sandbox (the supervisor's `K` record). */
export interface KernelRefusal {
  op: string;
  path: string;
  err: string;
}

/** What would allow a read-only group: an allowWrite entry, made first when missing, or a preset. */
export interface WriteAdvice {
  entry: string;
  /** Not on the host yet: `mkdir -p` before the run. */
  make?: 'dir';
  /** A toolchain preset that makes exactly this writable (`--with npm`). */
  preset?: string;
}

export interface RefusalGroup {
  kind: 'read-only' | 'denyWrite' | 'denyRead' | 'credential' | 'protected';
  /** read-only: the directory (or file) an entry would name; else the deciding entry's path. */
  under: string;
  reads: number;
  writes: number;
  /** The distinct paths refused. */
  paths: string[];
  /** The settings entry that refused them (denyWrite, denyRead). */
  rule?: NonNullable<CheckResult['rule']>;
  /** read-only: what would allow it, or why nothing srt offers would. */
  advice?: WriteAdvice;
  noAdvice?: string;
}

/** One refused call, classified: the `--log` record of kind `write` or `read`. */
export interface RefusalRecord {
  kind: 'write' | 'read';
  op: string;
  path: string;
  rule: RefusalGroup['kind'];
  /** The deciding settings entry, for denyWrite/denyRead. */
  entry?: string;
  source?: Source;
  /** For read-only: the allowWrite entry that would allow it. */
  allow?: string;
}

// Below the home directory, a tool's own directory is the first component, or the second below
// these shared parents (~/.cache/pip, ~/.local/share/pnpm): the shared parent only when it is
// what the command tried to make.
const SHARED_HOME_DIRS = ['.cache', '.config', '.local/share', '.local/state', '.local/lib', '.var/app'];
const TEMP_DIRS = ['/tmp', '/var/tmp', '/dev/shm'];

function kindOf(path: string): 'dir' | 'file' | 'missing' {
  try {
    return statSync(path).isDirectory() ? 'dir' : 'file';
  } catch {
    return 'missing';
  }
}

/**
 * The path an allowWrite entry would name for a write refused at `p` (outside every writable path).
 * Inside the current directory (read-only by a reference-tool file's write list, say) that is the
 * current directory, the place srt itself makes writable, unless it is or holds the home directory.
 * Never a directory that holds the home directory when `p` lies outside it, but the next one
 * down on the way to `p`.
 */
export function allowTarget(p: string, home: string, cwd?: string): string {
  if (cwd !== undefined && p !== cwd && isWithin(p, cwd) && !isWithin(home, cwd) && tooWideForCwd(cwd, home) === null) return cwd;
  let target = broadTarget(p, home);
  if (isWithin(p, home)) return target;
  while (isWithin(home, target)) {
    const next = join(target, relative(target, p).split(sep)[0]!);
    if (next === p) break; // a file directly in it: only the directory itself would allow it
    target = next;
  }
  return target;
}

function broadTarget(p: string, home: string): string {
  if (isWithin(p, home) && p !== home) {
    const parts = relative(home, p).split(sep);
    for (const shared of SHARED_HOME_DIRS) {
      const s = shared.split('/');
      if (parts.length > s.length && s.every((c, i) => parts[i] === c)) return join(home, ...parts.slice(0, s.length + 1));
    }
    return join(home, parts[0]!);
  }
  for (const t of TEMP_DIRS) {
    if (isWithin(p, t) && p !== t) {
      const parts = relative(t, p).split(sep);
      return parts.length > 1 ? join(t, parts[0]!) : t;
    }
  }
  // Elsewhere: the nearest directory that exists (where the command began to write).
  let d = dirname(p);
  while (d !== '/' && kindOf(d) !== 'dir') d = dirname(d);
  return d;
}

/** Could the caller write here outside srt (the nearest existing path, for one that is missing)? */
function hostWritable(p: string): boolean {
  let d = p;
  while (d !== '/' && kindOf(d) === 'missing') d = dirname(d);
  try {
    accessSync(d, constants.W_OK);
    return true;
  } catch {
    return false;
  }
}

function tilde(p: string, home: string): string {
  return p === home ? '~' : isWithin(p, home) ? `~/${relative(home, p)}` : p;
}

/** The preset whose cache directory is exactly `entry`, when that preset is not already in force. */
function presetFor(entry: string, home: string, policy: Policy): string | undefined {
  const active = new Set(policy.filesystem.allowWrite.map((r) => r.source.preset).filter((x) => x !== undefined));
  for (const [name, p] of Object.entries(PRESETS)) {
    if (active.has(name)) continue;
    if (p.caches.some((c) => (c.startsWith('~/') ? join(home, c.slice(2)) : c) === entry)) return name;
  }
  return undefined;
}

/**
 * Classify what the kernel refused and what the supervisor refused (`bySrt`: its `R` records),
 * group it, and say what would allow each group. `protectedLeft`: the supervisor's refusals that
 * no settings entry decided (srt's protected paths, reported as such).
 */
export function classifyRefusals(policy: Policy, refused: readonly KernelRefusal[], bySrt: readonly { op: string; path: string }[]):
  { groups: RefusalGroup[]; records: RefusalRecord[]; protectedLeft: { op: string; path: string }[] } {
  const records: RefusalRecord[] = [];
  if (refused.length === 0 && bySrt.length === 0) return { groups: [], records, protectedLeft: [] };
  // Only protected paths were refused and no settings entry denies anything: nothing to name.
  const fs = policy.filesystem;
  if (refused.length === 0 && fs.denyWrite.length + fs.denyRead.length + credentialRules(policy).length === 0) {
    return { groups: [], records, protectedLeft: [...bySrt] };
  }
  const rules = rulesFor(policy);
  const home = resolveLanding(policy.home).real;
  const groups = new Map<string, Omit<RefusalGroup, 'paths'> & { calls: { path: string; op: string }[] }>();
  const add = (key: string, g: Omit<RefusalGroup, 'reads' | 'writes' | 'paths'>, r: RefusalRecord) => {
    const had = groups.get(key) ?? { ...g, reads: 0, writes: 0, calls: [] };
    if (r.kind === 'read') had.reads++;
    else had.writes++;
    had.calls.push({ path: r.path, op: r.op });
    groups.set(key, had);
    records.push(r);
  };
  const denied = (r: { op: string; path: string }, kind: 'read' | 'write', rule: AccessRule | undefined) => {
    const entry = rule ? ruleEntry(policy, rule) : undefined;
    const k = rule?.kind === 'denyWrite' || rule?.kind === 'credential' ? rule.kind
      : rule?.kind === 'protected' || rule?.kind === 'srt' ? 'protected' : 'denyRead';
    const under = entry ? entryPath(policy, rule!) ?? entry.entry : r.path;
    add(`${k}\0${rule?.origin ?? r.path}`, { kind: k, under, ...(entry ? { rule: entry } : {}) },
      { kind, op: r.op, path: r.path, rule: k, ...(entry ? { entry: entry.entry, source: entry.source } : {}) });
  };
  // A denyWrite entry inside a writable root is enforced by the supervisor: named, not "protected".
  const protectedLeft: { op: string; path: string }[] = [];
  for (const r of bySrt) {
    const v = mayWrite(rules, r.path);
    if (!v.allowed && v.rule && (v.rule.kind === 'denyWrite' || v.rule.kind === 'denyRead' || v.rule.kind === 'credential')) denied(r, 'write', v.rule);
    else protectedLeft.push(r);
  }
  const srtPaths = new Set(bySrt.map((r) => r.path));
  for (const r of refused) {
    const path = posix.normalize(r.path);
    if (srtPaths.has(path)) continue;
    const one = { ...r, path };
    if (r.op === 'read') {
      const v = mayRead(rules, path);
      if (!v.allowed) denied(one, 'read', v.rule);
      continue;
    }
    const v = mayWrite(rules, path);
    if (v.allowed) continue; // the file's own permissions, not the sandbox
    if (v.rule) { denied(one, 'write', v.rule); continue; }
    const target = allowTarget(path, home, resolveLanding(policy.cwd).real);
    add(`read-only\0${target}`, { kind: 'read-only', under: target }, { kind: 'write', op: r.op, path, rule: 'read-only' });
  }
  // A read-only group inside another one is that one's.
  const readOnly = [...groups.entries()].filter(([, g]) => g.kind === 'read-only');
  for (const [key, g] of readOnly) {
    const outer = readOnly.find(([k, o]) => k !== key && groups.has(k) && o.under !== g.under && isWithin(g.under, o.under));
    if (outer) {
      outer[1].writes += g.writes;
      outer[1].calls.push(...g.calls);
      groups.delete(key);
    }
  }
  for (const g of groups.values()) {
    if (g.kind !== 'read-only') continue;
    const advice = adviseWrite(policy, g.under, g.calls, home);
    if ('entry' in advice) g.advice = advice;
    else g.noAdvice = advice.none;
  }
  for (const rec of records) {
    if (rec.rule !== 'read-only') continue;
    const g = [...groups.values()].find((x) => x.kind === 'read-only' && isWithin(rec.path, x.under));
    if (g?.advice) rec.allow = g.advice.entry;
  }
  return {
    groups: [...groups.values()].map(({ calls, ...g }) => ({ ...g, paths: [...new Set(calls.map((p) => p.path))] })),
    records, protectedLeft,
  };
}

/** The path of the settings entry behind a deny rule (its glob text for a glob). */
function entryPath(policy: Policy, rule: AccessRule): string | undefined {
  return settingsRuleOf(policy, rule)?.path;
}

/**
 * Why an allowWrite entry would touch what srt protects, or null. srt protects ~/.ssh or ~/.local/bin
 * only where a writable root holds the home directory, so an entry of them (or around them)
 * would open what the protection is for: such an entry is never offered, nor one with a
 * protected name on its way (a `.git`, `.vscode`, `.bashrc`), nor one inside npx's cache.
 */
function protectedEntry(entry: string, home: string): string | null {
  const everywhere = [...HOME_PROTECTED, ...HOME_PROTECTED_FILES, ...USER_SETTINGS_FILES, '.srt'].map((p) => join(home, p));
  const hit = everywhere.find((p) => isWithin(entry, p) || isWithin(p, entry))
    ?? TOOL_RUN_DIRS.map((p) => join(home, p)).find((p) => isWithin(entry, p))
    ?? (isWithin(entry, MANAGED_DIR) || isWithin(MANAGED_DIR, entry) ? MANAGED_DIR : undefined);
  if (hit) return `${tilde(hit, home)} is protected`;
  const names = new Set<string>([...PROTECTED_FILE_NAMES, ...PROTECTED_DIR_NAMES, '.git']);
  const name = entry.split('/').find((c) => names.has(c) || PROTECTED_SUFFIXES.some((x) => c.endsWith(x)));
  return name ? `${name} is protected` : null;
}

/**
 * The allowWrite entry for a read-only group, checked by the access model: with the entry added
 * (and made, when missing), every write of the group must be allowed. Otherwise none is offered.
 */
function adviseWrite(policy: Policy, under: string, paths: { path: string; op: string }[], home: string): WriteAdvice | { none: string } {
  if (under === '/' || isWithin(home, under)) return { none: 'it would make the home directory writable' };
  // /usr, /etc, /opt: a system directory whole, never (a deeper directory may be offered).
  if (dirname(under) === '/' && !TEMP_DIRS.includes(under)) return { none: 'a system directory' };
  if (!hostWritable(under)) return { none: 'not writable outside srt either' };
  const guarded = protectedEntry(under, home);
  if (guarded) return { none: guarded };
  if (credentialRules(policy).some((c) => isWithin(c.path, under) || isWithin(under, c.path))) return { none: 'it holds credentials' };
  const exists = kindOf(under);
  // Only directories are offered: a file of the home directory (~/.node_repl_history) is bound
  // read-only whatever allowWrite says.
  if (exists === 'file' || (exists === 'missing' && paths.every((p) => p.path === under && p.op !== 'mkdir'))) {
    return { none: 'a file of its own, and srt offers directories only' };
  }
  const make = exists === 'missing' ? 'dir' as const : undefined;
  const source: Source = { scope: 'user', file: join(policy.home, '.srt', 'settings.json') };
  const widened: Policy = {
    ...policy,
    filesystem: { ...policy.filesystem, allowWrite: [...policy.filesystem.allowWrite, { path: under, glob: false, original: under, source }] },
  };
  const rules = rulesFor(widened, make ? [under] : []);
  const kept = paths.find((p) => !mayWrite(rules, p.path).allowed);
  if (kept) return { none: `srt keeps ${tilde(kept.path, home)} read-only whatever allows it` };
  const preset = presetFor(under, home, policy);
  return { entry: under, ...(make ? { make } : {}), ...(preset ? { preset } : {}) };
}

/** `mkdir -p DIR` for a shell, `~/` kept unquoted so that it expands. */
function mkdirCommand(dir: string, home: string): string {
  const t = tilde(dir, home);
  return `mkdir -p ${t.startsWith('~/') ? `~/${shellQuote(t.slice(2))}` : shellQuote(t)}`;
}

function count(n: number, what: string): string {
  return `${n} ${what}${n === 1 ? '' : 's'}`;
}

/** The lines printed when the command ends (without `srt: `), most refusals first. */
export function refusalReportLines(groups: readonly RefusalGroup[], policy: Pick<Policy, 'home' | 'root'>,
  describe: (s: Source) => string, max = 10): string[] {
  const home = policy.home;
  const sorted = [...groups].filter((g) => g.kind !== 'read-only' || g.advice || g.noAdvice !== 'not writable outside srt either')
    .sort((a, b) => b.reads + b.writes - (a.reads + a.writes));
  const lines: string[] = [];
  for (const g of sorted.slice(0, max)) {
    const under = tilde(g.under, home);
    // One path, the group's own: "refused writing ~/.x"; else how many, under what.
    const what = g.paths.length === 1 && g.paths[0] === g.under
      ? `${g.writes ? 'writing' : ''}${g.reads && g.writes ? ' and ' : ''}${g.reads ? 'reading' : ''} ${under}`
      : `${g.reads && g.writes ? `${count(g.writes, 'write')} and ${count(g.reads, 'read')}`
        : g.reads ? count(g.reads, 'read') : count(g.writes, 'write')} under ${under}`;
    if (g.kind === 'read-only') {
      const a = g.advice;
      let hint: string;
      if (!a) hint = `nothing srt offers allows it (${g.noAdvice})`;
      else if (a.preset) hint = `to allow, run with --with ${a.preset} or add "${a.preset}" to presets in ~/.srt/settings.json`;
      else {
        const made = a.make ? `${mkdirCommand(g.under, home)} and ` : '';
        hint = `to allow, ${made}add "${under}" to filesystem.allowWrite in ~/.srt/settings.json`;
      }
      lines.push(`refused ${what} (read-only): ${hint}`);
      continue;
    }
    const rule = g.rule;
    const where = rule ? (rule.source.file && rule.source.preset === undefined
      ? `${tilde(rule.source.file, home)}${rule.line !== undefined ? `:${rule.line}` : ''}` : describe(rule.source)) : undefined;
    const named = rule ? `${g.kind} "${rule.entry}" in ${where}` : g.kind;
    lines.push(`refused ${what} (${named})`);
  }
  if (sorted.length > max) lines.push(`… and ${sorted.length - max} more places with refused reads or writes (--log FILE lists each)`);
  return lines;
}

/**
 * `srt --suggest`: the smallest settings snippet that would have allowed what was refused, from
 * what srt itself offered: allowWrite entries and presets of the read-only groups that have one,
 * and the destinations refused for not being listed (`domains`, entries as `--allow-domain` takes
 * them) whose only way is a user entry. Nothing else: no deny entry is undone, nothing a trust
 * rule would ignore, no protected place, no credential. `commands`: what to run first (mkdir -p).
 */
export function suggestion(groups: readonly RefusalGroup[], domains: readonly string[], home: string):
  { settings: Record<string, unknown>; commands: string[] } | null {
  const presets = new Set<string>();
  const writes = new Set<string>();
  const commands: string[] = [];
  for (const g of groups) {
    const a = g.advice;
    if (g.kind !== 'read-only' || !a) continue;
    if (a.preset) { presets.add(a.preset); continue; }
    writes.add(tilde(a.entry, home));
    if (a.make) commands.push(mkdirCommand(a.entry, home));
  }
  const settings: Record<string, unknown> = {};
  if (presets.size) settings.presets = [...presets].sort();
  if (domains.length) settings.network = { allowedDomains: [...new Set(domains)] };
  if (writes.size) settings.filesystem = { allowWrite: [...writes].sort() };
  return Object.keys(settings).length ? { settings, commands } : null;
}
