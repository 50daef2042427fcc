// Policy → bubblewrap argv (pure). Every path decision is made here; the platform side only
// gathers facts (where each path lands after symlinks, what exists, glob matches) and runs it.
//
// Model: the policy names a set of paths ("nodes"). Each node gets an access state, decided by
// the most specific read rule covering it and by the write rules, and mounts are emitted
// shallow-to-deep so a deeper mount overrides a shallower one. bwrap takes every bind source
// from the host root, so each mount sets its path's state independently of its parents.
//   read:  a path is hidden when a denyRead covers it that no allowRead at least as specific
//          re-opens; an allowRead re-opens only denies of scopes it may overrule (TRUST in access-rule.ts:
//          a repository's settings never re-open what managed, cli or user settings deny, user
//          settings never what managed or cli deny), and nothing re-opens a credential file. A
//          path writable by policy counts as allowRead of its scope (writing blind makes no sense).
//   write: under cwd, TMPDIR or allowWrite AND under no denyWrite/protected path (denyWrite wins
//          whatever its depth) AND readable.
//
// The steps, in order: the access model (access.ts); the paths the mounts must cover
// (bwrap-denies.ts); how each read deny holds while the command runs (bwrap-hold.ts); the mount
// operations (bwrap-ops.ts); the command line around them (bwrap-launch.ts).

import { join } from 'node:path';
import { isWithin } from '../glob.js';
import type { PathRule, Policy } from '../policy.js';
import { buildAccessRules, type AccessRules } from './access.js';
import { SRT_OWN } from './access-rule.js';
import { accessIndex } from './verdicts.js';
import { knownKinds, readDenyTargets, writeDenyTargets } from './bwrap-denies.js';
import type { BwrapFacts } from './bwrap-facts.js';
import { holdDenies } from './bwrap-hold.js';
import { bwrapLaunch } from './bwrap-launch.js';
import { mountOps, type Access } from './bwrap-ops.js';
import type { InitArgs } from './init-args.js';
import type { Landing } from './landing.js';
import type { MountOp } from './mounts.js';
import type { ProtectedTarget } from './protected.js';

/** A read deny the supervisor checks at every open: a path (and all below it) or a glob (every
 *  path it matches, and all below), with the paths inside it that stay readable. */
export interface GatedDeny { path: string; glob?: true; reopened: string[] }

export interface BwrapPlan {
  /** Arguments for `bwrap` (without the program name), rendered from the fields below. */
  args: string[];
  /** The same, one option with its values per group; the last: `--` and what bwrap runs. */
  argGroups: string[][];
  /** The mount operations, in order. */
  ops: MountOp[];
  /** The access model these mounts make true (test/unit/bwrap-access.test.ts holds them to it). */
  access: AccessRules;
  /** srt-init's options, when it is the sandbox's first process. */
  init?: InitArgs;
  /** Mount points srt must create on the host before the run (and remove after): none with the supervisor. */
  placeholders: ProtectedTarget[];
  /** For the supervisor: the writable roots its name rules apply in (TMPDIR excepted)… */
  protectedRoots: string[];
  /** …and every write-denied path (denyWrite and protected, as written and where it lands). */
  protectedPaths: string[];
  warnings: string[];
  /** Why the sandbox must not start (fail closed): a deny entry srt cannot resolve. */
  errors: string[];
  /** Decisions worth a `--debug` line. */
  notes: string[];
  /** The paths bound read-write (outermost only). */
  writable: string[];
  /** What runs bwrap (`LAUNCHER… bwrap ARGS`): srt-init binding the exposed host ports, or
   *  nothing when no port is exposed (bwrap is run directly). */
  launcher: string[];
  /** bwrap's `--chdir`: the helper checks it landed in the directory `landings` has for it. */
  chdir: string;
  /** Directories made snapshots (a read-only tmpfs, each entry bound back): the platform lists them
   *  in `facts.snapshots`, those a masked file's copy needs first (past a budget of entries the
   *  read gate holds the denies instead, never a copy). */
  snapshots: string[];
  /** Read-denied paths inside the writable paths, and with the supervisor every deny glob, each
   *  with the paths inside it that stay readable: the supervisor checks every open against them
   *  (`gateReads` of the filter). */
  gated: GatedDeny[];
}

/** What every step of the lowering reads, and the diagnostics they add to. */
export interface Lowering {
  policy: Policy;
  facts: BwrapFacts;
  access: AccessRules;
  model: ReturnType<typeof accessIndex>;
  /** The protected-path supervisor runs: it refuses writes and judges deny globs at each open. */
  supervised: boolean;
  landing: (p: string) => Landing;
  /** The write roots (TMPDIR among them) → the trust of the rule making each one. */
  writeRoots: Map<string, number>;
  writableByRoots: (p: string) => boolean;
  warnings: string[];
  errors: string[];
  notes: string[];
}

