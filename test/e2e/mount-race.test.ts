// Path races between srt's plan and bwrap's mounts (SPEC §3 "through any path spelling, symlink
// or rename", invariants 1, 2 and 10). srt plans with real paths; bwrap resolves the strings it
// is given again, following symlinks. A concurrent process (another sandbox with the project
// writable) that swaps a directory on the way with a symlink makes bwrap bind something else,
// or put a mask somewhere else. The helper checks every planned mount before the command runs.
//
// Deterministic: srt is held after its plan and before bwrap (a run directory of a dead run makes
// it take the state lock, which the test holds), the test swaps, then lets it go.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmdirSync, statSync, symlinkSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { initArgv } from '../../src/profiles/init-args.js';
import { buildSeccompFilter } from '../../src/profiles/seccomp.js';
import { INIT_HELPER_PATH, hostSeccompArch } from '../../src/platform/init-helper.js';
import { scratchDirs, SRT_BIN, tempDir, track, stopStragglers } from './helpers.js';

const PYTHON = ['/usr/bin/python3', '/bin/python3'].find((p) => existsSync(p)) ?? 'python3';
const tmp = tempDir('srt-mount-race-');
afterAll(async () => {
  await stopStragglers();
  tmp.cleanup();
});
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

let n = 0;
const fresh = scratchDirs(() => tmp.path);
/** A fresh home holding a ~/.npmrc, and project. */
function scratch(): { home: string; project: string } {
  const { home, cwd } = fresh();
  writeFileSync(join(home, '.npmrc'), 'registry=https://registry.npmjs.org/\n');
  return { home, project: cwd };
}

const listing = (dir: string) => readdirSync(dir).sort();

interface Held { out: () => string; exit: Promise<number | null>; release: () => void }

/** Start srt and hold it after its plan, before bwrap: resolves once its run directory exists. */
async function startHeld(home: string, cwd: string, args: string[]): Promise<Held> {
  const run = join(home, '.srt', 'run');
  const lock = join(home, '.srt', 'state', '.lock');
  mkdirSync(join(run, '0-dead'), { recursive: true }); // pid 0 never runs: srt reaps it under the lock
  mkdirSync(lock, { recursive: true });
  const child = track(spawn(process.execPath, [SRT_BIN, ...args], {
    cwd, env: { PATH: process.env.PATH, HOME: home, LANG: 'C.UTF-8' }, stdio: ['ignore', 'pipe', 'pipe'],
  }));
  let out = '';
  child.stdout!.on('data', (b: Buffer) => { out += b.toString(); });
  child.stderr!.on('data', (b: Buffer) => { out += b.toString(); });
  const exit = new Promise<number | null>((res) => child.on('exit', (code) => res(code)));
  for (let i = 0; i < 200 && !readdirSync(run).some((d) => d !== '0-dead'); i++) await sleep(25);
  if (!readdirSync(run).some((d) => d !== '0-dead')) throw new Error(`srt never planned: ${out}`);
  return { out: () => out, exit, release: () => rmdirSync(lock) };
}

async function waitForFile(path: string): Promise<boolean> {
  for (let i = 0; i < 200 && !existsSync(path); i++) await sleep(25);
  return existsSync(path);
}

