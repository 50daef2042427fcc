// The Linux lowering held against the access model, as the Seatbelt profile is (seatbelt.test.ts):
// a small interpreter of the plan's mount operations says what the command reaches at each path
// of a generated tree — the host's own file, read-only or read-write, or something else (a mask,
// srt's denied file, a sentinel copy; with the supervisor, a deny glob's read gate) — and that
// must be exactly what mayRead/mayWrite of the plan's access rules allow, at every path around
// every rule, for fixed and random policies, with symlinked entries. The mounts are checked
// alone: srt-init's Landlock rules are a second layer (every path the model lets the command write must lie beneath one of them), and the
// supervisor's name rules have their own tests (init-rules.test.ts).
import { dirname, join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { globMatcher, isWithin } from '../../src/glob.js';
import type { PathRule, Policy } from '../../src/policy.js';
import { literalOf } from '../../src/profiles/access-rule.js';
import { mayRead, mayWrite } from '../../src/profiles/verdicts.js';
import { buildBwrapPlan, type BwrapPlan } from '../../src/profiles/bwrap.js';
import type { BwrapFacts, SnapshotEntry } from '../../src/profiles/bwrap-facts.js';
import type { Landing } from '../../src/profiles/landing.js';
import type { MountOp } from '../../src/profiles/mounts.js';
import type { ProtectedTarget } from '../../src/profiles/protected.js';
import { at, credentialFile, policy } from './policy-fixtures.js';

const H = '/Users/ann';
const W = `${H}/proj`;
const RUN = `${H}/.srt/run/4242-abc`;
const DENIED = `${RUN}/denied`;
const HELPER = '/opt/srt/init/build/srt-init';

/** A host tree: every directory and file, and symlinks (path → target, absolute). */
interface Tree { kinds: Map<string, 'file' | 'dir'>; links: Map<string, string> }

const DIRS = [H, `${H}/a`, `${H}/a/b`, `${H}/a/b/c`, `${H}/.ssh`, `${H}/.aws`, `${H}/data`, W, `${W}/src`, `${W}/src/deep`, `${W}/.git`, `${W}/.git/hooks`,
  '/opt/data', '/opt/data/z', '/etc', '/usr', '/usr/lib'];
const FILES = ['f.txt', 'k.pem', '.env'];

function makeTree(): Tree {
  const kinds = new Map<string, 'file' | 'dir'>();
  const addDir = (d: string) => { for (let a = d; ; a = dirname(a)) { kinds.set(a, 'dir'); if (a === '/') break; } };
  for (const d of DIRS) {
    addDir(d);
    addDir(join(d, 'sub'));
    for (const f of FILES) kinds.set(join(d, f), 'file');
    kinds.set(join(d, 'sub', 's.pem'), 'file');
  }
  for (const d of [RUN, `${RUN}/tmp`]) addDir(d);
  kinds.set(`${RUN}/filter.bpf`, 'file');
  kinds.set(`${RUN}/tmp/t.txt`, 'file');
  kinds.set(DENIED, 'file');
  kinds.set('/opt/srt/dist/preload.cjs', 'file');
  addDir('/opt/srt/dist');
  // Symlinked entries: a link to a directory of home, one a run planted in the project pointing
  // out of it, one from the project to a file outside.
  const links = new Map([[`${H}/lnk`, `${H}/a/b`], [`${W}/out`, '/opt/data'], [`${W}/key-link`, `${H}/.ssh/k.pem`]]);
  return { kinds, links };
}

/** Where `p` lands in the tree, as srt's resolveLanding reports it. */
function landingIn(t: Tree, p: string): Landing {
  const parts = p.split('/').filter(Boolean);
  let cur = '/';
  const via: NonNullable<Landing['via']> = [];
  for (let i = 0; i < parts.length; i++) {
    let next = join(cur, parts[i]!);
    for (let hops = 0; t.links.has(next) && hops < 40; hops++) {
      const target = t.links.get(next)!;
      via.push({ link: next, target, system: false });
      next = target;
    }
    if (t.kinds.get(cur) === 'file') {
      return { real: join(cur, ...parts.slice(i)), kind: 'impossible', why: 'not-dir', blockedBy: cur, ...(via.length ? { via } : {}) };
    }
    if (!t.kinds.has(next)) {
      const real = join(next, ...parts.slice(i + 1));
      return { real, kind: 'missing', firstMissing: next, ...(via.length ? { via } : {}) };
    }
    cur = next;
  }
  return { real: cur, kind: t.kinds.get(cur)!, ...(via.length ? { via } : {}), id: { dev: '1', ino: String(cur.length) } };
}

/** The facts srt would gather on this tree (its landings, glob matches, snapshot listings). */
function factsFor(t: Tree, p: Policy, more: { protectedTargets?: ProtectedTarget[]; credentials?: BwrapFacts['credentials']; supervisor?: boolean }): BwrapFacts {
  const rules = [...p.filesystem.allowWrite, ...p.filesystem.denyWrite, ...p.filesystem.denyRead, ...p.filesystem.allowRead, ...(more.credentials?.deny ?? [])];
  const landings = new Map<string, Landing>();
  for (const q of [p.cwd, p.home, ...rules.map(literalOf).filter((x): x is string => x !== null), ...(more.protectedTargets ?? []).map((x) => x.path),
    ...(more.credentials?.masked ?? []).map((m) => m.path)]) landings.set(q, landingIn(t, q));
  const names = [...t.kinds.keys(), ...t.links.keys()];
  const globMatches = new Map<string, Landing[]>();
  for (const r of rules) {
    if (literalOf(r) !== null) continue;
    const test = globMatcher(r.path);
    globMatches.set(r.path, names.filter((n) => test(n)).map((n) => landingIn(t, n)));
  }
  return {
    landings, globMatches, protectedTargets: more.protectedTargets ?? [],
    runDir: RUN, runRoot: dirname(RUN), tmpDir: `${RUN}/tmp`, deniedFile: DENIED, jsonStatusFd: 3,
    runtimeFiles: [{ path: '/opt/srt/dist/preload.cjs', kind: 'file' }],
    // Everything under the home directory is the caller's: a program of theirs could replace it.
    replaceable: new Set(names.filter((n) => isWithin(n, H) && n !== H)),
    ...(more.credentials ? { credentials: more.credentials } : {}),
    seccomp: {
      helperPath: HELPER, goFd: 9, maxProcs: 8192, filterPath: `${RUN}/filter.bpf`, relays: [], exposes: [], mountsPath: `${RUN}/mounts`, stageDir: `${RUN}/stage`,
      ...(more.supervisor ? { supervisor: { rulesPath: `${RUN}/protect.rules`, reportFd: 6 } } : {}),
    },
  };
}

/** Protected names at the top of each write root (the current directory and each existing
 *  allowWrite entry), as srt plans them (protected-plan.ts projectTop), whatever the root is. */
function topsOf(t: Tree, p: Policy): ProtectedTarget[] {
  const roots = [p.cwd, ...p.filesystem.allowWrite.map(literalOf).filter((x): x is string => x !== null)]
    .map((q) => landingIn(t, q)).filter((l) => l.kind === 'file' || l.kind === 'dir').map((l) => l.real);
  return roots.flatMap((r) => [{ path: `${r}/.git/hooks`, kind: 'dir' as const }, { path: `${r}/.bashrc`, kind: 'file' as const }]);
}

/**
 * The allowWrite entries the command must be able to write, whatever they are (a file or a
 * directory): each existing one reached directly, that no deny, credential or protected path
 * covers and a project or local file may name. The mounts and the model must both let it write.
 */
function unwritableEntries(t: Tree, p: Policy, plan: BwrapPlan, more: Parameters<typeof factsFor>[2]): string[] {
  const fs = p.filesystem;
  const covers = (r: PathRule, q: string) => {
    const lit = literalOf(r);
    if (lit !== null) return isWithin(q, landingIn(t, lit).real) || isWithin(q, lit);
    const test = globMatcher(r.path);
    for (let a = q; ; a = dirname(a)) { if (test(a)) return true; if (a === '/') return false; }
  };
  const out: string[] = [];
  for (const r of fs.allowWrite) {
    const lit = literalOf(r);
    if (lit === null) continue;
    const l = landingIn(t, lit);
    if ((l.kind !== 'file' && l.kind !== 'dir') || l.via?.length) continue;
    if ((r.source.scope === 'project' || r.source.scope === 'local') && !isWithin(l.real, p.root)) continue;
    if ([...fs.denyWrite, ...fs.denyRead, ...(more.credentials?.deny ?? [])].some((d) => covers(d, l.real))) continue;
    if ((more.protectedTargets ?? []).some((x) => isWithin(l.real, x.path))) continue;
    if (!mayWrite(plan.access, l.real).allowed || !reach(plan, l.real).write) out.push(`${r.original} (${l.kind}) is not writable`);
  }
  return out;
}

/** The plan, with the snapshots it asks for listed from the tree (srt plans twice the same way). */
function planFor(t: Tree, p: Policy, more: Parameters<typeof factsFor>[2] = {}): BwrapPlan {
  const facts = factsFor(t, p, more);
  const first = buildBwrapPlan(p, facts, ['true']);
  const snapshots = new Map<string, SnapshotEntry[]>();
  for (const d of first.snapshots) {
    const entries: SnapshotEntry[] = [];
    for (const [q, kind] of t.kinds) if (q !== d && dirname(q) === d) entries.push({ name: q.slice(d.length + 1), kind });
    for (const [q, target] of t.links) if (dirname(q) === d) entries.push({ name: q.slice(d.length + 1), kind: 'symlink', target });
    snapshots.set(d, entries);
  }
  return buildBwrapPlan(p, { ...facts, snapshots }, ['true']);
}

/**
 * What the command reaches at `p` once the mounts are made: the mount that shows there is the
 * last one made at `p` or above it (a later mount at a path covers every earlier one below).
 * `host`: the host's own file at `p` shows (for a snapshot, its entries as they were);
 * `write`: through a read-write mount.
 */
function reach(plan: Pick<BwrapPlan, 'ops' | 'snapshots'>, p: string): { host: boolean; write: boolean; by?: MountOp } {
  const { ops } = plan;
  for (let i = ops.length - 1; i >= 0; i--) {
    const m = ops[i]!;
    if (m.kind === 'remount-ro' || !isWithin(p, m.dest)) continue;
    // A snapshot: a read-only tmpfs holding the directory's entries as they were (each bound back).
    if (m.kind === 'tmpfs' && m.dest === p && plan.snapshots.includes(p)) return { host: true, write: false, by: m };
    if (m.kind !== 'bind' || m.source === DENIED) return { host: false, write: false, by: m };
    const host = join(m.source, relative(m.dest, p)) === p;
    const remounted = ops.slice(i + 1).some((r) => r.kind === 'remount-ro' && r.dest === m.dest);
    return { host, write: host && !m.ro && !remounted, by: m };
  }
  return { host: false, write: false };
}

/** Every path of the tree the command could name (real paths: symlinks are judged where they lead). */
const treePaths = (t: Tree) => [...t.kinds.keys()].filter((q) => !isWithin(q, `${RUN}/stage`));

/**
 * Whether the supervisor's read gate refuses opening `p` for a deny glob (plan.gated): some
 * ancestor-or-self of `p` matches, and no re-opened path at or below that match holds `p` (as
 * init/readgate.c judges it). Literal gated paths are masked by the mounts too, so only the globs
 * are left to the gate.
 */
function gatedByGlob(plan: Pick<BwrapPlan, 'gated'>, p: string): boolean {
  return plan.gated.some((g) => {
    if (!g.glob) return false;
    const test = globMatcher(g.path);
    const chain: string[] = [];
    for (let a = p; ; a = dirname(a)) { chain.unshift(a); if (a === '/') break; }
    const match = chain.find((a) => test(a));
    return match !== undefined && !g.reopened.some((o) => isWithin(p, o) && isWithin(o, match));
  });
}

/** Disagreements between the mounts (and the supervisor's read gate for deny globs) and the model on every path of the tree. */
function disagreements(t: Tree, plan: BwrapPlan): string[] {
  expect(plan.errors).toEqual([]);
  const diffs: string[] = [];
  const writable = plan.init && plan.init.landlock !== 'off' ? plan.init.landlock.writable : null;
  for (const q of treePaths(t)) {
    const gated = gatedByGlob(plan, q);
    const mounted = reach(plan, q);
    const got: ReturnType<typeof reach> = gated ? { host: false, write: false } : mounted;
    // A sentinel copy is readable (not the host's file) and never writable.
    const copy = got.by?.kind === 'data';
    const read = got.host || copy;
    const model = { read: mayRead(plan.access, q).allowed, write: mayWrite(plan.access, q).allowed };
    if (read !== model.read || got.write !== model.write) {
      diffs.push(`${q}: mounts read=${read} write=${got.write} (${gated ? 'read gate' : got.by ? `${got.by.kind} ${got.by.dest}` : 'nothing'}), model read=${model.read} write=${model.write}`);
    }
    if (model.write && writable && !writable.some((w) => isWithin(q, w))) diffs.push(`${q}: writable by the model, outside srt-init's Landlock paths`);
  }
  return diffs;
}

const [managed, cli, user, project, local] = (['managed', 'cli', 'user', 'project', 'local'] as const).map(at);
const PROTECTED: ProtectedTarget[] = [
  { path: `${W}/.git/hooks`, kind: 'dir' }, { path: `${W}/.env`, kind: 'file' }, { path: `${W}/src/deep/.env`, kind: 'file' }, { path: `${W}/.vscode`, kind: 'dir' },
];

describe('the Linux mounts agree with the access model', () => {
  const t = makeTree();
  const scenarios: Record<string, { p: Policy; more?: Parameters<typeof factsFor>[2] }> = {
    default: { p: policy() },
    'deny home, re-open the project and a file': {
      p: policy({ denyRead: [user(`${H}/`)], allowRead: [project(W), user(`${H}/a/f.txt`)], allowWrite: [user(`${H}/data`)] }),
    },
    'trust: a repository allow never re-opens a user deny': {
      p: policy({ denyRead: [user(`${H}/.aws`), managed(`${H}/a`), project(`${W}/src`)], allowRead: [project(`${H}/.aws/f.txt`), local(`${H}/a/b`), project(`${W}/src/sub`)] }),
    },
    'write denies, protected paths, a deny more specific than the root': {
      p: policy({ denyWrite: [user(`${W}/src/deep`), cli(`${H}/data/k.pem`)], allowWrite: [user(`${H}/data`)] }), more: { protectedTargets: PROTECTED },
    },
    'globs expanded now': {
      p: policy({ denyRead: [user(`${H}/**/*.pem`), project(`${W}/**/.env`)], allowRead: [user(`${H}/a/*`)], denyWrite: [cli('/opt/**')] }),
    },
    'symlinked entries: through a link, a planted link refused, a link to a denied file': {
      p: policy({ denyRead: [user(`${H}/lnk`), user(`${W}/key-link`)], allowWrite: [project(`${W}/out`), user(`${H}/lnk/c`)] }),
    },
    'credentials: a denied file and a sentinel copy': {
      p: policy({ allowWrite: [user(`${H}/.aws`)] }),
      more: { credentials: { deny: [credentialFile(`${H}/.ssh/k.pem`)].map((c) => ({ path: c.path, glob: false, original: c.path, source: c.source })), masked: [{ path: `${H}/.aws/f.txt`, fd: 9, mode: 0o600 }, { path: `${W}/.env`, fd: 10, mode: 0o600 }] } },
    },
    'a read allowlist: deny / with carve-outs': {
      p: policy({ denyRead: [managed('/')], allowRead: [managed('/usr'), managed(W), managed('/opt/srt')] }),
    },
    'allowWrite naming files (and protected names planned at the top of every root)': {
      p: policy({ allowWrite: [user(`${H}/a/f.txt`), cli('/opt/data/k.pem'), project(`${W}/src/f.txt`), user(`${H}/data`)] }),
    },
    'the supervisor': { p: policy({ denyRead: [user(`${W}/.env`), user(`${H}/.ssh`)] }), more: { supervisor: true, protectedTargets: PROTECTED } },
    'the supervisor: deny globs judged at each open, re-opened by allows of enough trust': {
      p: policy({ denyRead: [user(`${H}/**/*.pem`), project(`${W}/**/.env`), cli(`${H}/a/*`)], allowRead: [user(`${H}/a/b`), project(`${H}/.ssh/k.pem`)] }),
      more: { supervisor: true, protectedTargets: PROTECTED },
    },
  };
  for (const [name, { p, more: given }] of Object.entries(scenarios)) {
    it(name, () => {
      const more = { ...given, protectedTargets: [...(given?.protectedTargets ?? []), ...topsOf(t, p)] };
      const plan = planFor(t, p, more);
      expect(disagreements(t, plan).join('\n')).toBe('');
      expect(unwritableEntries(t, p, plan, more)).toEqual([]);
    });
  }

  it('an allowWrite file is writable, and only it: its siblings and its directory stay read-only', () => {
    const p = policy({ allowWrite: [user(`${H}/a/f.txt`), cli('/opt/data/k.pem')] });
    const plan = planFor(t, p, { protectedTargets: topsOf(t, p) });
    for (const f of [`${H}/a/f.txt`, '/opt/data/k.pem']) {
      expect(reach(plan, f).write, f).toBe(true);
      for (const other of [dirname(f), join(dirname(f), '.env'), join(dirname(f), 'sub')]) expect(reach(plan, other).write, other).toBe(false);
    }
  });

  it('200 random policies, with and without the supervisor', () => {
    let seed = 0x51ed;
    const rnd = (n: number) => { seed = (seed * 1103515245 + 12345) & 0x7fffffff; return seed % n; };
    const pick = <T,>(xs: readonly T[]): T => xs[rnd(xs.length)]!;
    const files = DIRS.flatMap((d) => FILES.map((f) => join(d, f)));
    const paths = [...DIRS, `${H}/lnk`, `${W}/out`, `${W}/key-link`, `${H}/nothing/here`, ...files];
    const globs = [`${H}/**/*.pem`, `${H}/a/*`, `${W}/**/.env`, `${H}/a/b/[!c]*`, '/opt/**'];
    const scopes = [managed, cli, user, project, local];
    for (let n = 0; n < 200; n++) {
      const rule = (): PathRule => pick(scopes)(rnd(5) === 0 ? pick(globs) : pick(paths));
      const many = (k: number) => Array.from({ length: rnd(k) }, rule);
      const p = policy({ denyRead: many(4), allowRead: many(4), denyWrite: many(3), allowWrite: many(3).filter((r) => !r.glob) });
      const more = { supervisor: rnd(2) === 0, protectedTargets: [...PROTECTED.filter(() => rnd(2) === 0), ...topsOf(t, p)] };
      const plan = planFor(t, p, more);
      expect(disagreements(t, plan), JSON.stringify(p.filesystem, null, 1)).toEqual([]);
      expect(unwritableEntries(t, p, plan, more), JSON.stringify(p.filesystem, null, 1)).toEqual([]);
    }
  }, 120_000);
});

describe('the interpreter notices a mount dropped or widened', () => {
  const t = makeTree();
  // No snapshot here: a mask inside one is held twice (the snapshot does not list what it masks).
  const p = policy({ denyRead: [user('/opt/data/z'), user(`${W}/src/k.pem`), user('/etc/f.txt')], allowRead: [user('/opt/data/z/sub')], denyWrite: [user(`${W}/src`)] });
  const plan = planFor(t, p, { protectedTargets: PROTECTED });
  expect(plan.snapshots).toEqual([]);

  it('the plan itself agrees', () => expect(disagreements(t, plan).join('\n')).toBe(''));

  it('every mount that makes access differ from its parent\'s is load-bearing: dropped, the interpreter sees it', () => {
    const model = (q: string) => `${mayRead(plan.access, q).allowed} ${mayWrite(plan.access, q).allowed}`;
    const loadBearing = plan.ops.map((m, i) => ({ m, i }))
      .filter(({ m }) => m.kind !== 'remount-ro' && m.dest !== '/' && t.kinds.has(m.dest) && model(m.dest) !== model(dirname(m.dest)));
    expect(loadBearing.map(({ m }) => `${m.kind} ${m.dest}`).sort()).toEqual([
      `bind ${W}`, `bind ${W}/.env`, `bind ${W}/.git/hooks`, `bind ${W}/src`, `bind ${W}/src/k.pem`, `bind ${RUN}`, `bind ${RUN}/tmp`, 'bind /etc/f.txt', 'bind /opt/data/z/sub', 'tmpfs /opt/data/z', `tmpfs ${dirname(RUN)}`,
    ].sort());
    for (const { m, i } of loadBearing) {
      const dropped = { ...plan, ops: plan.ops.filter((_, k) => k !== i) };
      expect(disagreements(t, dropped), `without ${m.kind} ${m.dest}`).not.toEqual([]);
    }
  });

  it('a read-only bind made read-write, or a mask made a bind of the host, is seen', () => {
    const widen = (pred: (m: MountOp) => boolean, to: (m: MountOp) => MountOp) => {
      const i = plan.ops.findIndex(pred);
      expect(i).toBeGreaterThan(-1);
      return disagreements(t, { ...plan, ops: plan.ops.map((m, k) => (k === i ? to(m) : m)) });
    };
    expect(widen((m) => m.kind === 'bind' && m.dest === `${W}/src`, (m) => ({ ...m, ro: false }) as MountOp)).not.toEqual([]);
    expect(widen((m) => m.kind === 'tmpfs' && m.dest === '/opt/data/z', (m) => ({ kind: 'bind', dest: m.dest, source: m.dest, ro: true }))).not.toEqual([]);
    expect(widen((m) => m.kind === 'bind' && m.dest === `${W}/src/k.pem`, (m) => ({ ...m, source: m.dest }) as MountOp)).not.toEqual([]);
  });
});