/** The paths that get a mount of their own, with each one's kind. */
export interface MountTree {
  nodes: Set<string>;
  /** Nodes mounted even where their parent's access is the same (mount points that must exist). */
  mustMount: Set<string>;
  /** Nodes whose bind bwrap skips if a program outside removed the path after srt looked (the
   *  check then wants nothing there): write-denied paths and their rename guards, with the
   *  supervisor, which refuses creating such a path anew as it does one missing at the start. */
  mayVanish: Set<string>;
  kindOf: Map<string, 'file' | 'dir'>;
}

/** The plan's mounts and what the platform needs around them: everything of a BwrapPlan but
 *  the command line, which alone depends on the command (and on the network policy, which a
 *  sandbox may replace between its commands). */
export type MountPlan = Omit<BwrapPlan, 'args' | 'argGroups' | 'init' | 'launcher'>;

export function buildBwrapPlan(policy: Policy, facts: BwrapFacts, command: string[]): BwrapPlan {
  return withCommand(policy, facts, mountPlanner(policy, facts)(facts.snapshots), command);
}

/** A mount plan with its command line around it. */
export function withCommand(policy: Policy, facts: BwrapFacts, mounts: MountPlan, command: string[]): BwrapPlan {
  const { argGroups, init, launcher } = bwrapLaunch(policy, facts, mounts.ops, mounts.writable, command);
  return { ...mounts, warnings: [...macOnlyWarnings(policy), ...mounts.warnings], args: argGroups.flat(), argGroups, ...(init ? { init } : {}), launcher };
}

/**
 * The mount plans of one set of facts, for the snapshots' listings given: the access model and
 * the deny targets are worked out once, so the first plan (which says what to list) and the plan
 * with the listings share them; only how each deny holds, and the mounts, depend on the listings.
 */
export function mountPlanner(policy: Policy, facts: BwrapFacts): (snapshots: BwrapFacts['snapshots']) => MountPlan {
  const low = lowering(policy, facts);
  const writes = writeDenyTargets(low);
  const reads = readDenyTargets(low, writes.blockedDirs);
  const kinds = knownKinds(facts, writes.placeholders, writes.blockedDirs);
  // Started in a repository's subdirectory: its .git is outside what the command may write, so
  // commits (and every git command that writes) fail inside. Say it once, with the remedy.
  if (!policy.filesystem.disabled && policy.root !== policy.cwd && !low.writableByRoots(join(policy.root, '.git'))) {
    low.warnings.push(`the repository's .git (${join(policy.root, '.git')}) is outside the writable paths, so git commits fail inside; run srt from ${policy.root}, or add it to filesystem.allowWrite`);
  }
  const nodes = [...low.writeRoots.keys(), ...writes.denyWrite, ...reads.denyRead.keys(), ...reads.allowRead.keys()];
  const mayVanish = low.supervised ? [...writes.denyWrite].filter((p) => writes.protectedPaths.has(p) && !writes.blockedDirs.has(p)) : [];
  const access = new Map<string, Access>();
  const accessOf = (p: string): Access => {
    let a = access.get(p);
    if (!a) access.set(p, (a = { read: low.model.read(p), write: low.model.write(p) && !writes.inPlaceholder(p) }));
    return a;
  };
  return (snapshots) => {
    // Each plan adds to the diagnostics and the tree of its own copies.
    const own: Lowering = { ...low, facts: { ...facts, ...(snapshots ? { snapshots } : {}) }, warnings: [...low.warnings], errors: [...low.errors], notes: [...low.notes] };
    const tree: MountTree = { nodes: new Set(nodes), mustMount: new Set(), mayVanish: new Set(mayVanish), kindOf: new Map(kinds) };
    const held = holdDenies(own, reads, writes.denyWrite, tree);
    const { ops, writable } = mountOps(own, tree, held, accessOf);
    const { snapshotDirs, maskSnapshots } = held;
    return {
      ops, access: low.access, placeholders: [...writes.placeholders.values()], warnings: own.warnings, errors: own.errors, notes: own.notes, writable,
      chdir: policy.cwd, snapshots: [...[...snapshotDirs].filter((d) => maskSnapshots.has(d)).sort(), ...[...snapshotDirs].filter((d) => !maskSnapshots.has(d)).sort()], gated: held.gated,
      protectedRoots: policy.filesystem.disabled ? [] : [...low.writeRoots.keys()].filter((w) => w !== facts.tmpDir),
      protectedPaths: [...writes.protectedPaths],
    };
  };
}

