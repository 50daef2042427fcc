// Where a path lands on this host once every symlink is followed, including through a
// missing tail (a dangling symlink's target is where a create would land).

import { lstatSync, readlinkSync, statSync } from 'node:fs';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import type { Landing } from '../profiles/bwrap.js';

const MAX_LINKS = 40;

export function resolveLanding(path: string): Landing {
  let pending = resolve(path).split('/').filter(Boolean);
  let cur = '/';
  let links = 0;
  const via: NonNullable<Landing['via']> = [];
  const done = (l: Landing): Landing => (via.length ? { ...l, via } : l);
  while (pending.length > 0) {
    const name = pending.shift()!;
    if (name === '.') continue;
    if (name === '..') { cur = dirname(cur); continue; }
    const next = join(cur, name);
    let st;
    try {
      st = lstatSync(next);
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code === 'ENOENT') return done({ real: join(next, ...pending), kind: 'missing', firstMissing: next });
      if (code === 'ENOTDIR') return done({ real: join(next, ...pending), kind: 'impossible', why: 'not-dir', blockedBy: cur });
      return done({ real: join(next, ...pending), kind: 'impossible', why: 'unreadable' });
    }
    if (st.isSymbolicLink()) {
      if (++links > MAX_LINKS) return done({ real: next, kind: 'impossible', why: 'loop' });
      const target = readlinkSync(next);
      // A link root made in a directory only root can write: part of the system's layout
      // (/var/run -> /run), not something a sandboxed command could have planted.
      let system = false;
      try { system = st.uid === 0 && lstatSync(cur).uid === 0; } catch { /* not judged */ }
      via.push({ link: next, target, system });
      pending = [...target.split('/').filter(Boolean), ...pending];
      if (isAbsolute(target)) cur = '/';
      continue;
    }
    if (!st.isDirectory() && pending.length > 0) return done({ real: join(next, ...pending), kind: 'impossible', why: 'not-dir', blockedBy: next });
    cur = next;
  }
  try {
    const st = statSync(cur);
    return done(st.isDirectory() ? { real: cur, kind: 'dir' } : { real: cur, kind: 'file', nlink: st.nlink });
  } catch (e) {
    return done({ real: cur, kind: 'impossible', why: (e as NodeJS.ErrnoException).code === 'ELOOP' ? 'loop' : 'unreadable' });
  }
}
