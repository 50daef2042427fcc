// srt-init covers every denied file with a read-only bind of srt's denied file (init/verify.c):
// the first by a bind and a read-only remount, the next ones by clones of it (open_tree,
// move_mount). A kernel before 5.2, or a container's seccomp filter, refuses those calls: every
// file is then bound and remounted as the first. Either way each denied file, in a snapshot
// (a directory outside the writable paths) and in the working directory, must be unreadable,
// unwritable, and a read-only mount, and the host's files unchanged.
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { attempt, keyValues, REPO, SRT_BIN, tempDir } from './helpers.js';

const tmp = tempDir('srt-deny-binds-');
afterAll(() => tmp.cleanup());
const home = join(tmp.path, 'home');
const cwd = join(tmp.path, 'proj');
const outside = join(tmp.path, 'outside');
for (const d of [home, join(cwd, 'secrets'), outside]) mkdirSync(d, { recursive: true });
const denied = [join(cwd, 'secrets', 'k1'), join(cwd, 'secrets', 'k2'), join(cwd, 'k3'), join(outside, 'a'), join(outside, 'b'), join(outside, 'c')];
for (const p of denied) writeFileSync(p, `SECRET ${p}\n`);
writeFileSync(join(outside, 'public'), 'PUBLIC\n');
const settings = join(home, 'denies.json');
writeFileSync(settings, JSON.stringify({ filesystem: { denyRead: denied } }));

const SHIM = join(REPO, 'test/e2e/fixtures/refuse-syscall.py');
const script = [
  ...denied.flatMap((p, i) => [
    attempt(`read${i}`, `cat ${p}`),
    attempt(`write${i}`, `echo PWNED > ${p}`),
    `echo "mount${i}=$(awk -v p=${p} '$5 == p { split($6, o, ","); print o[1] }' /proc/self/mountinfo | tail -n 1)"`,
  ]),
  `echo "public=$(cat ${join(outside, 'public')})"`,
].join('\n');

/** srt with the denies, optionally under a seccomp filter refusing syscall `nr` with `errno`. */
function run(refuse?: [nr: number, errno: number]): ReturnType<typeof spawnSync> & { stdout: string; stderr: string } {
  const argv = [process.execPath, SRT_BIN, '--settings', settings, '--', 'sh', '-c', script];
  const [cmd, ...args] = refuse ? ['python3', SHIM, String(refuse[0]), String(refuse[1]), ...argv] : argv;
  return spawnSync(cmd!, args, { cwd, encoding: 'utf8', env: { PATH: process.env.PATH, HOME: home, LANG: 'C.UTF-8' }, timeout: 60_000 }) as never;
}

describe('every denied file is a read-only bind, with or without the new mount API', () => {
  it.each([
    ['with open_tree and move_mount', undefined],
    ['open_tree refused with ENOSYS (a kernel before 5.2)', [428, 38]],
    ['move_mount refused with EPERM (a container filter)', [429, 1]],
  ] as const)('%s', (_, refuse) => {
    const r = run(refuse as [number, number] | undefined);
    expect(r.status, r.stderr).toBe(0);
    const got = keyValues(r.stdout);
    denied.forEach((_, i) => {
      expect(got[`read${i}`], `${denied[i]}: ${r.stdout}`).toBe('no');
      expect(got[`write${i}`], denied[i]).toBe('no');
      expect(got[`mount${i}`], denied[i]).toBe('ro');
    });
    expect(got.public).toBe('PUBLIC');
    expect(r.stdout).not.toContain('SECRET');
    for (const p of denied) expect(readFileSync(p, 'utf8')).toBe(`SECRET ${p}\n`);
  });
});

// srt-init reaches each denied file from the deepest directory its path shares with the last one
// bound or checked (init/verify.c, dirs): directories whose names share a prefix (a, ab, abc),
// climbs up and down the tree, and a path deeper than it holds directories for (walked from /)
// must each get their own file covered, and only theirs.
describe('denied files spread over a tree: each covered where it lies, its neighbours untouched', () => {
  const rel = ['ab/f', 'a/f', 'a/b/c/d/e/f', 'abc/f', 'a/b/f', 'f', 'a/bc/d/f', 'b/f', `deep/${'d/'.repeat(300)}f`];
  const roots = [join(cwd, 'tree'), join(outside, 'tree')];
  const spread = roots.flatMap((r) => rel.map((p) => join(r, p)));
  const neighbours = spread.map((p) => join(p, '..', 'g'));
  for (const p of spread) {
    mkdirSync(join(p, '..'), { recursive: true });
    writeFileSync(p, `SECRET ${p}\n`);
    writeFileSync(join(p, '..', 'g'), 'PUBLIC\n');
  }
  const spreadSettings = join(home, 'spread.json');
  writeFileSync(spreadSettings, JSON.stringify({ filesystem: { denyRead: spread } }));
  const spreadScript = [
    ...spread.flatMap((p, i) => [
      attempt(`read${i}`, `cat ${p}`),
      `echo "mount${i}=$(awk -v p=${p} '$5 == p { split($6, o, ","); print o[1] }' /proc/self/mountinfo | tail -n 1)"`,
    ]),
    ...neighbours.map((p, i) => `echo "public${i}=$(cat ${p})"`),
  ].join('\n');

  it.each([
    ['with open_tree and move_mount', undefined],
    ['move_mount refused with EPERM (a container filter)', [429, 1]],
  ] as const)('%s', (_, refuse) => {
    const argv = [process.execPath, SRT_BIN, '--settings', spreadSettings, '--', 'sh', '-c', spreadScript];
    const [cmd, ...args] = refuse ? ['python3', SHIM, String(refuse[0]), String(refuse[1]), ...argv] : argv;
    const r = spawnSync(cmd!, args, { cwd, encoding: 'utf8', env: { PATH: process.env.PATH, HOME: home, LANG: 'C.UTF-8' }, timeout: 60_000 });
    expect(r.status, r.stderr).toBe(0);
    const got = keyValues(r.stdout);
    spread.forEach((p, i) => {
      expect(got[`read${i}`], p).toBe('no');
      expect(got[`mount${i}`], p).toBe('ro');
      expect(got[`public${i}`], neighbours[i]).toBe('PUBLIC');
    });
    expect(r.stdout).not.toContain('SECRET');
    for (const p of spread) expect(readFileSync(p, 'utf8')).toBe(`SECRET ${p}\n`);
  });
});
