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
      if (code === 'ENOENT') return { real: join(next, ...pending), kind: 'missing', firstMissing: next };
      if (code === 'ENOTDIR') return { real: join(next, ...pending), kind: 'impossible', why: 'not-dir', blockedBy: cur };
      return { real: join(next, ...pending), kind: 'impossible', why: 'unreadable' };
    }
    if (st.isSymbolicLink()) {
      if (++links > MAX_LINKS) return { real: next, kind: 'impossible', why: 'loop' };
      const target = readlinkSync(next);
      pending = [...target.split('/').filter(Boolean), ...pending];
      if (isAbsolute(target)) cur = '/';
      continue;
    }
    if (!st.isDirectory() && pending.length > 0) return { real: join(next, ...pending), kind: 'impossible', why: 'not-dir', blockedBy: next };
    cur = next;
  }
  try {
    const st = statSync(cur);
    return st.isDirectory() ? { real: cur, kind: 'dir' } : { real: cur, kind: 'file', nlink: st.nlink };
  } catch (e) {
    return { real: cur, kind: 'impossible', why: (e as NodeJS.ErrnoException).code === 'ELOOP' ? 'loop' : 'unreadable' };
  }
}
