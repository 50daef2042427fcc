// A library sandbox's mount plan, kept for its next command when it was planned from the same
// policy and the same facts, value for value. The planner (profiles/bwrap.ts) is pure: it reads
// nothing but its arguments, so equal arguments give an equal plan. The facts themselves are
// gathered anew for every command (or taken from the watched landings and search); only the
// planning over them is spared. The policy is compared by value with a copy taken when the plan
// was made: `sandbox.policy` is the sandbox's own object, which a caller can change in place at
// any depth between commands (not only `updateNetwork`, which replaces its network whole).

import type { Policy } from '../policy.js';
import type { mountPlanner, MountPlan } from '../profiles/bwrap.js';
import type { BwrapFacts } from '../profiles/bwrap-facts.js';
import type { SeccompArch } from '../profiles/seccomp.js';

export interface KeptPlan {
  /** A copy of the policy the plans were made from (keptPolicy). */
  policy: Policy;
  /** The facts the first plan was made from (no snapshots), their planner and that plan. */
  facts: BwrapFacts;
  planner: ReturnType<typeof mountPlanner>;
  first: MountPlan;
  /** The snapshots' listings the final plan was made from, the plan, and the seccomp filter
   *  (for srt-init's architecture). */
  snapshots: BwrapFacts['snapshots'];
  mounts: MountPlan;
  filter: Buffer | undefined;
  arch: SeccompArch | undefined;
}

/** The copy of `policy` a plan is kept with; none (the plan is not kept) for a policy that
 *  cannot be copied (a caller put a function in it). */
export function keptPolicy(policy: Policy): Policy | undefined {
  try {
    return structuredClone(policy);
  } catch {
    return undefined;
  }
}

/** Whether `kept` was planned from a policy of the same value as this one (see the header). */
export function samePolicy(kept: KeptPlan, policy: Policy): boolean {
  return sameValue(kept.policy, policy);
}

/**
 * Equal values: primitives, buffers, arrays, Maps (by key), Sets of primitives and plain objects
 * (own enumerable keys), compared all the way down. Anything else is equal only to itself, so a
 * value this does not know makes the plan be made again, never kept wrongly.
 */
export function sameValue(a: unknown, b: unknown): boolean {
  if (Object.is(a, b)) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Buffer.isBuffer(a) || Buffer.isBuffer(b)) return Buffer.isBuffer(a) && Buffer.isBuffer(b) && a.equals(b);
  if (Array.isArray(a) || Array.isArray(b)) {
    return Array.isArray(a) && Array.isArray(b) && a.length === b.length && a.every((x, i) => sameValue(x, b[i]));
  }
  if (a instanceof Map || b instanceof Map) {
    if (!(a instanceof Map && b instanceof Map) || a.size !== b.size) return false;
    for (const [k, v] of a) if (!b.has(k) || !sameValue(v, b.get(k))) return false;
    return true;
  }
  if (a instanceof Set || b instanceof Set) {
    if (!(a instanceof Set && b instanceof Set) || a.size !== b.size) return false;
    for (const x of a) if ((typeof x === 'object' && x !== null) || !b.has(x)) return false;
    return true;
  }
  const plain = (o: object) => Object.getPrototypeOf(o) === Object.prototype || Object.getPrototypeOf(o) === null;
  if (!plain(a) || !plain(b)) return false;
  const ka = Object.keys(a);
  const kb = Object.keys(b);
  if (ka.length !== kb.length) return false;
  const ob = b as Record<string, unknown>;
  return ka.every((k) => Object.prototype.hasOwnProperty.call(ob, k) && sameValue((a as Record<string, unknown>)[k], ob[k]));
}
