// Red team of the day's mechanisms: the V8 code cache (bytecode srt runs outside any sandbox),
// bin/srt hiding NODE_EXTRA_CA_CERTS, and the denied files srt-init binds. Each test
// tries the escape and checks the host afterwards.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, linkSync, mkdirSync, readFileSync, renameSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { chunkEntry, forgedBytecode } from './code-cache-fixtures.js';
import { NO_SUPERVISOR, SRT_BIN, scratchDirs, srt, tempDir } from './helpers.js';

const tmp = tempDir('srt-redteam-today-');
afterAll(() => tmp.cleanup());
const scratch = scratchDirs(() => tmp.path);


describe('the code cache cannot be planted from inside the sandbox', () => {
  // Every way a command could put bytecode where the next srt outside reads it: write the entry,
  // rename or link one in from srt's TMPDIR (which lives under ~/.srt), or replace a directory on
  // the way (~/.srt, ~/.srt/cache, ~/.srt/cache/code) with one of its own.
  const plant = (entry: string, forged: string) => `E=${entry}; F=${forged}; C=$(dirname $E)
mkdir -p $C; cp $F $E; cp $F $TMPDIR/e && mv -f $TMPDIR/e $E; ln -sf $F $E; ln -f $F $E; ln -f $F $C/x && mv -f $C/x $E
mv $C $C.old && mkdir -p $C && cp $F $E
mv ~/.srt/cache ~/.srt/cache.old && mkdir -p $C && cp $F $E
mv ~/.srt ~/.srt.old && mkdir -p $C && cp $F $E
true`;

  const cases: { name: string; allowWrite: string[]; inHome: boolean; fresh: boolean }[] = [
    { name: 'cwd = ~ with allowWrite ~', allowWrite: ['~'], inHome: true, fresh: false },
    { name: 'allowWrite ~/.srt, no ~/.srt yet', allowWrite: ['~/.srt'], inHome: false, fresh: true },
    { name: 'allowWrite ~/.srt/cache', allowWrite: ['~/.srt/cache'], inHome: false, fresh: false },
    { name: 'allowWrite ~/.srt/cache/code, no cache yet', allowWrite: ['~/.srt/cache/code'], inHome: false, fresh: true },
  ];
  it('the control: the same commands run outside a sandbox do plant bytecode the next srt runs', async () => {
    const { base, home, cwd } = scratch();
    const mark = join(base, 'FORGED_RAN');
    writeFileSync(join(cwd, 'forged'), forgedBytecode(mark), { mode: 0o600 });
    expect((await srt(['--', 'true'], { home, cwd })).exitCode).toBe(0);
    const r = spawnSync('sh', ['-c', plant(chunkEntry(home), join(cwd, 'forged'))], { cwd, encoding: 'utf8', env: { PATH: process.env.PATH, HOME: home, TMPDIR: base } });
    expect(r.status, r.stderr).toBe(0);
    await srt(['--', 'true'], { home, cwd });
    expect(existsSync(mark)).toBe(true);
  });

  for (const supervisor of [true, false]) {
    it(`${supervisor ? 'with' : 'without'} the supervisor: no entry the command made is run by the next srt`, async () => {
      for (const c of cases) {
        const { base, home, cwd } = scratch();
        const mode = supervisor ? {} : NO_SUPERVISOR;
        const mark = join(base, 'FORGED_RAN');
        const forged = join(cwd, 'forged');
        writeFileSync(forged, forgedBytecode(mark), { mode: 0o600 });
        writeFileSync(join(home, '.srt-settings.json'), JSON.stringify({ filesystem: { allowWrite: c.allowWrite } }));
        if (!c.fresh) expect((await srt(['--', 'true'], { home, cwd, ...mode })).exitCode).toBe(0);
        const entry = chunkEntry(home);
        const before = c.fresh ? undefined : readFileSync(entry);
        const inside = await srt(['--', 'sh', '-c', plant(entry, forged)], { home, cwd: c.inHome ? home : cwd, ...mode });
        expect(inside.exitCode, `${c.name}: ${inside.stderr}`).toBe(0);
        // The host: the entry is srt's own (or absent), and the next run outside runs srt, not the forgery.
        if (before) expect(readFileSync(entry).equals(before), c.name).toBe(true);
        for (const d of ['.srt.old', '.srt/cache.old', '.srt/cache/code.old']) expect(existsSync(join(home, d)), `${c.name}: ${d}`).toBe(false);
        const next = await srt(['--', 'true'], { home, cwd, ...mode });
        expect(existsSync(mark), c.name).toBe(false);
        expect(next.exitCode, `${c.name}: ${next.stderr}`).toBe(0);
      }
    }, 240_000);
  }
});

