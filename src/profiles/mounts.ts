// The sandbox's mounts as data (pure): what the Linux lowering (bwrap.ts) plans, bubblewrap's
// options for them (the one place they are written), and the plan srt-init checks before anything
// runs (init/verify.c).

import type { FileId } from './landing.js';

/**
 * One operation of the sandbox's mount plan, in order: bubblewrap performs them (`bwrapArgs`
 * renders them, the one place argv is written) but `byHelper` binds and the `cover`, which
 * srt-init makes. Each is also what srt-init's check (init/verify.c) must find at `dest`, walked
 * without following any symlink, once the mounts are made (`plannedMounts`: the last one per
 * destination, but `dev`, `proc`, `remount-ro` and `unchecked` ones). A `bind`'s `source` is a
 * real path whose identity srt records when it writes the plan; `ro`: read-only; `dev`: devices
 * usable (`--dev-bind`); `optional`: the source may vanish meanwhile (an entry of a snapshot, a
 * write deny the supervisor also refuses creating), then nothing may be at `dest`; `byHelper`: srt-init makes this bind itself, from the stage of
 * the snapshot holding it; `deny` (with `byHelper`): srt-init binds `source`, srt's denied file,
 * at `dest` itself, after bwrap (bwrap's cost per bind grows with the mounts already made: 1,000
 * denied files took 2 s). `data`: a read-only copy bwrap makes from descriptor `fd` (a sentinel
 * copy), never the host file `hides`. A `stage` (at `dest`) is bwrap's read-only bind of the
 * host's `dir`, which srt-init checks and takes the snapshot's entries from; `cover`: the empty
 * read-only tmpfs srt-init mounts over the stages once used.
 */
export type MountOp =
  | { kind: 'bind'; dest: string; source: string; ro: boolean; dev?: true; optional?: true; byHelper?: true; deny?: true; unchecked?: true }
  | { kind: 'data'; dest: string; hides: string; fd: number; mode: number }
  | { kind: 'tmpfs'; dest: string; unchecked?: true }
  | { kind: 'symlink'; dest: string; target: string }
  | { kind: 'stage'; dest: string; dir: string }
  | { kind: 'cover'; dest: string }
  | { kind: 'dev'; dest: string }
  | { kind: 'proc'; dest: string }
  | { kind: 'remount-ro'; dest: string };

/** A mount srt-init checks. */
export type PlannedMount = Extract<MountOp, { kind: 'bind' | 'data' | 'tmpfs' | 'symlink' | 'stage' | 'cover' }>;

/** bubblewrap's filesystem options for `ops`, in order, one option with its values each. */
export function bwrapMountArgs(ops: readonly MountOp[]): string[][] {
  return ops.flatMap((m): string[][] => {
    switch (m.kind) {
      case 'bind':
        if (m.byHelper) return [];
        return [[`${m.dev ? '--dev-bind' : m.ro ? '--ro-bind' : '--bind'}${m.optional ? '-try' : ''}`, m.source, m.dest]];
      case 'data': return [['--perms', m.mode.toString(8).padStart(4, '0')], ['--ro-bind-data', String(m.fd), m.dest]];
      case 'tmpfs': return [['--tmpfs', m.dest]];
      case 'symlink': return [['--symlink', m.target, m.dest]];
      case 'stage': return [['--ro-bind', m.dir, m.dest]];
      case 'cover': return [];
      case 'dev': return [['--dev', m.dest]];
      case 'proc': return [['--proc', m.dest]];
      case 'remount-ro': return [['--remount-ro', m.dest]];
    }
  });
}

/** What srt-init checks of `ops`: the last checked mount per destination, in order. */
export function plannedMounts(ops: readonly MountOp[]): PlannedMount[] {
  const out = new Map<string, PlannedMount>();
  for (const m of ops) {
    if (m.kind === 'dev' || m.kind === 'proc' || m.kind === 'remount-ro') continue;
    if ((m.kind === 'bind' || m.kind === 'tmpfs') && m.unchecked) continue;
    out.delete(m.dest);
    out.set(m.dest, m);
  }
  return [...out.values()];
}

/**
 * The mount plan file the helper checks (init/verify.c): NUL-terminated fields, one record
 * per mount (`B dest dev ino flags`, `T dest`, `L dest target`, `D dest dev ino` of the host
 * file a copy stands for, `S dir stage dev ino`, `K area`) and the working directory
 * (`C dev ino`, or `c path` when srt mounts a tmpfs there: it is then the mount verified at that
 * path). `idOf` gives a bind source's identity now (null: it is gone or no longer a
 * real path); a missing identity is an error unless the bind is optional (bwrap skips a vanished
 * `-try` source: then nothing may be at its place).
 */
export function encodeMounts(mounts: PlannedMount[], identify: (source: string) => FileId | null, cwd: { path: string; id?: FileId }):
  { data: Buffer } | { error: string } {
  const fields: string[] = [];
  const changed = (path: string) => ({ error: `${path} changed or disappeared while srt was setting up the sandbox; nothing ran, try again` });
  // One identity per source: every denied file's bind has the same one.
  const known = new Map<string, FileId | null>();
  const idOf = (source: string) => {
    let id = known.get(source);
    if (id === undefined) known.set(source, (id = identify(source)));
    return id;
  };
  // The one file the helper binds at every `deny` destination, once, before them.
  const denied = mounts.find((m) => m.kind === 'bind' && m.deny);
  if (denied?.kind === 'bind') {
    if (mounts.some((m) => m.kind === 'bind' && m.deny && m.source !== denied.source)) return { error: 'more than one denied file' };
    const id = idOf(denied.source);
    if (!id) return changed(denied.source);
    fields.push('F', denied.source, id.dev, id.ino);
  }
  for (const m of mounts) {
    if (m.kind === 'tmpfs') fields.push('T', m.dest);
    else if (m.kind === 'cover') fields.push('K', m.dest);
    else if (m.kind === 'symlink') fields.push('L', m.dest, m.target);
    else if (m.kind === 'data') {
      const id = idOf(m.hides);
      if (!id) return changed(m.hides);
      fields.push('D', m.dest, id.dev, id.ino);
    } else if (m.kind === 'stage') {
      const id = idOf(m.dir);
      if (!id) return changed(m.dir);
      fields.push('S', m.dir, m.dest, id.dev, id.ino);
    } else {
      // A vanished optional source: nothing may be there (no file has inode 0).
      const id = idOf(m.source) ?? (m.optional ? { dev: '0', ino: '0' } : null);
      if (!id) return changed(m.source);
      const by = m.byHelper ? (m.deny ? 'd' : 's') : '';
      fields.push('B', m.dest, id.dev, id.ino, `${m.ro ? 'r' : 'w'}${m.optional ? 'o' : ''}${by}`);
    }
  }
  if (mounts.some((m) => m.kind === 'tmpfs' && m.dest === cwd.path)) fields.push('c', cwd.path);
  else if (cwd.id) fields.push('C', cwd.id.dev, cwd.id.ino);
  if (fields.some((f) => f.includes('\0'))) return { error: 'a path holds a NUL character' };
  return { data: Buffer.from(fields.map((f) => `${f}\0`).join('')) };
}
