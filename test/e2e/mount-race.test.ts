// Path races between srt's plan and bwrap's mounts (SPEC §3 "through any path spelling, symlink
// or rename", invariants 1, 2 and 10). srt plans with real paths; bwrap resolves the strings it
// is given again, following symlinks. A concurrent process (another sandbox with the project
// writable) that swaps a directory on the way with a symlink makes bwrap bind something else,
// or put a mask somewhere else. The helper checks every planned mount before the command runs.
//
// Deterministic: srt is held after its plan and before bwrap (a run directory of a dead run makes
// it take the state lock, which the test holds), the test swaps, then lets it go.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmdirSync, rmSync, statSync, symlinkSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { bwrapIsolationArgs } from '../../src/profiles/bwrap-launch.js';
import { initArgv } from '../../src/profiles/init-args.js';
import type { FileId } from '../../src/profiles/landing.js';
import { bwrapMountArgs, encodeMounts, plannedMounts, type MountOp } from '../../src/profiles/mounts.js';
import { buildSeccompFilter } from '../../src/profiles/seccomp.js';
import { INIT_HELPER_PATH, hostSeccompArch } from '../../src/platform/init-helper.js';
import { identifyReal } from '../../src/platform/landing.js';
import { scratchBases, scratchDirs, SRT_BIN, tempDir, track, stopStragglers } from './helpers.js';

const PYTHON = ['/usr/bin/python3', '/bin/python3'].find((p) => existsSync(p)) ?? 'python3';
const tmp = tempDir('srt-mount-race-');
afterAll(async () => {
  await stopStragglers();
  tmp.cleanup();
});
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

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
  for (const end = Date.now() + 20_000; Date.now() < end && !readdirSync(run).some((d) => d !== '0-dead');) await sleep(25);
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

  it('the directory holding read-denied files swapped with a decoy while bwrap mounts, and back: the mask is never placed elsewhere', async () => {
    const { home, project } = scratch();
    const web = join(project, 'web');
    mkdirSync(web);
    // Two in one directory: the helper binds the second through the directory held for the first.
    writeFileSync(join(web, 'secret'), 'TOP-SECRET\n');
    writeFileSync(join(web, 'secret2'), 'TOP-SECRET\n');
    mkdirSync(join(project, 'decoy'));
    writeFileSync(join(project, 'decoy', 'secret'), 'decoy\n');
    writeFileSync(join(project, 'decoy', 'secret2'), 'decoy\n');
    const held = await startHeld(home, project, ['--deny-read', join(web, 'secret'), '--deny-read', join(web, 'secret2'), '--',
      'sh', '-c', 'touch started; while [ ! -e go ]; do sleep 0.05; done; cat web/secret web/secret2']);
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

  it('protected paths a host program removes between the plan and the mounts (a temporary clone deleted): the run starts, and a removed one stays uncreatable', async () => {
    const { home, project } = scratch();
    // Deep enough that the directories on the way are rename guards, mounts of their own.
    mkdirSync(join(project, 'clone', 'app', '.vscode'), { recursive: true });
    writeFileSync(join(project, 'clone', 'app', '.vscode', 'settings.json'), '{}\n');
    mkdirSync(join(project, '.vscode'));
    writeFileSync(join(project, '.vscode', 'settings.json'), '{}\n');
    const held = await startHeld(home, project, ['--', 'sh', '-c',
      'mkdir -p .vscode && echo "{}" > .vscode/tasks.json; git init -q clone/app && echo ran > clone/app/.git/hooks/pre-commit; echo done']);
    rmSync(join(project, 'clone'), { recursive: true });
    rmSync(join(project, '.vscode'), { recursive: true });
    held.release();
    const code = await held.exit;
    expect(held.out()).toContain('done');
    expect(code, held.out()).toBe(0);
    // .vscode was missing when the command ran, in a directory that existed before it: refused,
    // as if srt had never seen it. The clone is a repository the run created: its hook is set aside.
    expect(existsSync(join(project, '.vscode', 'tasks.json'))).toBe(false);
    expect(existsSync(join(project, 'clone', 'app', '.git', 'hooks', 'pre-commit'))).toBe(false);
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
  }, 240_000);
});

