// The access model itself (profiles/access.ts): the oracle every backend's translation is held
// to, so its rules are tested directly — the same cases the bwrap plan is tested with.
import { describe, expect, it } from 'vitest';
import { buildAccessRules, type AccessFacts } from '../../src/profiles/access.js';
import { accessIndex, mayRead, mayWrite } from '../../src/profiles/verdicts.js';
import type { PathRule, Policy } from '../../src/policy.js';
import { cli, credentialFile, Landings, local, managed, policy, project, user } from './policy-fixtures.js';

const H = '/Users/ann';
const W = `${H}/proj`;

function rules(fs: Partial<Policy['filesystem']>, extra: Partial<Policy> = {}, more: Partial<AccessFacts> = {}) {
  return buildAccessRules(policy(fs, extra), {
    landings: new Landings(), tmpDir: `${H}/.srt/run/1-a/tmp`, runDir: `${H}/.srt/run/1-a`, runRoot: `${H}/.srt/run`,
    protect: () => [{ region: { base: `${W}/.git/hooks` }, why: '.git/hooks' }],
    ...more,
  });
}
const reads = (r: ReturnType<typeof rules>, p: string) => mayRead(r, p).allowed;
const writes = (r: ReturnType<typeof rules>, p: string) => mayWrite(r, p).allowed;

describe('access model: reads', () => {
  it('denyRead hides, allowRead re-opens, a deny more specific than the allow stays', () => {
    const r = rules({ denyRead: [user(H), user(`${W}/keys`)], allowRead: [user(W)] });
    expect(reads(r, `${H}/.ssh/id`)).toBe(false);
    expect(reads(r, `${W}/src/a.ts`)).toBe(true);
    expect(reads(r, `${W}/keys/k`)).toBe(false);
    expect(mayRead(r, `${H}/.ssh/id`).why).toBe(`hidden by denyRead ${H} (user /user.json)`);
  });

  it('scope trust: repository allows never re-open user, cli or managed denies; user never cli or managed; equal trust may', () => {
    for (const deny of [user, cli, managed]) for (const allow of [project, local]) {
      expect(reads(rules({ denyRead: [deny(`${H}/.aws`)], allowRead: [allow(`${H}/.aws`)] }), `${H}/.aws/config`)).toBe(false);
    }
    expect(reads(rules({ denyRead: [user(H)], allowRead: [user(`${H}/p`)] }), `${H}/p/x`)).toBe(true);
    expect(reads(rules({ denyRead: [managed(H)], allowRead: [user(`${H}/p`)] }), `${H}/p/x`)).toBe(false);
    expect(reads(rules({ denyRead: [cli(H)], allowRead: [user(`${H}/p`)] }), `${H}/p/x`)).toBe(false);
    expect(reads(rules({ denyRead: [user(H)], allowRead: [cli(`${H}/p`)] }), `${H}/p/x`)).toBe(true);
    expect(reads(rules({ denyRead: [managed(H)], allowRead: [managed(`${H}/p`)] }), `${H}/p/x`)).toBe(true);
    expect(reads(rules({ denyRead: [project(H)], allowRead: [project(`${H}/p`)] }), `${H}/p/x`)).toBe(true);
  });

  it("a parent directory's project deny is not re-opened by the nested repository's files, but by the user's", () => {
    const parent = (path: string): PathRule => ({ ...project(path), source: { scope: 'project', file: `${H}/.srt/settings.json`, outsideRoot: true } });
    expect(reads(rules({ denyRead: [parent(H)], allowRead: [project(`${H}/p`), local(`${H}/p`)] }), `${H}/p/x`)).toBe(false);
    expect(reads(rules({ denyRead: [parent(H)], allowRead: [user(`${H}/p`)] }), `${H}/p/x`)).toBe(true);
  });

  it('nothing re-opens a credential file; the current directory re-opens user denies, not managed ones (and says so)', () => {
    const creds = { credentials: { envVars: [], files: [credentialFile(`${H}/.ssh`)], awsPairs: [], sigv4: { presigned: 'deny' as const, streaming: 'deny' as const, sigv4a: 'deny' as const, mint: 'deny' as const }, allowPlaintextInject: false } };
    expect(reads(rules({ allowRead: [managed(`${H}/.ssh`)] }, creds), `${H}/.ssh/id`)).toBe(false);
    expect(reads(rules({ denyRead: [user(H)] }), `${W}/a`)).toBe(true);
    const m = rules({ denyRead: [managed(H)] });
    expect(reads(m, `${W}/a`)).toBe(false);
    expect(m.warnings.join()).toContain(`the current directory ${W} is inside a denyRead region`);
  });

  it('globs: the shallowest matching prefix is the deny; a literal allow re-opens it when at least as deep; between globs only the same glob', () => {
    const r = rules({ denyRead: [user(`${H}/**/*.pem`)], allowRead: [user(`${H}/certs`), user(`${H}/certs/public.pem`)] });
    expect(reads(r, `${H}/a/k.pem`)).toBe(false);
    expect(reads(r, `${H}/certs/k.pem`)).toBe(false); // the match is deeper than the allow
    expect(reads(r, `${H}/certs/public.pem`)).toBe(true); // the allow names the match itself
    expect(reads(r, `${H}/k.pem/inside`)).toBe(false); // a matching directory hides what is below it
    const g = rules({ denyRead: [user(`${H}/**/*.pem`)], allowRead: [user(`${H}/certs/*.pem`)] });
    expect(reads(g, `${H}/certs/a.pem`)).toBe(false);
    const same = rules({ denyRead: [user(`${H}/**/*.pem`)], allowRead: [managed(`${H}/**/*.pem`)] });
    expect(reads(same, `${H}/certs/a.pem`)).toBe(true);
    const lit = rules({ denyRead: [user(`${H}/secrets`)], allowRead: [user(`${H}/secrets/*.pub`)] });
    expect(reads(lit, `${H}/secrets/id.pub`)).toBe(true);
    expect(reads(lit, `${H}/secrets/id`)).toBe(false);
    // A glob matching the deny's own path is as specific as it (an allow on the deny's path wins);
    // one matching only an ancestor of it is less specific.
    expect(reads(rules({ denyRead: [user(`${H}/secrets`)], allowRead: [user(`${H}/*`)] }), `${H}/secrets/id`)).toBe(true);
    expect(reads(rules({ denyRead: [user(`${H}/secrets/deep`)], allowRead: [user(`${H}/*`)] }), `${H}/secrets/deep/id`)).toBe(false);
  });

  it("another run's directory is hidden, this run's own is not", () => {
    const r = rules({});
    expect(reads(r, `${H}/.srt/run/2-b/tmp/x`)).toBe(false);
    expect(reads(r, `${H}/.srt/run/1-a/tmp/x`)).toBe(true);
  });
});

