// May the command read / write this path, and which rule says so (pure): the answers every
// lowering is held to (tests interpret each lowering against mayRead/mayWrite).

import { selfAndAncestors } from '../glob.js';
import type { AccessRules } from './access.js';
import type { AccessRule } from './access-rule.js';
import { coverDepth, sameRegion } from './region.js';

/** Does `allow` re-open `deny` at `p` (both covering it)? */
export function reopens(allow: AccessRule, deny: AccessRule, p: string): boolean {
  if (allow.trust < deny.trust) return false;
  const a = coverDepth(allow.region, p);
  const d = coverDepth(deny.region, p);
  if (a === null || d === null) return false;
  if (allow.region.tail !== undefined && deny.region.tail !== undefined) return sameRegion(allow.region, deny.region);
  return a >= d;
}

export interface Verdict {
  allowed: boolean;
  /** The rule that decided: the deny that hides it, or the write root / re-opening allow. */
  rule?: AccessRule;
  why: string;
}

export function mayRead(rules: Pick<AccessRules, 'readDenies' | 'readAllows'>, p: string): Verdict {
  let opener: AccessRule | undefined;
  for (const d of rules.readDenies) {
    if (coverDepth(d.region, p) === null) continue;
    const a = rules.readAllows.find((r) => reopens(r, d, p));
    if (!a) return { allowed: false, rule: d, why: `hidden by ${d.origin}` };
    opener ??= a;
  }
  return opener ? { allowed: true, rule: opener, why: `re-opened by ${opener.origin}` } : { allowed: true, why: 'reads are allowed by default' };
}

export function mayWrite(rules: AccessRules, p: string): Verdict {
  const read = mayRead(rules, p);
  if (!read.allowed) return { allowed: false, ...(read.rule ? { rule: read.rule } : {}), why: `not readable: ${read.why}` };
  const own = rules.ownWritable.find((r) => coverDepth(r.region, p) !== null);
  if (own) return { allowed: true, rule: own, why: `inside ${own.origin}` };
  const root = rules.writeRoots.find((r) => coverDepth(r.region, p) !== null);
  if (!root) return { allowed: false, why: 'outside every writable path (the current directory, TMPDIR, filesystem.allowWrite)' };
  const deny = rules.writeDenies.find((r) => coverDepth(r.region, p) !== null);
  if (deny) return { allowed: false, rule: deny, why: `write-denied by ${deny.origin}` };
  return { allowed: true, rule: root, why: `inside ${root.origin}` };
}

/** Rules by kind of region: literal ones keyed by path (the highest trust there), glob ones listed. */
function byRegion(rules: AccessRule[]): { literal: Map<string, number>; globs: AccessRule[] } {
  const literal = new Map<string, number>();
  const globs: AccessRule[] = [];
  for (const r of rules) {
    if (r.region.tail !== undefined) globs.push(r);
    else literal.set(r.region.base, Math.max(r.trust, literal.get(r.region.base) ?? -Infinity));
  }
  return { literal, globs };
}

/**
 * mayRead's and mayWrite's answers without their reasons, for a lowering that asks about every
 * path it mounts: literal regions are looked up along the path's own chain (the path, its parent,
 * …, "/") instead of scanned (with 1,000 denied files, scanning took 0.15 s). Same rules, same
 * answers (test/unit/access.test.ts holds them together).
 */
export function accessIndex(rules: AccessRules): { read: (p: string) => boolean; write: (p: string) => boolean } {
  const denies = byRegion(rules.readDenies);
  const allows = byRegion(rules.readAllows);
  const covers = (x: ReturnType<typeof byRegion>, chain: string[], p: string) =>
    chain.some((q) => x.literal.has(q)) || x.globs.some((g) => coverDepth(g.region, p) !== null);
  const [own, roots, writeDenies] = [rules.ownWritable, rules.writeRoots, rules.writeDenies].map(byRegion) as [
    ReturnType<typeof byRegion>, ReturnType<typeof byRegion>, ReturnType<typeof byRegion>];
  const answers = new Map<string, boolean>();
  const readNow = (p: string, chain: string[]): boolean => {
    // chain[i] lies i levels above p: an allow at chain[j], j <= i, is at least as deep as a deny at chain[i].
    const depth = (i: number) => chain.length - 1 - i;
    const allowAt = (j: number) => allows.literal.get(chain[j]!) ?? -Infinity;
    for (let i = 0; i < chain.length; i++) {
      const trust = denies.literal.get(chain[i]!);
      if (trust === undefined) continue;
      let reopened = false;
      for (let j = 0; j <= i && !reopened; j++) reopened = allowAt(j) >= trust;
      reopened ||= allows.globs.some((a) => a.trust >= trust && (coverDepth(a.region, p) ?? -1) >= depth(i));
      if (!reopened) return false;
    }
    for (const d of denies.globs) {
      const at = coverDepth(d.region, p);
      if (at === null) continue;
      let reopened = allows.globs.some((a) => a.trust >= d.trust && sameRegion(a.region, d.region));
      for (let j = 0; j < chain.length && !reopened; j++) reopened = depth(j) >= at && allowAt(j) >= d.trust;
      if (!reopened) return false;
    }
    return true;
  };
  const read = (p: string): boolean => {
    let r = answers.get(p);
    if (r === undefined) answers.set(p, (r = readNow(p, selfAndAncestors(p))));
    return r;
  };
  const write = (p: string): boolean => {
    if (!read(p)) return false;
    const chain = selfAndAncestors(p);
    return covers(own, chain, p) || (covers(roots, chain, p) && !covers(writeDenies, chain, p));
  };
  return { read, write };
}
