// Where a path lands: what the platform found when it resolved it (platform/landing.ts), the
// fact every lowering and the access model plan with.

export type PathKind = 'file' | 'dir' | 'missing' | 'impossible';

/** A file's identity: device and inode, as decimal strings (64-bit values). */
export interface FileId { dev: string; ino: string }

/** Where a path lands once every symlink is followed (also through a missing tail). */
export interface Landing {
  real: string;
  /** `file` covers every non-directory; `impossible`: see `why`. */
  kind: PathKind;
  /** For `missing`: the first component of `real` that does not exist. */
  firstMissing?: string;
  /** For `impossible`: a component is an existing non-directory (`not-dir`, named by `blockedBy`),
   *  the symlinks loop or nest too deep (`loop`), or a component cannot be looked at
   *  (`unreadable`: `blockedBy` is the directory srt could not search). */
  why?: 'not-dir' | 'loop' | 'unreadable';
  blockedBy?: string;
  /** For `file` and `dir`: what was at `real` when srt looked. */
  id?: FileId;
  /** For `file`: its number of hard links. */
  nlink?: number;
  /** Every symlink followed on the way; `system`: owned by root in a directory root owns. */
  via?: { link: string; target: string; system: boolean }[];
}