describe('a directory swapped with a symlink between srt\'s plan and the mounts', () => {
  it('the current directory swapped with a symlink to $HOME: $HOME is never bound writable (the run stops, nothing written)', async () => {
    const { home, project } = scratch();
    const web = join(project, 'web');
    mkdirSync(web);
    writeFileSync(join(web, 'index.html'), 'hi\n');
    const before = listing(home);
    const held = await startHeld(home, web, ['--', 'sh', '-c', `echo pwned >> ${join(home, 'notes.txt')}; echo x >> ${join(home, '.npmrc')}; echo wrote`]);
    renameSync(web, join(project, 'web.real'));
    symlinkSync('../home', web); // relative: bwrap resolves it the same outside and in its new root
    held.release();
    const code = await held.exit;
    expect(held.out()).not.toContain('wrote');
    expect(code).toBe(125);
    expect(held.out()).toMatch(/srt: .*(not what srt planned|changed or disappeared while srt)/);
    // The host: nothing new in $HOME, ~/.npmrc untouched, the project as it was.
    expect(existsSync(join(home, 'notes.txt'))).toBe(false);
    expect(readFileSync(join(home, '.npmrc'), 'utf8')).toBe('registry=https://registry.npmjs.org/\n');
    expect(listing(home).filter((e) => e !== '.srt')).toEqual(before);
    expect(listing(join(project, 'web.real'))).toEqual(['index.html']);
  });

  it('the directory holding a read-denied file swapped with a decoy while bwrap mounts, and back: the mask is never placed elsewhere', async () => {
    const { home, project } = scratch();
    const web = join(project, 'web');
    mkdirSync(web);
    writeFileSync(join(web, 'secret'), 'TOP-SECRET\n');
    mkdirSync(join(project, 'decoy'));
    writeFileSync(join(project, 'decoy', 'secret'), 'decoy\n');
    const held = await startHeld(home, project, ['--deny-read', join(web, 'secret'), '--',
      'sh', '-c', 'touch started; while [ ! -e go ]; do sleep 0.05; done; cat web/secret']);
    renameSync(web, join(project, 'web.real'));
    symlinkSync('decoy', web);
    held.release();
    // If the command starts, the real directory goes back where the deny names it.
    const started = await Promise.race([waitForFile(join(project, 'started')), held.exit.then(() => false)]);
    unlinkSync(web);
    renameSync(join(project, 'web.real'), web);
    if (started) writeFileSync(join(project, 'go'), '');
    const code = await held.exit;
    expect(held.out()).not.toContain('TOP-SECRET');
    expect(code).toBe(125);
    expect(readFileSync(join(web, 'secret'), 'utf8')).toBe('TOP-SECRET\n');
    expect(readFileSync(join(project, 'decoy', 'secret'), 'utf8')).toBe('decoy\n');
  });

  it('a run that is not raced still starts (the check passes on an ordinary plan with masks, carve-outs and binds)', async () => {
    const { home, project } = scratch();
    mkdirSync(join(home, '.ssh'));
    writeFileSync(join(home, '.ssh', 'id_ed25519'), 'KEY\n');
    mkdirSync(join(home, 'notes'));
    writeFileSync(join(project, '.env'), 'TOKEN=x\n');
    const held = await startHeld(home, project, ['--deny-read', join(home, '.ssh'), '--deny-read', join(project, '.env'),
      '--allow-write', join(home, 'notes'), '--', 'sh', '-c', 'echo ok > out; echo n > ~/notes/n; cat ~/.ssh/id_ed25519 .env 2>&1; echo done']);
    held.release();
    const code = await held.exit;
    expect(code).toBe(0);
    expect(held.out()).toContain('done');
    expect(held.out()).not.toContain('KEY');
    expect(held.out()).not.toContain('TOKEN');
    expect(readFileSync(join(project, 'out'), 'utf8')).toBe('ok\n');
    expect(readFileSync(join(home, 'notes', 'n'), 'utf8')).toBe('n\n');
  });
});

// The red team's race, bounded: a sandboxed command at the project root keeps exchanging web/
// with a symlink to $HOME (renameat2 RENAME_EXCHANGE) while the user starts srt from inside
// web/ again and again. Without the checks, about half of such runs bound $HOME writable.
const SWAPPER = [
  'import ctypes, os, time',
  'libc = ctypes.CDLL(None, use_errno=True)',
  'open("swapping", "w").close()',
  'end = time.time() + 40',
  'while time.time() < end and not os.path.exists("stop"):',
  '    if libc.renameat2(-100, b"web", -100, b".lnk", 2) != 0: raise OSError(ctypes.get_errno(), "renameat2")',
  '    time.sleep(0.0002)',
].join('\n');

describe('a concurrent sandbox racing the plan', () => {
  it('srt started over and over from a directory another sandbox keeps swapping with a symlink to $HOME never writes $HOME', async () => {
    const { home, project } = scratch();
    mkdirSync(join(project, 'web'));
    symlinkSync(home, join(project, '.lnk'));
    const env = { PATH: process.env.PATH, HOME: home, LANG: 'C.UTF-8' };
    const marker = join(home, 'notes.txt');
    // The user's shell is inside web/ before the swapping starts (its cwd is the real directory,
    // whichever name that has at a given moment), and starts srt there again and again.
    const swapping = join(project, 'swapping');
    const loop = `while [ ! -e ${swapping} ]; do sleep 0.05; done; ` +
      `for i in 1 2 3 4 5 6 7 8 9 10 11 12; do ${process.execPath} ${SRT_BIN} -- sh -c 'echo k >> ${marker}' 2>/dev/null; done; echo done`;
    const user = track(spawn('sh', ['-c', loop], { cwd: join(project, 'web'), env, stdio: ['ignore', 'pipe', 'ignore'] }));
    const userDone = new Promise((res) => user.on('exit', res));
    const attacker = track(spawn(process.execPath, [SRT_BIN, '--', PYTHON, '-c', SWAPPER], { cwd: project, env, stdio: 'ignore' }));
    const attackerDone = new Promise((res) => attacker.on('exit', res));
    try {
      await userDone;
    } finally {
      writeFileSync(join(project, 'stop'), '');
      await attackerDone;
    }
    expect(existsSync(swapping)).toBe(true);
    expect(existsSync(marker)).toBe(false);
    expect(listing(home).filter((e) => e !== '.srt')).toEqual(['.npmrc']);
  }, 90_000);
});

