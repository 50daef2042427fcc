// Paths as srt reads them in settings: globs (`*`, `**`, `?`, `[abc]`, `[!abc]`) and containment,
// shared by settings validation, the Linux profile and glob expansion, so a glob accepted by one
// is understood the same way by the others.

import { sep } from 'node:path';

const GLOB_SYNTAX = /[*?]|\[[^\]/]+\]/;

/** Does this path (or path segment) contain glob syntax? A lone `[` is a literal character. */
export function isGlob(text: string): boolean {
  return GLOB_SYNTAX.test(text);
}

/** The directory part of an absolute glob before its first segment with glob syntax (the path
 *  itself when it has none). */
export function globBase(glob: string): string {
  const segs = glob.split('/');
  const i = segs.findIndex(isGlob);
  if (i < 0) return glob;
  return segs.slice(0, i).join('/') || '/';
}

/** Is `p` equal to or below `base`? (Both absolute and normalised.) */
export function isWithin(p: string, base: string): boolean {
  return p === base || base === '/' || p.startsWith(base + sep);
}

/** Glob → anchored RegExp over absolute paths (`**` crosses `/`, `*` and `?` do not). */
export function globToRegExp(glob: string): RegExp {
  let re = '';
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i]!;
    if (c === '*') {
      if (glob[i + 1] === '*') {
        i++;
        if (glob[i + 1] === '/') { i++; re += '(?:.*/)?'; } else re += '.*';
      } else re += '[^/]*';
    } else if (c === '?') re += '[^/]';
    else if (c === '[') {
      const end = glob.indexOf(']', i + 2);
      if (end < 0) { re += '\\['; continue; }
      let body = glob.slice(i + 1, end);
      if (body.startsWith('!')) body = '^' + body.slice(1);
      re += '[' + body.replace(/\\/g, '\\\\') + ']';
      i = end;
    } else re += c.replace(/[.+^${}()|\\]/g, '\\$&');
  }
  return new RegExp('^' + re + '$');
}
