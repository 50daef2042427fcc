// Approval of project and local settings files (SPEC §2.4, `srt trust`). A repository's settings
// file was written by whoever wrote the repository, or by a command that ran in a sandbox there
// earlier; its allow entries apply only once the user has approved that file's exact content.
// An approval is the file's path and the SHA-256 of its bytes, recorded in `~/.srt/trusted.json`,
// which no sandbox can write (a protected path) or read (profiles/access.ts srtSecretRules). A
// changed file is unapproved again.

import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** Decides whether a project/local file's allow entries apply. Tools embedding srt may pass their
 *  own (e.g. one that asks the user); the default is the `srt trust` record under `~/.srt/`. */
export interface ApprovalSource {
  isApproved(file: { path: string; sha256: string }): boolean;
}

export interface Approval {
  path: string;
  sha256: string;
  /** ISO 8601. */
  approvedAt: string;
}

interface TrustRecord {
  version: 1;
  approved: Approval[];
}

export function trustRecordPath(home: string): string {
  return join(home, '.srt', 'trusted.json');
}

function parseRecord(text: string): Approval[] {
  const doc = JSON.parse(text) as Partial<TrustRecord>;
  if (doc === null || typeof doc !== 'object' || doc.version !== 1 || !Array.isArray(doc.approved)) throw new Error('not a version 1 trust record');
  for (const a of doc.approved) {
    if (a === null || typeof a !== 'object' || typeof a.path !== 'string' || typeof a.sha256 !== 'string' || !/^[0-9a-f]{64}$/.test(a.sha256) || typeof a.approvedAt !== 'string') {
      throw new Error('malformed entry');
    }
  }
  return doc.approved;
}

/**
 * The approvals recorded under `home`. A missing record approves nothing; an unreadable or corrupt
 * one also approves nothing (never everything) and says so in `warning`.
 */
export function readApprovals(home: string): { approvals: Approval[]; warning?: string } {
  const file = trustRecordPath(home);
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { approvals: [] };
    return { approvals: [], warning: `${file}: cannot read the approvals (${(err as NodeJS.ErrnoException).code ?? (err as Error).message}); treating every project settings file as not approved` };
  }
  try {
    return { approvals: parseRecord(text) };
  } catch (err) {
    return { approvals: [], warning: `${file}: corrupt (${(err as Error).message}); treating every project settings file as not approved until you approve them again with srt trust` };
  }
}

/** The default ApprovalSource: the record under `home`, read once. */
export function recordedApprovals(home: string): ApprovalSource & { warning?: string } {
  const { approvals, warning } = readApprovals(home);
  const source: ApprovalSource & { warning?: string } = {
    isApproved: ({ path, sha256 }) => approvals.some((a) => a.path === path && a.sha256 === sha256),
  };
  if (warning) source.warning = warning;
  return source;
}

/** Replace the record (atomically: a concurrent reader sees the old or the new one, whole). */
export function writeApprovals(home: string, approvals: Approval[]): void {
  const file = trustRecordPath(home);
  mkdirSync(join(home, '.srt'), { recursive: true, mode: 0o700 });
  const record: TrustRecord = { version: 1, approved: approvals };
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, JSON.stringify(record, null, 2) + '\n', { mode: 0o600 });
  renameSync(tmp, file);
}
