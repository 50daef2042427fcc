// Invariant 13 (SPEC §10): nothing outside the sandbox runs a program the command can replace.
// `npm run` and `npx` put the project's node_modules/.bin first on PATH, and a sandboxed command
// (or a dependency's `bin` during `srt -- npm install`) can put anything there. Each test plants
// programs there, runs the real npm or srt's own host operations afterwards, and checks that
// nothing planted ran outside the sandbox — with a control that shows the planted program does
// run when the host itself looks it up.
import { execa } from 'execa';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { REPO, SRT_BIN, srt, tempDir } from './helpers.js';

const tmp = tempDir('srt-e2e-host-');
afterAll(() => tmp.cleanup());

let n = 0;
/** A project with srt installed as npm links it (node_modules/srt and node_modules/.bin/srt). */
function project(scripts: Record<string, string> = {}) {
  const base = join(tmp.path, `p${n++}`);
  const home = join(base, 'home');
  const cwd = join(base, 'proj');
  const bin = join(cwd, 'node_modules', '.bin');
  mkdirSync(home, { recursive: true });
  mkdirSync(bin, { recursive: true });
  symlinkSync(REPO, join(cwd, 'node_modules', 'srt'));
  symlinkSync('../srt/bin/srt', join(bin, 'srt'));
  writeFileSync(join(cwd, 'package.json'), JSON.stringify({ name: 'p', version: '1.0.0', private: true, scripts }));
  const env = { PATH: process.env.PATH, HOME: home, LANG: 'C.UTF-8', npm_config_update_notifier: 'false', npm_config_fund: 'false', npm_config_audit: 'false' };
  return { base, home, cwd, bin, env, mark: join(base, 'PLANTED_RAN') };
}

const SYSTEM_DIRS = ['/usr/local/bin', '/usr/bin', '/bin', '/usr/local/sbin', '/usr/sbin', '/sbin'];

/** A program that notes its name when it runs (the note lands only outside: the sandbox cannot
 *  write `mark`), then runs the system's program of that name, so whatever runs it still works. */
const stub = (mark: string) => `#!/bin/sh\nn=\${0##*/}\necho "$n" >> "${mark}" 2>/dev/null\n` +
  `for d in ${SYSTEM_DIRS.join(' ')}; do [ -x "$d/$n" ] && exec "$d/$n" "$@"; done\nexit 127\n`;

/** Start srt through node_modules/.bin/srt with that directory first on PATH, as `npm run` does. */
const viaBin = (p: ReturnType<typeof project>, args: string[], path = `${p.bin}:${process.env.PATH}`) =>
  spawnSync(join(p.bin, 'srt'), args, { cwd: p.cwd, env: { ...p.env, PATH: path }, encoding: 'utf8', timeout: 120_000 });

/** Plant `name` into node_modules/.bin from inside the sandbox, as a command there can. */
async function plantInside(p: ReturnType<typeof project>, name: string, script: string) {
  const r = await srt(['--', 'sh', '-c', 'cat > "node_modules/.bin/$1" && chmod +x "node_modules/.bin/$1" && echo planted', 'sh', name],
    { home: p.home, cwd: p.cwd, input: script, stdin: 'pipe' });
  expect(r.stdout, r.stderr).toBe('planted');
}

const npm = (p: ReturnType<typeof project>, args: string[]) => execa('npm', args, { cwd: p.cwd, env: p.env, extendEnv: false, reject: false, timeout: 120_000 });

