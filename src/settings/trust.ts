// `srt trust [FILE] | --list | --revoke FILE` (SPEC §1, §2.4): which files an approval is for,
// recording and revoking it, and what an approval lets through. Throws SettingsError; the CLI prints.

import { lstatSync, realpathSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { readApprovals, trustRecordPath, writeApprovals, type Approval } from './approvals.js';
import { SettingsError } from './errors.js';
import { discoverSettingsFiles, findRoot, readSettingsFile } from './files.js';
import type { IgnoredEntry, Policy } from '../policy.js';
import { buildPolicy, type SettingsLayer } from './policy-builder.js';

const NAMES = ['settings', 'settings.local'].flatMap((stem) => ['.json', '.yaml', '.yml'].map((ext) => stem + ext));

/** One file approved: its canonical path, the hash approved, the allow entries that now apply,
 *  and what the trust rules still ignore in it even approved. */
export interface ApprovedFile {
  path: string;
  sha256: string;
  allows: Array<{ key: string; values: string[] }>;
  ignored: IgnoredEntry[];
}

function exists(path: string): boolean {
  try {
    lstatSync(path);
    return true;
  } catch {
    return false;
  }
}

/**
 * The path srt itself finds the file under (`<root>/.srt/<name>`, the root's symlinks resolved, as
 * discovery resolves cwd), or a SettingsError saying why it is not a file `srt trust` approves.
 */
function canonicalSettingsPath(file: string, cwd: string, home: string): string {
  const path = resolve(cwd, file);
  if (!exists(path)) throw new SettingsError(`${path}: no such file`);
  const dotSrt = dirname(path);
  if (basename(dotSrt) !== '.srt' || !NAMES.includes(basename(path))) {
    throw new SettingsError(`${path}: not a project or local settings file; srt trust approves <project>/.srt/settings.json or <project>/.srt/settings.local.json (or .yaml/.yml)`);
  }
  let project: string;
  try {
    project = realpathSync(dirname(dotSrt));
  } catch (err) {
    throw new SettingsError(`${path}: cannot resolve its directory: ${(err as Error).message}`);
  }
  if (project === realpathOr(home)) {
    throw new SettingsError(`${path}: this is your user settings file, which applies without approval; srt trust is for a repository's files`);
  }
  return join(project, '.srt', basename(path));
}

function realpathOr(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    return resolve(path);
  }
}

/** The files `srt trust` with no FILE approves: the project and local files of the project root here. */
export function filesApplyingHere(cwd: string, home: string): string[] {
  const root = findRoot(realpathOr(cwd));
  const found = root === realpathOr(home) ? [] : NAMES.map((n) => join(root, '.srt', n)).filter(exists);
  if (found.length === 0) {
    throw new SettingsError(`no project or local settings file applies in ${cwd} (looked for ${join(root, '.srt', 'settings.json')} and settings.local.json)`);
  }
  return found;
}

/** Allow entries of a policy that open nothing, as ignored entries (the access model knows them: check.ts). */
export type Overruled = (policy: Policy) => IgnoredEntry[];

/** What the file does once approved, judged as srt will judge it in its project (validation errors
 *  throw): among the managed and user files and the parent directories' project files, whose denies
 *  its allow entries never re-open (`overruled` names those entries). */
