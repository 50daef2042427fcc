// The mount operations of the Linux lowering, in the order bwrap and srt-init perform them: the
// base system (/, /dev, /proc), each node shallow-to-deep (binds, masks, snapshots), symlinks
// kept visible, sentinel copies, the helper's stages, and read-only remounts last.

import { dirname, join } from 'node:path';
import { isWithin } from '../glob.js';
import type { Lowering, MountTree } from './bwrap.js';
import type { HeldDenies } from './bwrap-hold.js';
import type { MountOp } from './mounts.js';

export interface Access { read: boolean; write: boolean }

export function mountOps(low: Lowering, tree: MountTree, held: HeldDenies, accessOf: (p: string) => Access): { ops: MountOp[]; writable: string[] } {
  const { policy, facts } = low;
  const m = new MountList(low, tree, held);
  baseSystem(m, low, tree, held, accessOf);
  if (policy.filesystem.disabled) {
    // Only credential denies survive; the filesystem is otherwise the host's.
    const creds = new Set(low.access.readDenies.filter((r) => r.kind === 'credential' && r.landing && (r.landing.kind === 'file' || r.landing.kind === 'dir')).map((r) => r.landing!.real));
    for (const p of [...creds].sort()) m.maskRead(p);
    m.bind(facts.tmpDir, facts.tmpDir, false);
  } else {
    nodeMounts(m, low, tree, held, accessOf);
  }
  for (const [link, target] of facts.symlinks ?? []) {
    if (!policy.filesystem.disabled && !low.model.read(dirname(link)) && low.model.read(low.landing(link).real)) {
      m.ops.push({ kind: 'symlink', dest: link, target });
    }
  }
  // Sentinel copies over masked files, on top of every bind above (bwrap writes the copy into
  // its own tmpfs: nothing on the host, nothing another sandbox could see). A masked file the
  // policy hides anyway stays hidden.
  for (const c of facts.credentials?.masked ?? []) {
    const l = low.landing(c.path);
    if (l.kind !== 'file') continue;
    if (!policy.filesystem.disabled && !low.model.read(l.real)) continue;
    m.ops.push({ kind: 'data', dest: l.real, hides: l.real, fd: c.fd, mode: c.mode });
  }
  m.finish();
  return { ops: m.ops, writable: m.writable };
}

/** `/` (read-only, writable, or hidden), /dev, /proc, and /proc/sys read-only without srt-init. */
function baseSystem(m: MountList, low: Lowering, tree: MountTree, held: HeldDenies, accessOf: (p: string) => Access): void {
  const { policy, facts } = low;
  if (policy.filesystem.disabled) {
    low.warnings.push('filesystem isolation is disabled (filesystem.disabled): the command can read and write every file you can');
    m.ops.push({ kind: 'bind', dest: '/', source: '/', ro: false, dev: true });
  } else {
    // A writable `/` (allowWrite) is bound first: /dev and /proc are mounted on it, never covered
    // by the host's (where /dev/null is a device the sandbox cannot open).
    const rootWritable = tree.nodes.has('/') && !held.snapshotDirs.has('/') && accessOf('/').read && accessOf('/').write;
    m.bind('/', '/', !rootWritable);
    if (rootWritable) m.writable.push('/');
  }
  // denyRead ["/"] with allowRead carve-outs (a read allowlist): the kernel filesystems stay, so
  // the tmpfs over / goes before /dev, /proc and a read-only /sys are mounted on it.
  const rootHidden = !policy.filesystem.disabled && tree.nodes.has('/') && !accessOf('/').read;
  if (rootHidden) {
    m.maskRead('/');
    m.bind('/sys', '/sys', true);
  }
  m.ops.push({ kind: 'dev', dest: '/dev' });
  if (policy.enableWeakerNestedSandbox) {
    low.warnings.push('enableWeakerNestedSandbox: reusing the existing /proc instead of a fresh one; the sandbox is weaker (host processes may be visible)');
    m.ops.push({ kind: 'bind', dest: '/proc', source: '/proc', ro: false, unchecked: true });
  } else {
    m.ops.push({ kind: 'proc', dest: '/proc' });
  }
  // bwrap leaves /proc/sys writable for a root caller (uid 0 maps to host root); never allow it.
  // With srt-init the command sees the helper's own fresh /proc (which it covers
  // itself), and covering bwrap's /proc would stop the helper from mounting one.
  if (!facts.seccomp) m.ops.push({ kind: 'bind', dest: '/proc/sys', source: '/proc/sys', ro: true, unchecked: true });
}

/** Each node, shallow to deep: a snapshot, a mask where it turns unreadable, or a bind where its
 *  access differs from its parent's (or it must be a mount point). */
