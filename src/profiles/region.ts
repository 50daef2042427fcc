// Which paths a rule's region covers (pure): a real path and everything below it, or every path
// that has a prefix matching a glob below a real directory.

import { dirname } from 'node:path';
import { isWithin, literalTokens, matchTokens, parseGlob, type GlobToken } from '../glob.js';

/** A real directory or file, and (for a glob) the glob below it. */
export interface Region {
  base: string;
  /** Glob relative to `base` (no leading `/`); absent for a literal path. */
  tail?: string;
}

export function regionTokens(region: Region): GlobToken[] {
  if (region.tail === undefined) return literalTokens(region.base);
  return [...literalTokens(region.base === '/' ? '/' : `${region.base}/`), ...parseGlob(region.tail)];
}

// Matched without a RegExp: a glob from a settings file must not be able to backtrack forever.
const compiled = new WeakMap<Region, { test: (p: string) => boolean }>();
function regionRegExp(region: Region): { test: (p: string) => boolean } {
  let re = compiled.get(region);
  if (!re) {
    const tokens = regionTokens(region);
    compiled.set(region, (re = { test: (p) => matchTokens(tokens, p) }));
  }
  return re;
}

function depthOf(p: string): number {
  return p === '/' ? 0 : p.split('/').length - 1;
}

/** Prefixes of an absolute path, shallowest first, ending with the path itself. */
function prefixes(p: string): string[] {
  const out: string[] = [];
  for (let q = p; ; q = dirname(q)) {
    out.unshift(q);
    if (q === '/') return out;
  }
}

/** Depth of the shallowest prefix of `p` the region names (null: it does not cover `p`). */
export function coverDepth(region: Region, p: string): number | null {
  if (region.tail === undefined) return isWithin(p, region.base) ? depthOf(region.base) : null;
  if (!isWithin(p, region.base)) return null;
  const re = regionRegExp(region);
  for (const q of prefixes(p)) if (re.test(q)) return depthOf(q);
  return null;
}

export function sameRegion(a: Region, b: Region): boolean {
  return a.base === b.base && a.tail === b.tail;
}