// The helper's own check, given a plan that differs from what bwrap mounted (the window between
// srt's last look and bwrap's mounts is too short to hit on purpose): each difference stops it
// before the command runs, exit 125.
describe('the helper\'s mount check (--verify) against what bwrap really mounted', () => {
  const BWRAP = ['/usr/bin/bwrap', '/bin/bwrap'].find((p) => existsSync(p)) ?? 'bwrap';
  const bases = scratchBases(() => join(tmp.path, 'verify'));
  const fileId = (p: string): FileId => { const s = statSync(p, { bigint: true }); return { dev: String(s.dev), ino: String(s.ino) }; };
  const bind = (source: string, dest: string, ro = true): MountOp => ({ kind: 'bind', dest, source, ro });
  /** The plan file srt writes for `ops` (encodeMounts), with the identities srt would take now
   *  (identifyReal) unless `identify` says otherwise. */
  function planOf(ops: MountOp[], cwd: { path: string; id?: FileId }, identify: (p: string) => FileId | null = identifyReal): Buffer {
    const encoded = encodeMounts(plannedMounts(ops), identify, cwd);
    if ('error' in encoded) throw new Error(encoded.error);
    return encoded.data;
  }
  /** bwrap started as srt starts it (its isolation options, the `mounted` operations rendered by
   *  bwrapMountArgs over a read-only host), srt-init checking `plan` before the command. */
  function check(plan: Buffer, mounted: MountOp[], chdir: string, script?: string) {
    const base = bases();
    const planFile = join(base, 'plan');
    writeFileSync(planFile, plan);
    const filter = join(base, 'filter.bpf');
    writeFileSync(filter, buildSeccompFilter({ arch: hostSeccompArch()!, allowUnixSockets: false, allowNamespaces: false }));
    const marker = join(base, 'RAN');
    const ops: MountOp[] = [bind('/', '/'), { kind: 'dev', dest: '/dev' }, { kind: 'proc', dest: '/proc' }, bind(base, base, false), ...mounted];
    const r = spawnSync(BWRAP, [...bwrapIsolationArgs({ lowPort: false }).flat(), ...bwrapMountArgs(ops).flat(), '--chdir', chdir,
      '--', ...initArgv({ helperPath: INIT_HELPER_PATH, relays: [], exposes: [], landlock: 'off', verify: planFile, maxProcs: 1000, filter }),
      ...(script ? ['sh', '-c', `touch ${marker}; ${script}`] : ['touch', marker])], { encoding: 'utf8', timeout: 20_000 });
    return { code: r.status, stdout: r.stdout, stderr: r.stderr, ran: existsSync(marker) };
  }
  function dirs() {
    const base = bases();
    for (const d of ['a', 'b', 'real/sub']) mkdirSync(join(base, d), { recursive: true });
    symlinkSync('real', join(base, 'lnk'));
    return base;
  }

  it('the plan as mounted passes, and the command runs', () => {
    const d = dirs();
    const ops = [bind(join(d, 'b'), join(d, 'a'))];
    const r = check(planOf(ops, { path: join(d, 'a'), id: fileId(join(d, 'b')) }), ops, join(d, 'a')); // a shows b
    expect(r.stderr).toBe('');
    expect(r.ran).toBe(true);
  });

  it('another directory bound where the plan has one (its device and inode differ): stopped', () => {
    const d = dirs();
    const r = check(planOf([bind(join(d, 'real'), join(d, 'a'))], { path: '/' }), [bind(join(d, 'b'), join(d, 'a'))], '/');
    expect(r.code).toBe(125);
    expect(r.stderr).toContain('another file is mounted there');
    expect(r.ran).toBe(false);
  });

  it('the planned mount reached through a symlink on the way: stopped', () => {
    const d = dirs();
    const r = check(planOf([bind(join(d, 'b'), join(d, 'lnk', 'sub'))], { path: '/' }), [bind(join(d, 'b'), join(d, 'real', 'sub'))], '/');
    expect(r.code).toBe(125);
    expect(r.stderr).toContain('a symlink is on the way');
    expect(r.ran).toBe(false);
  });

  it('a bind planned read-only but mounted writable, or a mask planned where nothing is mounted: stopped', () => {
    const d = dirs();
    const rw = check(planOf([bind(join(d, 'b'), join(d, 'a'))], { path: '/' }), [bind(join(d, 'b'), join(d, 'a'), false)], '/');
    expect(rw.code).toBe(125);
    expect(rw.stderr).toContain('mounted writable');
    const mask = check(planOf([{ kind: 'tmpfs', dest: join(d, 'a') }], { path: '/' }), [], '/');
    expect(mask.code).toBe(125);
    expect(mask.stderr).toContain('nothing is mounted there');
    expect(rw.ran || mask.ran).toBe(false);
  });

  // A snapshot as srt plans it with the helper: bwrap mounts the tmpfs and binds the host's
  // directory read-only at a stage (in an area of the run directory); init binds each planned
  // entry from there, then covers the area.
  function snapshotDir() {
    const home = join(bases(), 'home');
    mkdirSync(join(home, 'd'), { recursive: true });
    mkdirSync(join(home, '..', 'area'));
    writeFileSync(join(home, 'd', 'inner'), 'inner\n');
    writeFileSync(join(home, 'f'), 'file\n');
    writeFileSync(join(home, 'secret'), 'SECRET\n'); // listed by no plan below
    writeFileSync(join(home, 'was-file'), 'x\n');
    return home;
  }
  const areaOf = (home: string) => join(home, '..', 'area');
  /** The operations of a snapshot of `home` holding `entries`, in the order srt plans them. */
  const snapshotOps = (home: string, entries = ['f', 'd']): MountOp[] => [
    { kind: 'tmpfs', dest: home },
    ...entries.map((e): MountOp => ({ kind: 'bind', dest: join(home, e), source: join(home, e), ro: true, optional: true, byHelper: true })),
    { kind: 'tmpfs', dest: areaOf(home), unchecked: true },
    { kind: 'stage', dest: join(areaOf(home), '0'), dir: home },
    { kind: 'cover', dest: areaOf(home) },
  ];

  it('a snapshot the helper completes: exactly the planned entries, bound read-only from the stage, which is covered; the tmpfs read-only', () => {
    const home = snapshotDir();
    // was-file is replaced by a symlink to the secret after srt listed it (the helper leaves it
    // out: it never follows it); gone vanished before srt looked (nothing may be there).
    const plan = planOf(snapshotOps(home, ['f', 'd', 'was-file', 'gone']), { path: '/' });
    unlinkSync(join(home, 'was-file'));
    symlinkSync('secret', join(home, 'was-file'));
    const r = check(plan, snapshotOps(home), '/', `cd ${home}; ls -A; cat f d/inner; echo x > f || echo f-ro; echo x > d/new || echo d-ro; ` +
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
    const otherId = (p: string) => identifyReal(p === home ? join(home, 'd') : p);
    const other = check(planOf(snapshotOps(home), { path: '/' }, otherId), snapshotOps(home), '/');
    expect(other.code).toBe(125);
    expect(other.stderr).toContain(`the sandbox's snapshot of ${home} is not taken from that directory (another file is mounted there)`);
    const writableStage = snapshotOps(home).map((m) => (m.kind === 'stage' ? bind(m.dir, m.dest, false) : m));
    const writable = check(planOf(snapshotOps(home), { path: '/' }), writableStage, '/');
    expect(writable.code).toBe(125);
    expect(writable.stderr).toContain('(mounted writable)');
    expect(other.ran || writable.ran).toBe(false);
  });

  it('an entry replaced after srt recorded it (another inode), one no snapshot holds, a stage nothing covers: stopped', () => {
    const home = snapshotDir();
    const plan = planOf(snapshotOps(home), { path: '/' });
    writeFileSync(join(home, 'f.new'), 'new\n');
    renameSync(join(home, 'f.new'), join(home, 'f')); // a host program renames over it
    const replaced = check(plan, snapshotOps(home), '/');
    expect(replaced.code).toBe(125);
    expect(replaced.stderr).toContain(`the sandbox's mount at ${join(home, 'f')} is not what srt planned (another file is mounted there)`);
    const stray = check(planOf(snapshotOps(home).filter((m) => m.kind === 'bind'), { path: '/' }), [], '/');
    expect(stray.code).toBe(125);
    expect(stray.stderr).toContain('no snapshot holds it');
    const uncovered = check(planOf(snapshotOps(home).filter((m) => m.kind !== 'cover'), { path: '/' }), snapshotOps(home), '/');
    expect(uncovered.code).toBe(125);
    expect(uncovered.stderr).toContain('a stage outside the area covered');
    expect(replaced.ran || stray.ran || uncovered.ran).toBe(false);
  });

  it('a working directory other than the planned one: stopped', () => {
    const d = dirs();
    const r = check(planOf([], { path: join(d, 'a'), id: fileId(join(d, 'a')) }), [], join(d, 'b'));
    expect(r.code).toBe(125);
    expect(r.stderr).toContain('working directory is not the one srt planned');
    expect(r.ran).toBe(false);
  });
});