// The helper's own check, given a plan that differs from what bwrap mounted (the window between
// srt's last look and bwrap's mounts is too short to hit on purpose): each difference stops it
// before the command runs, exit 125.
describe('the helper\'s mount check (--verify) against what bwrap really mounted', () => {
  const BWRAP = ['/usr/bin/bwrap', '/bin/bwrap'].find((p) => existsSync(p)) ?? 'bwrap';
  const id = (p: string) => { const s = statSync(p, { bigint: true }); return [String(s.dev), String(s.ino)]; };
  function check(records: string[][], binds: string[], chdir: string, script?: string) {
    const base = join(tmp.path, `verify-${n++}`);
    mkdirSync(base);
    const planFile = join(base, 'plan');
    writeFileSync(planFile, records.flat().map((f) => `${f}\0`).join(''));
    const filter = join(base, 'filter.bpf');
    writeFileSync(filter, buildSeccompFilter({ arch: hostSeccompArch()!, allowUnixSockets: false, allowNamespaces: false }));
    const marker = join(base, 'RAN');
    const r = spawnSync(BWRAP, ['--unshare-user', '--unshare-net', '--unshare-pid', '--die-with-parent', '--as-pid-1',
      '--cap-drop', 'ALL', '--cap-add', 'CAP_SYS_ADMIN', '--cap-add', 'CAP_SETPCAP', '--cap-add', 'CAP_DAC_READ_SEARCH', '--cap-add', 'CAP_SYS_RESOURCE',
      '--ro-bind', '/', '/', '--dev', '/dev', '--proc', '/proc', '--bind', base, base, ...binds, '--chdir', chdir,
      '--', ...initArgv({ helperPath: INIT_HELPER_PATH, relays: [], exposes: [], landlock: 'off', verify: planFile, maxProcs: 1000, filter }),
      ...(script ? ['sh', '-c', `touch ${marker}; ${script}`] : ['touch', marker])], { encoding: 'utf8', timeout: 20_000 });
    return { code: r.status, stdout: r.stdout, stderr: r.stderr, ran: existsSync(marker) };
  }
  function dirs() {
    const base = join(tmp.path, `dirs-${n++}`);
    for (const d of ['a', 'b', 'real/sub']) mkdirSync(join(base, d), { recursive: true });
    symlinkSync('real', join(base, 'lnk'));
    return base;
  }

  it('the plan as mounted passes, and the command runs', () => {
    const d = dirs();
    const r = check([['B', join(d, 'a'), ...id(join(d, 'b')), 'r'], ['C', ...id(join(d, 'b'))]], ['--ro-bind', join(d, 'b'), join(d, 'a')], join(d, 'a')); // a shows b
    expect(r.stderr).toBe('');
    expect(r.ran).toBe(true);
  });

  it('another directory bound where the plan has one (its device and inode differ): stopped', () => {
    const d = dirs();
    const r = check([['B', join(d, 'a'), ...id(join(d, 'real')), 'r']], ['--ro-bind', join(d, 'b'), join(d, 'a')], '/');
    expect(r.code).toBe(125);
    expect(r.stderr).toContain('another file is mounted there');
    expect(r.ran).toBe(false);
  });

  it('the planned mount reached through a symlink on the way: stopped', () => {
    const d = dirs();
    const r = check([['B', join(d, 'lnk', 'sub'), ...id(join(d, 'b')), 'r']], ['--ro-bind', join(d, 'b'), join(d, 'real', 'sub')], '/');
    expect(r.code).toBe(125);
    expect(r.stderr).toContain('a symlink is on the way');
    expect(r.ran).toBe(false);
  });

  it('a bind planned read-only but mounted writable, or a mask planned where nothing is mounted: stopped', () => {
    const d = dirs();
    const rw = check([['B', join(d, 'a'), ...id(join(d, 'b')), 'r']], ['--bind', join(d, 'b'), join(d, 'a')], '/');
    expect(rw.code).toBe(125);
    expect(rw.stderr).toContain('mounted writable');
    const mask = check([['T', join(d, 'a')]], [], '/');
    expect(mask.code).toBe(125);
    expect(mask.stderr).toContain('nothing is mounted there');
    expect(rw.ran || mask.ran).toBe(false);
  });

  // A snapshot as srt plans it with the helper: bwrap mounts the tmpfs and binds the host's
  // directory read-only at a stage (in an area of the run directory); init binds each planned
  // entry from there, then covers the area.
  function snapshotDir() {
    const home = join(tmp.path, `snap-${n++}`, 'home');
    mkdirSync(join(home, 'd'), { recursive: true });
    mkdirSync(join(home, '..', 'area'));
    writeFileSync(join(home, 'd', 'inner'), 'inner\n');
    writeFileSync(join(home, 'f'), 'file\n');
    writeFileSync(join(home, 'secret'), 'SECRET\n'); // listed by no plan below
    writeFileSync(join(home, 'was-file'), 'x\n');
    return home;
  }
  const areaOf = (home: string) => join(home, '..', 'area');
  const snapshotBinds = (home: string, how = '--ro-bind') => ['--tmpfs', home, '--tmpfs', areaOf(home), how, home, join(areaOf(home), '0')];
  const snapshotPlan = (home: string, stageId = id(home)) => [['T', home], ['S', home, join(areaOf(home), '0'), ...stageId], ['K', areaOf(home)],
    ['B', join(home, 'f'), ...id(join(home, 'f')), 'ros'], ['B', join(home, 'd'), ...id(join(home, 'd')), 'ros']];

  it('a snapshot the helper completes: exactly the planned entries, bound read-only from the stage, which is covered; the tmpfs read-only', () => {
    const home = snapshotDir();
    const wasFile = id(join(home, 'was-file'));
    // Replaced by a symlink to the secret after srt listed it: the helper leaves it out (never follows it).
    unlinkSync(join(home, 'was-file'));
    symlinkSync('secret', join(home, 'was-file'));
    const plan = [...snapshotPlan(home), ['B', join(home, 'was-file'), ...wasFile, 'ros'], ['B', join(home, 'gone'), '0', '0', 'ros']];
    const r = check(plan, snapshotBinds(home), '/', `cd ${home}; ls -A; cat f d/inner; echo x > f || echo f-ro; echo x > d/new || echo d-ro; ` +
      `mkdir n || echo home-ro; awk '$5 ~ /\\/(f|d)$/ {print $5, substr($6, 1, 2)}' /proc/self/mountinfo; echo "area: $(ls -A ../area)"; mkdir ../area/x || echo area-ro`);
    expect(r.stderr).not.toContain('srt:');
    expect(r.ran).toBe(true);
    const lines = r.stdout.trim().split('\n');
    expect(lines.slice(0, lines.indexOf('file'))).toEqual(['d', 'f']); // no secret, no stage, no symlink, nothing for the vanished entry
    expect(lines).toEqual(expect.arrayContaining(['file', 'inner', 'f-ro', 'd-ro', 'home-ro', `${join(home, 'd')} ro`, `${join(home, 'f')} ro`, 'area: ', 'area-ro']));
    expect(readFileSync(join(home, 'f'), 'utf8')).toBe('file\n');
    expect(existsSync(join(home, 'd', 'new'))).toBe(false);
  });

  it('a stage that is another directory than the snapshot\'s, or bound writable: stopped before the command exists', () => {
    const home = snapshotDir();
    const other = check(snapshotPlan(home, id(join(home, 'd'))), snapshotBinds(home), '/');
    expect(other.code).toBe(125);
    expect(other.stderr).toContain(`the sandbox's snapshot of ${home} is not taken from that directory (another file is mounted there)`);
    const writable = check(snapshotPlan(home), snapshotBinds(home, '--bind'), '/');
    expect(writable.code).toBe(125);
    expect(writable.stderr).toContain('(mounted writable)');
    expect(other.ran || writable.ran).toBe(false);
  });

  it('an entry replaced after srt recorded it (another inode), one no snapshot holds, a stage nothing covers: stopped', () => {
    const home = snapshotDir();
    const plan = snapshotPlan(home);
    writeFileSync(join(home, 'f.new'), 'new\n');
    renameSync(join(home, 'f.new'), join(home, 'f')); // a host program renames over it
    const replaced = check(plan, snapshotBinds(home), '/');
    expect(replaced.code).toBe(125);
    expect(replaced.stderr).toContain(`the sandbox's mount at ${join(home, 'f')} is not what srt planned (another file is mounted there)`);
    const stray = check([['B', join(home, 'f'), ...id(join(home, 'f')), 'ros']], [], '/');
    expect(stray.code).toBe(125);
    expect(stray.stderr).toContain('no snapshot holds it');
    const uncovered = check(snapshotPlan(home).filter((rec) => rec[0] !== 'K'), snapshotBinds(home), '/');
    expect(uncovered.code).toBe(125);
    expect(uncovered.stderr).toContain('a stage outside the area covered');
    expect(replaced.ran || stray.ran || uncovered.ran).toBe(false);
  });

  it('a working directory other than the planned one: stopped', () => {
    const d = dirs();
    const r = check([['C', ...id(join(d, 'a'))]], [], join(d, 'b'));
    expect(r.code).toBe(125);
    expect(r.stderr).toContain('working directory is not the one srt planned');
    expect(r.ran).toBe(false);
  });
});
