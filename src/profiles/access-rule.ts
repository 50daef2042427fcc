// One access rule (pure): the region it names, the trust of the settings it comes from, and
// where it comes from, for messages. access.ts builds a run's rules; verdicts.ts judges paths by them.

import { isGlob } from '../glob.js';
import type { PathRule, Scope, Source } from '../policy.js';
import type { Landing } from './landing.js';
import type { Region } from './region.js';

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

/** Where a rule comes from, for messages: `user /h/.srt/settings.json`, `cli --allow-write`. */
export function describeSource(source: Source): string {
  if (source.flag) return `${source.scope} ${source.flag}`;
  return source.file ? `${source.scope} ${source.file}` : source.scope;
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