describe('bin/srt started through a link (npm run, npx, a global install)', () => {
  it('never runs the node_modules/.bin/readlink a sandboxed command planted', async () => {
    const p = project({ sandboxed: 'srt -- echo sandboxed', plain: 'readlink -f .' });
    await plantInside(p, 'readlink', stub(p.mark));
    const run = await npm(p, ['run', '-s', 'sandboxed']);
    expect(run.stdout, run.stderr).toBe('sandboxed');
    const npx = await npm(p, ['exec', '--no', '--', 'srt', '--', 'echo', 'via npx']);
    expect(npx.stdout, npx.stderr).toBe('via npx');
    expect(existsSync(p.mark)).toBe(false);
    // Control: npm does put the planted readlink first for the host's own lookups.
    const plain = await npm(p, ['run', '-s', 'plain']);
    expect(plain.stdout).toBe(p.cwd);
    expect(readFileSync(p.mark, 'utf8')).toBe('readlink\n');
  });

  it('runs no program by name at all: every word of its shell line planted, none runs', async () => {
    const p = project();
    const line = readFileSync(SRT_BIN, 'utf8').split('\n')[1]!;
    const words = new Set([...line.matchAll(/[A-Za-z_[][\w.-]*/g)].map((m) => m[0]));
    for (const w of [...words, '[', 'test', 'readlink', 'dirname', 'basename', 'realpath', 'cat', 'node']) {
      if (w !== 'srt') writeFileSync(join(p.bin, w), stub(p.mark), { mode: 0o755 });
    }
    const r = viaBin(p, ['--', 'echo', 'sandboxed']);
    expect(r.stdout.trim(), r.stderr).toBe('sandboxed');
    expect(existsSync(p.mark)).toBe(false);
  });
});

describe("a credential's source command", () => {
  it('never runs the node_modules/.bin/gh a sandboxed command planted; the one elsewhere on PATH runs, in HOME', async () => {
    const p = project({ token: "srt -- sh -c 'echo len=${#GH_TOKEN}'" });
    const tools = join(p.base, 'tools');
    p.env.PATH = `${process.env.PATH}:${tools}`;
    mkdirSync(tools);
    writeFileSync(join(tools, 'gh'), `#!/bin/sh\npwd > "${join(p.base, 'gh-cwd')}"\necho ghp_${'a'.repeat(36)}\n`, { mode: 0o755 });
    await plantInside(p, 'gh', `#!/bin/sh\necho gh >> "${p.mark}"\necho ghp_${'b'.repeat(36)}\n`);
    mkdirSync(join(p.home, '.srt'), { recursive: true });
    writeFileSync(join(p.home, '.srt', 'settings.json'), JSON.stringify({
      network: { allowedDomains: ['api.github.com'], tlsTerminate: {} },
      credentials: { envVars: [{ name: 'GH_TOKEN', mode: 'mask', source: { command: ['gh', 'auth', 'token'] } }] },
    }));
    const ok = await npm(p, ['run', '-s', 'token']);
    expect(ok.exitCode, ok.stderr).toBe(0);
    expect(ok.stdout).toBe('len=40');
    expect(readFileSync(join(p.base, 'gh-cwd'), 'utf8')).toBe(`${p.home}\n`);
    expect(existsSync(p.mark)).toBe(false);
    // With no gh but the planted one, the run stops and says what srt refused.
    rmSync(join(tools, 'gh'));
    const none = await npm(p, ['run', '-s', 'token']);
    expect(none.exitCode).not.toBe(0);
    expect(none.stdout).toBe('');
    expect(none.stderr).toContain(`srt: credentials: GH_TOKEN: source command \`gh auth token\` was not run: gh is found only where a sandboxed command may write (${join(p.bin, 'gh')}), and srt starts nothing from there outside the sandbox`);
    expect(existsSync(p.mark)).toBe(false);
  });
});

describe("srt's own host operations", () => {
  // The whole class: every program name of the system planted first on PATH (as npm run puts
  // node_modules/.bin), then a run that sources a credential, leaves a tree only the system's rm
  // can remove and creates a repository (reviewed at the end), srt doctor, srt config and a dry
  // run. Inside the sandbox the planted programs run as any command would; outside, none may.
  it('start no program a sandboxed command could have planted', async () => {
    const p = project();
    const tools = join(p.base, 'tools');
    mkdirSync(tools);
    writeFileSync(join(tools, 'gh'), `#!/bin/sh\necho ghp_${'c'.repeat(36)}\n`, { mode: 0o755 });
    mkdirSync(join(p.home, '.srt'), { recursive: true });
    writeFileSync(join(p.home, '.srt', 'settings.json'), JSON.stringify({
      network: { allowedDomains: ['api.github.com'], tlsTerminate: {} },
      credentials: { envVars: [{ name: 'GH_TOKEN', mode: 'mask', source: { command: ['gh', 'auth', 'token'] } }] },
    }));
    writeFileSync(join(p.base, 'stub'), stub(p.mark), { mode: 0o755 });
    const names = new Set(['gh']);
    for (const d of SYSTEM_DIRS) {
      try { for (const f of readdirSync(d)) names.add(f); } catch { /* not on this system */ }
    }
    names.delete('srt');
    for (const name of names) symlinkSync(join(p.base, 'stub'), join(p.bin, name));
    const path = `${p.bin}:${process.env.PATH}:${tools}`;

    const run = viaBin(p, ['--', 'sh', '-c', 'git init -q fresh && mkdir -p "$TMPDIR/d/e" && chmod 000 "$TMPDIR/d" && echo "done ${#GH_TOKEN}"'], path);
    expect(run.stdout.trim(), run.stderr).toBe('done 40');
    expect(readdirSync(join(p.home, '.srt', 'run'))).toEqual([]);
    for (const args of [['doctor'], ['config'], ['--dry-run', '--', 'true']]) {
      const r = viaBin(p, args, path);
      expect(r.status, `${args.join(' ')}: ${r.stderr}`).not.toBe(null);
    }
    expect(existsSync(p.mark) ? readFileSync(p.mark, 'utf8') : '').toBe('');
    // Control: what the host itself looks up on that PATH is the planted program.
    spawnSync('rg', ['--version'], { env: { PATH: path } });
    expect(readFileSync(p.mark, 'utf8')).toBe('rg\n');
  });
});

describe("srt's own files inside a writable root the command cannot change", () => {
  // The warning that srt lies where the sandbox may write is about what the command could replace:
  // a root-owned install under a writable /tmp is out of an unprivileged command's reach, and
  // another user's directory is out of a root caller's (no capability applies to it inside).
  it('are not reported as replaceable; those it can change still are', async () => {
    const w = project();
    const root = process.getuid?.() === 0;
    const shut = join(w.base, 'shut');
    const open = join(w.base, 'open');
    for (const d of [shut, open]) {
      mkdirSync(d);
      symlinkSync(SRT_BIN, join(d, 'srt'));
    }
    // Root: a PATH directory with srt's link, owned by another user. Others: the directory of the
    // node srt runs with, which only root may change.
    let args: string[];
    if (root) {
      spawnSync('chown', ['-h', '65534:65534', shut, join(shut, 'srt')]);
      args = ['--allow-write', shut];
    } else {
      args = ['--allow-write', dirname(realpathSync(process.execPath))];
    }
    const env = { ...w.env, PATH: `${shut}:${open}:${process.env.PATH}` };
    const quiet = spawnSync(process.execPath, [SRT_BIN, ...args, '--', 'true'], { cwd: w.cwd, env, encoding: 'utf8' });
    expect(quiet.status, quiet.stderr).toBe(0);
    expect(quiet.stderr).not.toMatch(/may write/);
    const doctor = spawnSync(process.execPath, [SRT_BIN, 'doctor', '--json', ...args], { cwd: w.cwd, env, encoding: 'utf8' });
    const location = (JSON.parse(doctor.stdout) as { checks: { id: string; status: string }[] }).checks.find((c) => c.id === 'srt.location');
    expect(location?.status, doctor.stdout).toBe('ok');
    // Control: the caller's own directory on PATH, holding srt's link, made writable.
    const loud = spawnSync(process.execPath, [SRT_BIN, '--allow-write', open, '--', 'true'], { cwd: w.cwd, env, encoding: 'utf8' });
    expect(loud.stderr).toContain(`srt: warning: srt is installed inside a path this sandbox may write (${join(open, 'srt')})`);
  });
});