function effectOf(settings: unknown, path: string, home: string, overruled?: Overruled): Pick<ApprovedFile, 'allows' | 'ignored'> {
  const project = dirname(dirname(path));
  const scope = basename(path).startsWith('settings.local') ? 'local' : 'project';
  const others = discoverSettingsFiles({ cwd: project, home, root: project })
    .filter((f) => (f.scope !== 'project' && f.scope !== 'local') || f.outsideRoot)
    .map((f): SettingsLayer => ({
      scope: f.scope, file: f.path, base: f.base, settings: readSettingsFile(f.path).settings,
      ...(f.outsideRoot ? { approval: 'outside-root' as const } : {}), ...(f.reference ? { reference: true as const } : {}),
    }));
  const p = buildPolicy({ cwd: project, home, root: project }, [...others, { scope, file: path, base: project, settings, approval: 'approved' }]);
  const ignored = [...p.ignored, ...(overruled?.(p) ?? [])].filter((i) => i.source.file === path);
  const applies = (key: string, original: string) => !ignored.some((i) => i.key.startsWith(key) && i.value === original);
  const mine = <T extends { source: { file?: string } }>(list: T[]) => list.filter((x) => x.source.file === path);
  const lists: Array<[string, string[]]> = [
    ['network.allowedDomains', mine(p.network.allowedDomains).map((d) => d.rule.raw)],
    ['filesystem.allowWrite', mine(p.filesystem.allowWrite).map((r) => r.original).filter((o) => applies('filesystem.allowWrite', o))],
    ['filesystem.allowRead', mine(p.filesystem.allowRead).map((r) => r.original).filter((o) => applies('filesystem.allowRead', o))],
  ];
  return { allows: lists.filter(([, v]) => v.length > 0).map(([key, values]) => ({ key, values: [...new Set(values)] })), ignored };
}

function record(home: string, approvals: Approval[]): void {
  try {
    writeApprovals(home, approvals);
  } catch (err) {
    const inside = process.env.SRT_SANDBOX === '1' ? ' (inside an srt sandbox ~/.srt is read-only: approve from outside)' : '';
    throw new SettingsError(`cannot record the approval in ${trustRecordPath(home)}: ${(err as Error).message}${inside}`);
  }
}

/** Approve each file's current content. A file that does not parse or validate is refused whole. */
export function approve(files: string[], opts: { cwd: string; home: string; overruled?: Overruled }): ApprovedFile[] {
  const approved: ApprovedFile[] = [];
  for (const file of files) {
    const path = canonicalSettingsPath(file, opts.cwd, opts.home);
    // One read: the hash recorded is the hash of exactly what was validated.
    const { settings, sha256 } = readSettingsFile(path);
    approved.push({ path, sha256, ...effectOf(settings, path, opts.home, opts.overruled) });
  }
  const { approvals } = readApprovals(opts.home);
  const now = new Date().toISOString();
  const kept = approvals.filter((a) => !approved.some((f) => f.path === a.path));
  record(opts.home, [...kept, ...approved.map((f) => ({ path: f.path, sha256: f.sha256, approvedAt: now }))]);
  return approved;
}

export type ApprovalStatus = 'approved' | 'changed' | 'missing';

/** Every recorded approval with whether it still matches the file (and the record's own warning). */
export function listApprovals(home: string): { entries: Array<Approval & { status: ApprovalStatus }>; warning?: string } {
  const { approvals, warning } = readApprovals(home);
  const entries = approvals.map((a) => {
    let status: ApprovalStatus;
    try {
      status = readSettingsFile(a.path).sha256 === a.sha256 ? 'approved' : 'changed';
    } catch {
      status = exists(a.path) ? 'changed' : 'missing';
    }
    return { ...a, status };
  });
  return warning ? { entries, warning } : { entries };
}

/** Remove the approval of `file`; false when it had none. */
export function revoke(file: string, opts: { cwd: string; home: string }): { path: string; revoked: boolean } {
  const given = resolve(opts.cwd, file);
  // The file may be gone already: match the recorded path as given and as discovery would spell it.
  let path = given;
  try {
    path = join(realpathSync(dirname(dirname(given))), basename(dirname(given)), basename(given));
  } catch { /* its directory is gone too */ }
  const { approvals } = readApprovals(opts.home);
  const kept = approvals.filter((a) => a.path !== path && a.path !== given);
  if (kept.length === approvals.length) return { path, revoked: false };
  record(opts.home, kept);
  return { path, revoked: true };
}