describe('a HOME that is a symlink', () => {
  // srt hid its run root (~/.srt/run) at HOME's spelling while its run directory was real: bwrap
  // could not mount there and every run failed. ~/.srt stays protected under both spellings, also
  // below the protected-path search depth of a writable directory holding the real home.
  it('srt runs, and neither spelling of ~/.srt/cache/code is writable from inside', async () => {
    const { base, cwd } = scratch();
    const real = join(base, 'a', 'b', 'c', 'd', 'realhome');
    mkdirSync(real, { recursive: true });
    const home = join(base, 'homelink');
    symlinkSync(real, home);
    const first = await srt(['--', 'true'], { home, cwd });
    expect(first.exitCode, first.stderr).toBe(0);
    for (const mode of [{}, NO_SUPERVISOR]) {
      const r = await srt(['--', 'sh', '-c', `touch ${real}/.srt/cache/code/x ${home}/.srt/cache/code/y; echo done`], { home, cwd: base, ...mode });
      expect(r.stdout.trim(), r.stderr).toBe('done');
      expect(existsSync(join(real, '.srt', 'cache', 'code', 'x'))).toBe(false);
      expect(existsSync(join(real, '.srt', 'cache', 'code', 'y'))).toBe(false);
    }
  });
});

describe('a broken code cache costs nothing but time', () => {
  it('a FIFO where an entry goes does not hang srt (it is not opened for a writer to come)', async () => {
    const { home, cwd } = scratch();
    expect((await srt(['--', 'true'], { home, cwd })).exitCode).toBe(0);
    const entry = chunkEntry(home);
    rmSync(entry);
    expect(spawnSync('mkfifo', ['-m', '600', entry]).status).toBe(0);
    const r = await srt(['--', 'true'], { home, cwd, timeout: 15_000 });
    expect(r.timedOut).toBe(false);
    expect(r.exitCode, r.stderr).toBe(0);
  });

  it('20 concurrent first runs in a fresh HOME all succeed and leave complete entries', async () => {
    const { home, cwd } = scratch();
    const rs = await Promise.all(Array.from({ length: 20 }, () => srt(['--', 'true'], { home, cwd })));
    for (const r of rs) expect(r.exitCode, r.stderr).toBe(0);
    const code = join(home, '.srt', 'cache', 'code');
    const names = spawnSync('ls', [code], { encoding: 'utf8' }).stdout.trim().split('\n');
    expect(names.filter((n) => n.endsWith('.tmp'))).toEqual([]);
    // Reused as they are: the next run compiles nothing (writes nothing).
    const mtime = statSync(chunkEntry(home)).mtimeMs;
    expect((await srt(['--', 'true'], { home, cwd })).exitCode).toBe(0);
    expect(statSync(chunkEntry(home)).mtimeMs).toBe(mtime);
  });
});

