// One run's plan as data: what srt spawns and everything around it. A backend's prepare() builds
// it without side effects; --dry-run renders it as text (planText) or, with --json, as the
// documented object (planJson, docs/cli.md "Dry run"); a run writes `files` into the run directory,
// starts the proxy and spawns `spawn`.

import type { MountOp } from '../profiles/mounts.js';

/** The two backends: bubblewrap + srt-init, and sandbox-exec with a Seatbelt profile. */
export type PlatformName = 'linux' | 'macos';

/** A file or directory srt makes in the run directory before the command starts. */
export interface PlanFile {
  path: string;
  mode: number;
  /** Absent: a directory. */
  content?: string | Buffer;
}

export interface SpawnPlan {
  platform: PlatformName;
  /** The command as it runs inside (a shell string already turned into `bash -c …`). */
  command: string[];
  cwd: string;
  /** What srt spawns: the program, then one option with its values per group (argv = the groups, flat). */
  spawn: string[][];
  /** What the command's environment gains (values that are not secrets) and loses (withheld credentials). */
  env: { set: Record<string, string>; unset: string[] };
  /** The run's private directory (made for the run, removed after it) and what goes into it. */
  runDir: string;
  files: PlanFile[];
  filesystem: {
    /** Where the command may write (outermost paths). */
    writable: string[];
    /** Linux: every mount, in order (src/profiles/mounts.ts MountOp). */
    mounts?: MountOp[];
    /** macOS: the Seatbelt profile and its -D parameters (the proxy's are filled in when it listens). */
    profile?: string;
    params?: [string, string][];
    /** Empty read-only files and directories srt puts on the host for the run (no supervisor). */
    placeholders: { path: string; kind: 'file' | 'dir' }[];
  };
  /** The text form: each section a `# title` and its lines, in order. */
  sections: { title: string; lines: string[] }[];
  warnings: string[];
  /** Details for `--debug`. */
  notes: string[];
  /** Linux: the search for protected paths and glob matches these facts come from (docs/library.md "Many commands"). */
  treeSearch?: {
    searches: number; reused: boolean; watched: number; stale?: string;
    /** How many landings (where a path leads) this command took from earlier ones, unchanged since. */
    landingsKept: number;
    /** How many snapshots' listings this command took from earlier ones, unchanged since. */
    listingsKept: number;
    /** Whether the mounts were planned by an earlier command from the same policy and facts. */
    planKept: boolean;
  };
}

/** --dry-run's text: the sections, then the warnings as srt would print them. */
export function planText(plan: SpawnPlan): string {
  const sections = [...plan.sections];
  if (plan.warnings.length) sections.push({ title: 'warnings', lines: plan.warnings.map((w) => `srt: warning: ${w}`) });
  return `${sections.map((s) => [`# ${s.title}`, ...s.lines].join('\n')).join('\n\n')}\n`;
}

/** --dry-run --json: the plan without file contents (a sentinel copy's bytes, a CA bundle). Shape: docs/cli.md "Dry run". */
export function planJson(plan: SpawnPlan): object {
  return {
    version: 1,
    platform: plan.platform,
    command: plan.command,
    cwd: plan.cwd,
    argv: plan.spawn.flat(),
    env: plan.env,
    runDir: plan.runDir,
    files: plan.files.map((f) => ({ path: f.path, mode: `0${f.mode.toString(8)}`, kind: f.content === undefined ? 'dir' : 'file' })),
    filesystem: plan.filesystem,
    sections: plan.sections,
    warnings: plan.warnings,
  };
}