/** The access model for this run, with the write roots and the warnings that need no mount. */
function lowering(policy: Policy, facts: BwrapFacts): Lowering {
  const warnings: string[] = [];
  const errors: string[] = [];
  const notes: string[] = [];
  const landing = (p: string): Landing => facts.landings.get(p) ?? { real: p, kind: 'missing', firstMissing: p };
  /** Globs are expanded now: the landings a glob covers; for a deny also the directories whose
   *  names bwrap cannot be given or srt cannot read, whole. */
  const expand = (r: PathRule, deny: boolean, what: string): Landing[] => {
    const matches = facts.globMatches.get(r.path) ?? [];
    notes.push(`${what} ${r.original}: ${matches.length} match(es) at wrap time`);
    if (!deny) return matches;
    const whole = facts.globUndecodable?.get(r.path) ?? [];
    for (const d of whole) warnings.push(`${what}: ${r.original}: ${d.real} holds a name that is not valid UTF-8 and may match; srt cannot name it to bubblewrap, so the whole directory is covered`);
    const closed = facts.globUnreadable?.get(r.path) ?? [];
    for (const d of closed) warnings.push(`${what}: ${r.original}: srt cannot read ${d.real} (permission denied), which may hold matches; the whole directory is covered`);
    return [...matches, ...whole, ...closed];
  };
  const supervised = facts.seccomp?.supervisor !== undefined;
  const copies = (facts.credentials?.masked ?? []).map((m) => landing(m.path)).filter((l) => l.kind === 'file').map((l) => l.real);
  const access = buildAccessRules(policy, {
    landings: facts.landings, tmpDir: facts.tmpDir, runDir: facts.runDir,
    ...(facts.runRoot ? { runRoot: facts.runRoot } : {}),
    ...(facts.runtimeFiles ? { runtimeFiles: facts.runtimeFiles } : {}),
    ...(facts.worktree ? { worktree: facts.worktree } : {}),
    // With the supervisor a deny glob is judged at each open (the read gate), so nothing is
    // expanded and a match made during the run is covered too.
    expand, openTimeDenyGlobs: supervised, credentialDenies: facts.credentials?.deny ?? [], copies,
    // A write root that is a file is a mount point of its own, which cannot be removed or replaced
    // by a directory: nothing can appear below it, so no protected name there needs a deny (one
    // would cover the file itself, where the name cannot land, and make it read-only).
    protect: (roots) => facts.protectedTargets.filter((t) => !belowFileRoot(landing(t.path), roots))
      .map((t) => ({ path: t.path, kind: t.kind, why: t.path })),
  });
  warnings.push(...access.warnings);
  notes.push(...access.notes);
  errors.push(...access.errors);
  const writeRoots = new Map(access.writeRoots.map((r) => [r.region.base, r.trust]));
  writeRoots.set(facts.tmpDir, SRT_OWN);
  const homeRoot = [...writeRoots.keys()].find((w) => w !== facts.tmpDir && isWithin(policy.home, w));
  if (homeRoot && !policy.filesystem.disabled) {
    warnings.push(`the whole home directory ${policy.home} is writable in this sandbox (through ${homeRoot}): apart from srt's protected paths, ` +
      'the command can change any of your files there, including ones other programs run later');
  }
  const rootList = [...writeRoots.keys()];
  return {
    policy, facts, access, model: accessIndex(access), supervised, landing, writeRoots,
    writableByRoots: (p) => rootList.some((w) => isWithin(p, w)),
    warnings, errors, notes,
  };
}

/** Settings that do nothing here, said once rather than silently. */
function macOnlyWarnings(policy: Policy): string[] {
  const macOnly: Array<[string, boolean]> = [
    ['allowPty', policy.allowPty], ['allowAppleEvents', policy.allowAppleEvents],
    ['enableWeakerNetworkIsolation', policy.enableWeakerNetworkIsolation],
    ['network.allowLocalBinding', policy.network.allowLocalBinding],
    ['network.allowUnixSockets', policy.network.allowUnixSockets.length > 0],
  ];
  return macOnly.filter(([, set]) => set).map(([key]) =>
    `${key} only has an effect on macOS; ignored on Linux${key === 'network.allowUnixSockets' ? ' (Linux has no per-path rule: see network.allowAllUnixSockets)' : ''}`);
}

/** Does this landing stop at a write root that is a file (a name below it)? */
function belowFileRoot(l: Landing, roots: string[]): boolean {
  return l.kind === 'impossible' && l.why === 'not-dir' && l.blockedBy !== undefined && roots.includes(l.blockedBy);
}