describe('NODE_EXTRA_CA_CERTS when srt is run as `node bin/srt` (the sh line never ran)', () => {
  it('the command gets exactly the user\'s NODE_EXTRA_CA_CERTS, never a value of srt\'s hiding variable', async () => {
    const { home, cwd } = scratch();
    const show = ['--', 'sh', '-c', 'echo "[${NODE_EXTRA_CA_CERTS-unset}] [${SRT_NODE_EXTRA_CA_CERTS-unset}]"'];
    const cases: [Record<string, string>, string][] = [
      [{ SRT_NODE_EXTRA_CA_CERTS: '/x' }, '[unset] [unset]'],
      [{ SRT_NODE_EXTRA_CA_CERTS: '/x', NODE_EXTRA_CA_CERTS: '/etc/ssl/certs/ca-certificates.crt' }, '[/etc/ssl/certs/ca-certificates.crt] [unset]'],
      [{ NODE_EXTRA_CA_CERTS: '/etc/ssl/certs/ca-certificates.crt' }, '[/etc/ssl/certs/ca-certificates.crt] [unset]'],
    ];
    for (const [env, want] of cases) {
      const r = await srt(show, { home, cwd, env }); // helpers.srt runs `node bin/srt`
      expect(r.stdout.trim(), `${JSON.stringify(env)}: ${r.stderr}`).toBe(want);
    }
    // Through the sh line: a value with a newline, spaces and `=` comes back byte for byte.
    const value = '/no such/ca\n=file $(touch x)';
    const r = spawnSync(SRT_BIN, ['--', 'node', '-e', 'process.stdout.write(JSON.stringify(process.env.NODE_EXTRA_CA_CERTS))'],
      { cwd, encoding: 'utf8', env: { PATH: process.env.PATH, HOME: home, NODE_EXTRA_CA_CERTS: value } });
    expect(r.stdout, r.stderr).toBe(JSON.stringify(value));
    expect(existsSync(join(cwd, 'x'))).toBe(false);
  });
});

describe('denied files the helper binds', () => {
  // srt lists a snapshot's entries after it planned the denies: a denied file that was missing
  // then and that a host program (a credential refresh) put back meanwhile was bound back into
  // the snapshot with its real content. A host toggler flips it in and out of place (a rename,
  // so its inode never changes) while srt starts, for a bounded time.
  it('a denied file that appears on the host while srt starts is never read inside', async () => {
    const { base, home, cwd } = scratch();
    const dir = join(base, 'out', 'x');
    mkdirSync(dir, { recursive: true });
    const secret = join(dir, 'secret');
    writeFileSync(join(dir, 'secret.away'), 'REAL-SECRET\n');
    writeFileSync(join(home, '.srt-settings.json'), JSON.stringify({ filesystem: { denyRead: [secret] } }));
    const toggler = spawn('python3', ['-c', `import os, time
a, b = ${JSON.stringify(join(dir, 'secret.away'))}, ${JSON.stringify(secret)}
end, n = time.time() + 12, 0
while time.time() < end and n < 20000000 and not os.path.exists(${JSON.stringify(join(base, 'stop'))}):
    os.rename(a, b); time.sleep(0.0005); os.rename(b, a); time.sleep(0.0005); n += 1
`], { stdio: 'ignore' });
    const seen: string[] = [];
    let ran = 0;
    try {
      const end = Date.now() + 7_000;
      for (let i = 0; i < 40 && Date.now() < end; i++) {
        const r = await srt(['--', 'sh', '-c', `for k in 1 2 3 4 5 6 7 8; do cat ${secret} 2>/dev/null; sleep 0.01; done; true`], { home, cwd, timeout: 20_000 });
        if (r.exitCode === 0) ran++;
        else { expect(r.exitCode, r.stderr).toBe(125); expect(r.stderr).toMatch(/^srt: /m); }
        if (r.stdout.includes('REAL-SECRET')) seen.push(r.stdout);
      }
    } finally {
      writeFileSync(join(base, 'stop'), '');
      toggler.kill();
      await new Promise((res) => toggler.once('exit', res));
    }
    expect(seen).toEqual([]);
    expect(ran).toBeGreaterThan(0);
    const left = existsSync(secret) ? secret : join(dir, 'secret.away');
    expect(readFileSync(left, 'utf8')).toBe('REAL-SECRET\n');
    if (left === secret) renameSync(secret, join(dir, 'secret.away'));
  });

  it('a denied file with another hard link is reported, and its denied name stays unreadable', async () => {
    const { base, home, cwd } = scratch();
    const key = join(cwd, 'key');
    writeFileSync(key, 'LINKED-SECRET\n');
    linkSync(key, join(base, 'other-name'));
    writeFileSync(join(home, '.srt-settings.json'), JSON.stringify({ filesystem: { denyRead: [key] } }));
    const r = await srt(['--', 'sh', '-c', `cat ${key} 2>&1; true`], { home, cwd });
    expect(r.stdout).toContain('Permission denied');
    expect(r.stdout).not.toContain('LINKED-SECRET');
    expect(r.stderr).toContain(`${key} has 2 hard links: the command can read it under its other names`);
    expect(readFileSync(key, 'utf8')).toBe('LINKED-SECRET\n');
  });
});