describe('access model: writes', () => {
  it('only under write roots and TMPDIR; denyWrite wins whatever its depth and scope; protected paths too', () => {
    const r = rules({ allowWrite: [user(`${H}/out`)], denyWrite: [project(`${H}/out`), user(`${W}/.env`)] });
    expect(writes(r, `${W}/a.ts`)).toBe(true);
    expect(writes(r, `${H}/out/x`)).toBe(false);
    expect(writes(r, `${W}/.env`)).toBe(false);
    expect(writes(r, `${W}/.git/hooks/pre-commit`)).toBe(false);
    expect(writes(r, `${H}/notes`)).toBe(false);
    expect(writes(r, `${H}/.srt/run/1-a/tmp/x`)).toBe(true); // TMPDIR, under protected ~/.srt all the same
    expect(mayWrite(r, `${W}/.env`).why).toBe(`write-denied by denyWrite ${W}/.env (user /user.json)`);
  });

  it('a write needs a read: a repository allowWrite under a user deny stays hidden', () => {
    const r = rules({ denyRead: [user(H)], allowWrite: [project(`${W}/build`)] });
    expect(writes(r, `${W}/build/x`)).toBe(true); // the current directory re-opens the project
    const outside = rules({ denyRead: [user(`${H}/data`)], allowWrite: [project(`${H}/data/x`)] }, { root: H });
    expect(writes(outside, `${H}/data/x/y`)).toBe(false);
  });

  it('a repository allowWrite that leads out of the project root through a symlink is ignored with a warning', () => {
    const landings = new Landings([[`${W}/build`, { real: '/etc', kind: 'dir' }]]);
    const r = rules({ allowWrite: [project(`${W}/build`)] }, {}, { landings });
    expect(writes(r, '/etc/passwd')).toBe(false);
    expect(r.warnings.join()).toContain('filesystem.allowWrite: /Users/ann/proj/build leads to /etc, outside the project root');
  });

  it('an allowWrite entry that is a symlink to one of its own ancestors is ignored with a warning naming both, system link or not', () => {
    const up = (link: string, target: string) => ({ link, target, system: true });
    const landings = new Landings([
      [`/srv/area/parent`, { real: '/srv', kind: 'dir', via: [up('/srv/area/parent', '..')] }],
      // Through a second link, and below the link: still a directory holding a link on the way.
      ['/opt/alias', { real: '/opt', kind: 'dir', via: [up('/opt/alias', '/opt/area/up'), up('/opt/area/up', '..')] }],
      ['/data/area/up/area', { real: '/data/area', kind: 'dir', via: [up('/data/area/up', '..')] }],
      // A system link elsewhere stays usable.
      ['/var/run/x', { real: '/run/x', kind: 'dir', via: [up('/var/run', '/run')] }],
    ]);
    const r = rules({ allowWrite: [user('/srv/area/parent'), user('/opt/alias'), user('/data/area/up/area'), user('/var/run/x')] }, {}, { landings });
    expect(writes(r, '/srv/other/x')).toBe(false);
    expect(writes(r, '/opt/x')).toBe(false);
    expect(writes(r, '/data/area/x')).toBe(false);
    expect(writes(r, '/run/x/y')).toBe(true);
    expect(writes(r, `${W}/a`)).toBe(true); // the rest of the run goes on
    expect(r.warnings).toEqual([
      'filesystem.allowWrite: /srv/area/parent: leads to /srv, which holds /srv/area/parent itself (a symlink to an ancestor of its own); entry ignored (name the directory meant instead)',
      'filesystem.allowWrite: /opt/alias: leads to /opt, which holds /opt/alias itself (a symlink to an ancestor of its own); entry ignored (name the directory meant instead)',
      'filesystem.allowWrite: /data/area/up/area: leads to /data/area, which holds /data/area/up/area itself (a symlink to an ancestor of its own); entry ignored (name the directory meant instead)',
    ]);
  });

  it('filesystem.disabled: everything the user may write, but credential files stay hidden', () => {
    const creds = { credentials: { envVars: [], files: [credentialFile(`${H}/.netrc`)], awsPairs: [], sigv4: { presigned: 'deny' as const, streaming: 'deny' as const, sigv4a: 'deny' as const, mint: 'deny' as const }, allowPlaintextInject: false } };
    const r = rules({ disabled: true }, creds);
    expect(writes(r, '/etc/hosts')).toBe(true);
    expect(reads(r, `${H}/.netrc`)).toBe(false);
    expect(writes(r, `${H}/.netrc`)).toBe(false);
  });
});