function nodeMounts(m: MountList, low: Lowering, { nodes, mustMount, mayVanish }: MountTree, held: HeldDenies, accessOf: (p: string) => Access): void {
  const parentAccess = (p: string): Access => {
    for (let a = dirname(p); ; a = dirname(a)) {
      if (nodes.has(a) && a !== p) return accessOf(a);
      if (a === '/') return { read: true, write: false };
    }
  };
  const depth = new Map([...nodes].map((p) => [p, depthOf(p)]));
  const sorted = [...nodes].sort((a, b) => depth.get(a)! - depth.get(b)! || (a < b ? -1 : 1));
  for (const p of sorted) {
    if (p === '/' && !held.snapshotDirs.has('/')) continue;
    if (held.snapshotDirs.has(p)) { m.snapshot(p); continue; }
    const acc = accessOf(p);
    const par = parentAccess(p);
    if (!acc.read) {
      if (par.read) m.maskRead(p);
      continue;
    }
    if (acc.read === par.read && acc.write === par.write && !mustMount.has(p) && !low.writeRoots.has(p)) continue;
    m.bind(p, p, !acc.write, mayVanish.has(p) && !low.writeRoots.has(p));
    if (acc.write && !m.writable.some((w) => isWithin(p, w))) m.writable.push(p);
  }
}

/** The operations as they are planned, with what must come after all of them. */
class MountList {
  readonly ops: MountOp[] = [];
  /** Paths bound read-write: srt-init's Landlock rules allow writes beneath exactly these. */
  readonly writable: string[] = [];
  /** The helper's snapshots: each one's stage, bound once every other mount is made (the stages
   *  lie in the run directory, bound deeper than most snapshots). */
  private readonly stages: { dir: string; stage: string }[] = [];
  private readonly remountRo: string[] = [];
  private readonly stageDir: string | undefined;

  constructor(private readonly low: Lowering, private readonly tree: MountTree, private readonly held: HeldDenies) {
    const seccomp = low.facts.seccomp;
    this.stageDir = seccomp?.mountsPath !== undefined ? seccomp.stageDir : undefined;
  }

  bind(source: string, dest: string, ro: boolean, optional = false): void {
    this.ops.push({ kind: 'bind', dest, source, ro, ...(optional ? { optional: true as const } : {}) });
  }

  maskRead(p: string): void {
    if (this.tree.kindOf.get(p) === 'dir') {
      this.ops.push({ kind: 'tmpfs', dest: p });
      this.remountRo.push(p);
    } else if (this.stageDir !== undefined) {
      this.ops.push({ kind: 'bind', dest: p, source: this.low.facts.deniedFile, ro: true, byHelper: true, deny: true });
    } else {
      this.bind(this.low.facts.deniedFile, p, true);
    }
  }

  /** A read-only tmpfs at `dir` with each listed entry bound back (read-only: a snapshot is never
   *  writable), but those mounted on their own (`nodes`). With the helper's mount check the
   *  helper binds the entries (bwrap re-reads the whole mount table after each bind it makes:
   *  O(n²) for n entries): bwrap binds the host's `dir` once, read-only, at a stage in
   *  `stageDir`, and the helper binds each entry from there, makes the tmpfs read-only and covers
   *  the stages (init/verify.c). An entry with mounts of its own below it is bound by bwrap,
   *  before them, as without the helper. */
  snapshot(dir: string): void {
    const listed = this.low.facts.snapshots?.get(dir);
    if (!Array.isArray(listed)) {
      this.low.errors.push(`srt did not list ${dir}, which it must snapshot; nothing ran`);
      return;
    }
    this.ops.push({ kind: 'tmpfs', dest: dir });
    const byHelper = this.stageDir !== undefined;
    if (byHelper) this.stages.push({ dir, stage: join(this.stageDir!, String(this.stages.length)) });
    else this.remountRo.push(dir);
    const { maskedCopies, appeared, holdsMounts } = this.held;
    for (const e of listed) {
      const at = join(dir, e.name);
      if (this.tree.nodes.has(at) || maskedCopies.has(at) || appeared.has(at)) continue;
      if (e.kind === 'symlink') {
        this.ops.push({ kind: 'symlink', dest: at, target: e.target! });
      } else if (byHelper && !holdsMounts.has(at)) {
        this.ops.push({ kind: 'bind', dest: at, source: at, ro: true, optional: true, byHelper: true });
      } else {
        // Optional: an entry removed meanwhile is left out (the check then wants nothing there).
        this.ops.push({ kind: 'bind', dest: at, source: at, ro: true, optional: true });
      }
    }
  }

  /** The helper's stages once every other mount is made, then the read-only remounts (carve-outs
   *  inside a tmpfs need their mount points created first). */
  finish(): void {
    if (this.stages.length) {
      this.ops.push({ kind: 'tmpfs', dest: this.stageDir!, unchecked: true });
      for (const { dir, stage } of this.stages) this.ops.push({ kind: 'stage', dest: stage, dir });
      this.ops.push({ kind: 'cover', dest: this.stageDir! });
    }
    for (const p of this.remountRo) this.ops.push({ kind: 'remount-ro', dest: p });
  }
}

function depthOf(p: string): number {
  if (p === '/') return 0;
  let n = 0;
  for (let i = p.indexOf('/'); i >= 0; i = p.indexOf('/', i + 1)) n++;
  return n;
}