describe('access model: a reference-tool file whose allowWrite is the whole list', () => {
  it('the current directory is writable only where an entry covers it; TMPDIR always', () => {
    const whole = { wholeWriteList: { scope: 'user' as const, file: `${H}/.srt-settings.json` } };
    expect(writes(rules({ ...whole }), `${W}/a`)).toBe(false);
    expect(writes(rules({ ...whole }), `${H}/.srt/run/1-a/tmp/x`)).toBe(true);
    expect(writes(rules({ ...whole, allowWrite: [user(`${W}/src`)] }), `${W}/a`)).toBe(false);
    expect(writes(rules({ ...whole, allowWrite: [user(`${W}/src`)] }), `${W}/src/a`)).toBe(true);
    expect(writes(rules({ ...whole, allowWrite: [user(W)] }), `${W}/a`)).toBe(true);
    expect(writes(rules({}), `${W}/a`)).toBe(true);
  });
});

describe('accessIndex: the same answers as mayRead/mayWrite, looked up instead of scanned', () => {
  it('on random policies with literal and glob rules of every scope', () => {
    let seed = 0x1dea;
    const rnd = (n: number) => { seed = (seed * 1103515245 + 12345) & 0x7fffffff; return seed % n; };
    const pick = <T,>(xs: readonly T[]): T => xs[rnd(xs.length)]!;
    const dirs = [H, `${H}/a`, `${H}/a/b`, `${H}/a/b/c`, W, `${W}/x`, `${W}/x/y`, '/opt/data', '/opt/data/z', '/'];
    const globs = [`${H}/**/*.pem`, `${H}/a/*`, `${W}/**/secret*`, `${H}/a/b/[!c]*`, '/opt/**'];
    const scopes = [managed, cli, user, project, local];
    const paths = dirs.flatMap((d) => ['', '/k.pem', '/secret1', '/c', '/q/r.pem', '/.bashrc'].map((t) => `${d === '/' ? '' : d}${t}` || '/'));
    for (let n = 0; n < 300; n++) {
      const rule = () => pick(scopes)(rnd(4) === 0 ? pick(globs) : pick(dirs));
      const many = (k: number) => Array.from({ length: rnd(k) }, rule);
      const r = rules({ denyRead: many(4), allowRead: many(4), denyWrite: many(3), allowWrite: many(3).filter((x) => !x.glob) }, {}, {
        protect: (roots) => roots.map((root) => ({ region: { base: root, tail: '**/.bashrc' }, why: '.bashrc' })),
      });
      const index = accessIndex(r);
      for (const p of paths) {
        expect(index.read(p), `read ${p}`).toBe(reads(r, p));
        expect(index.write(p), `write ${p}`).toBe(writes(r, p));
      }
    }
  });
});
