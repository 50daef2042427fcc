// Deny entries that must hold for the whole run (SPEC §3, invariants 2 and 10): a deny srt
// cannot resolve at the start (a directory the user cannot search right now), and denied paths
// that a program outside the sandbox replaces while the command runs (a credential refresh, an
// editor saving). Every test checks the host afterwards.
import { spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { attempt, NO_SUPERVISOR, SRT_BIN, srt, tempDir, track, stopStragglers, scratchDirs, results, writeTree } from './helpers.js';

const tmp = tempDir('srt-deny-hold-');
afterAll(async () => {
  await stopStragglers();
  tmp.cleanup();
});
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const root = process.getuid?.() === 0;

const scratch = scratchDirs(() => tmp.path);

describe('a deny entry inside a directory the user cannot search right now', () => {
  // Root searches any directory, so srt resolves the entry itself: the same commands must still fail.
  it(`a denyRead entry (its owner chmods the directory open inside): the file stays unreadable${root ? ' (root resolves it directly)' : ''}`, async () => {
    const dir = scratch();
    mkdirSync(join(dir.cwd, 'private'));
    writeFileSync(join(dir.cwd, 'private', 'key'), 'TOP-SECRET\n');
    chmodSync(join(dir.cwd, 'private'), 0o000);
    try {
      const r = await srt(['--deny-read', join(dir.cwd, 'private', 'key'), '--', 'sh', '-c', 'chmod 700 private; cat private/key; ls private'], dir);
      expect(r.stdout).not.toContain('TOP-SECRET');
      expect(r.exitCode).toBe(0); // it ran (as root, the mount check passes the mode-000 directory too)
      if (!root) expect(r.stderr).toContain(`srt cannot search ${join(dir.cwd, 'private')} (permission denied)`);
      // Hidden, so it cannot be opened up inside (root may: there it is an ordinary directory of cwd).
      if (!root) expect(statSync(join(dir.cwd, 'private')).mode & 0o777).toBe(0o000);
    } finally {
      chmodSync(join(dir.cwd, 'private'), 0o700);
    }
    expect(readFileSync(join(dir.cwd, 'private', 'key'), 'utf8')).toBe('TOP-SECRET\n');
  });

  it.each([['with the supervisor', {}], ['without it (placeholders)', NO_SUPERVISOR]])('a denyWrite entry there: the file cannot be written after chmod inside, %s', async (_, mode) => {
    const dir = scratch();
    mkdirSync(join(dir.cwd, 'private'));
    writeFileSync(join(dir.cwd, 'private', 'hook'), '#!/bin/sh\n');
    chmodSync(join(dir.cwd, 'private'), 0o000);
    const settings = join(dir.home, 'deny.json');
    writeFileSync(settings, JSON.stringify({ filesystem: { denyWrite: [join(dir.cwd, 'private', 'hook')] } }));
    try {
      const r = await srt(['-s', settings, '--', 'sh', '-c', 'chmod 700 private; echo "touch PWNED" >> private/hook && echo wrote'], { ...dir, ...mode });
      expect(r.stdout).not.toContain('wrote');
    } finally {
      chmodSync(join(dir.cwd, 'private'), 0o700);
    }
    expect(readFileSync(join(dir.cwd, 'private', 'hook'), 'utf8')).toBe('#!/bin/sh\n');
  });

  // With the supervisor the glob is judged at the open, whatever srt could read at start;
  // expanded at start (without it), the directory srt cannot read is covered whole.
  it.each([['with the supervisor', {}], ['without it (expanded at start)', NO_SUPERVISOR]])('a denyRead glob whose matches may lie in such a directory: they stay unreadable, %s', async (_, mode) => {
    const dir = scratch();
    mkdirSync(join(dir.cwd, 'certs'));
    writeFileSync(join(dir.cwd, 'certs', 'server.pem'), 'PRIVATE-KEY\n');
    chmodSync(join(dir.cwd, 'certs'), 0o000);
    try {
      const r = await srt(['--deny-read', `${dir.cwd}/**/*.pem`, '--', 'sh', '-c', 'chmod 700 certs; cat certs/server.pem'], { ...dir, ...mode });
      expect(r.stdout).not.toContain('PRIVATE-KEY');
      if (!root && mode === NO_SUPERVISOR) expect(r.stderr).toContain(`srt cannot read ${join(dir.cwd, 'certs')} (permission denied)`);
    } finally {
      chmodSync(join(dir.cwd, 'certs'), 0o700);
    }
    expect(readFileSync(join(dir.cwd, 'certs', 'server.pem'), 'utf8')).toBe('PRIVATE-KEY\n');
  });
});

/** Run `script` in a sandbox in the background; resolves with its output once it exits. */
function background(script: string, dir: { home: string; cwd: string }, args: string[], env: Record<string, string> = {}): { done: Promise<string>; code: Promise<number | null> } {
  const child = track(spawn(process.execPath, [SRT_BIN, ...args, '--', 'sh', '-c', script], {
    cwd: dir.cwd, env: { PATH: process.env.PATH, HOME: dir.home, LANG: 'C.UTF-8', ...env }, stdio: ['ignore', 'pipe', 'pipe'],
  }));
  let out = '';
  child.stdout!.on('data', (b: Buffer) => { out += b.toString(); });
  child.stderr!.on('data', (b: Buffer) => { out += b.toString(); });
  const code = new Promise<number | null>((res) => child.on('exit', (c) => res(c)));
  return { done: code.then(() => out), code };
}

/** Waits for the sandboxed command to get going: srt starting on a loaded machine takes a while
 *  (bounded just under the test's own 30 s, so a failure says what never appeared). */
async function waitForFile(path: string): Promise<void> {
  const deadline = Date.now() + 25_000;
  while (!existsSync(path) && Date.now() < deadline) await sleep(25);
  if (!existsSync(path)) throw new Error(`${path} never appeared`);
}

/** What aws, gh, docker login and most editors do to save a file: write a new one, rename it over. */
function replaceByRename(path: string, content: string): void {
  writeFileSync(`${path}.tmp-${process.pid}`, content);
  renameSync(`${path}.tmp-${process.pid}`, path);
}

/** Wait inside until `go` exists, then run `then`. */
const afterGo = (then: string) => `touch started; while [ ! -e go ]; do sleep 0.05; done; ${then}`;

describe('a denied path that a program outside the sandbox replaces during the run', () => {
  it('a denyRead file outside the writable paths, replaced by rename (a credential refresh): the new content stays unreadable', async () => {
    const dir = scratch();
    const secret = join(dir.home, '.aws', 'credentials');
    mkdirSync(join(dir.home, '.aws'));
    writeFileSync(secret, 'old-secret\n');
    writeFileSync(join(dir.home, '.aws', 'config'), '[default]\nregion = eu-west-1\n');
    const run = background(afterGo(`cat ${secret}; cat ${join(dir.home, '.aws', 'config')}`), dir, ['--deny-read', secret]);
    await waitForFile(join(dir.cwd, 'started'));
    replaceByRename(secret, 'NEW-SECRET-AKIA\n');
    writeFileSync(join(dir.cwd, 'go'), '');
    const out = await run.done;
    expect(out).not.toContain('NEW-SECRET-AKIA');
    expect(out).not.toContain('old-secret');
    expect(out).toContain('Permission denied');
    expect(out).toContain('region = eu-west-1'); // the rest of the directory is still there
    expect(readFileSync(secret, 'utf8')).toBe('NEW-SECRET-AKIA\n'); // the host program's write took effect
  });

  it('the directory holding it moved away and made anew (mv ~/.aws ~/.aws.old; mkdir ~/.aws; new credentials): unreadable', async () => {
    const dir = scratch();
    const aws = join(dir.home, '.aws');
    mkdirSync(aws);
    writeFileSync(join(aws, 'credentials'), 'old-secret\n');
    const run = background(afterGo(`cat ${join(aws, 'credentials')}; ls -a ${aws}`), dir, ['--deny-read', join(aws, 'credentials')]);
    await waitForFile(join(dir.cwd, 'started'));
    renameSync(aws, `${aws}.old`);
    mkdirSync(aws);
    writeFileSync(join(aws, 'credentials'), 'NEW-SECRET-AKIA\n');
    writeFileSync(join(dir.cwd, 'go'), '');
    const out = await run.done;
    expect(out).not.toContain('NEW-SECRET-AKIA');
    expect(out).not.toContain('old-secret');
    expect(readFileSync(join(aws, 'credentials'), 'utf8')).toBe('NEW-SECRET-AKIA\n');
    expect(readFileSync(join(`${aws}.old`, 'credentials'), 'utf8')).toBe('old-secret\n');
  });

  it('a denied directory (~/.ssh) moved away and made anew with a key in it: the sandbox still sees it empty', async () => {
    const dir = scratch();
    const ssh = join(dir.home, '.ssh');
    mkdirSync(ssh);
    writeFileSync(join(ssh, 'id_ed25519'), 'OLD-KEY\n');
    const run = background(afterGo(`ls -A ${ssh}; cat ${ssh}/id_ed25519`), dir, ['--deny-read', ssh]);
    await waitForFile(join(dir.cwd, 'started'));
    renameSync(ssh, `${ssh}.bak`);
    mkdirSync(ssh);
    writeFileSync(join(ssh, 'id_ed25519'), 'NEW-KEY\n');
    writeFileSync(join(dir.cwd, 'go'), '');
    const out = await run.done;
    expect(out).not.toContain('NEW-KEY');
    expect(out).not.toContain('OLD-KEY');
    expect(readFileSync(join(ssh, 'id_ed25519'), 'utf8')).toBe('NEW-KEY\n');
  });

  it('a denied file that does not exist yet, created by a program outside during the run: unreadable', async () => {
    const dir = scratch();
    const secret = join(dir.home, '.config', 'gh', 'hosts.yml');
    const run = background(afterGo(`cat ${secret}`), dir, ['--deny-read', secret]);
    await waitForFile(join(dir.cwd, 'started'));
    mkdirSync(join(dir.home, '.config', 'gh'), { recursive: true });
    writeFileSync(secret, 'oauth_token: NEW-TOKEN\n');
    writeFileSync(join(dir.cwd, 'go'), '');
    const out = await run.done;
    expect(out).not.toContain('NEW-TOKEN');
    expect(readFileSync(secret, 'utf8')).toBe('oauth_token: NEW-TOKEN\n');
  });

  it('a credentials.files deny entry replaced by rename (docker login): unreadable', async () => {
    const dir = scratch();
    const config = join(dir.home, '.docker', 'config.json');
    mkdirSync(join(dir.home, '.docker'));
    writeFileSync(config, '{"auths":{}}\n');
    const settings = join(dir.home, '.srt', 'settings.json');
    mkdirSync(join(dir.home, '.srt'));
    writeFileSync(settings, JSON.stringify({ credentials: { files: [{ path: '~/.docker/config.json', mode: 'deny' }] } }));
    const run = background(afterGo(`cat ${config}`), dir, []);
    await waitForFile(join(dir.cwd, 'started'));
    replaceByRename(config, '{"auths":{"x":{"auth":"NEW-DOCKER-AUTH"}}}\n');
    writeFileSync(join(dir.cwd, 'go'), '');
    const out = await run.done;
    expect(out).not.toContain('NEW-DOCKER-AUTH');
    expect(out).toContain('Permission denied');
  });

  it('a masked credential file replaced by rename (a token refresh): the sentinel copy stays, the new token is never seen', async () => {
    const dir = scratch();
    const token = join(dir.home, '.config', 'tool', 'token');
    mkdirSync(join(dir.home, '.config', 'tool'), { recursive: true });
    const old = `ghp_${'a'.repeat(36)}`;
    const fresh = `ghp_${'N'.repeat(36)}`;
    writeFileSync(token, `${old}\n`);
    mkdirSync(join(dir.home, '.srt'));
    writeFileSync(join(dir.home, '.srt', 'settings.json'), JSON.stringify({ credentials: { files: [{ path: '~/.config/tool/token', mode: 'mask' }] } }));
    const run = background(afterGo(`cat ${token}; echo; ls ${join(dir.home, '.config', 'tool')}`), dir, []);
    await waitForFile(join(dir.cwd, 'started'));
    replaceByRename(token, `${fresh}\n`);
    writeFileSync(join(dir.cwd, 'go'), '');
    const out = await run.done;
    expect(out).not.toContain(fresh);
    expect(out).not.toContain(old);
    expect(out).toMatch(/ghp_[A-Za-z0-9]{36}/); // the sentinel, still
    expect(readFileSync(token, 'utf8')).toBe(`${fresh}\n`);
  });

  // A snapshot of a big directory would cost a bind per entry at every start: past a budget the
  // supervisor's read gate holds such a deny instead (without it srt warns, as the test below says).
  it('a denyRead file in a directory of 1,500 entries outside the writable paths, replaced outside, and one made there: unreadable, its neighbours as on the host', async () => {
    const dir = scratch();
    const data = join(dir.home, '..', 'data');
    mkdirSync(data);
    for (let i = 0; i < 1500; i++) writeFileSync(join(data, `r${i}`), `row${i}\n`);
    const secret = join(data, 'r7');
    const later = join(data, 'later-secret');
    const run = background(afterGo(`cat ${secret}; cat ${later}; cat ${join(data, 'r8')} ${join(data, 'fresh')}; ls ${data} | wc -l`), dir, ['--deny-read', secret, '--deny-read', later]);
    await waitForFile(join(dir.cwd, 'started'));
    replaceByRename(secret, 'NEW-SECRET\n');
    writeFileSync(later, 'LATER-SECRET\n');
    writeFileSync(join(data, 'fresh'), 'fresh\n');
    writeFileSync(join(dir.cwd, 'go'), '');
    const out = await run.done;
    expect(out).not.toContain('NEW-SECRET');
    expect(out).not.toContain('LATER-SECRET');
    expect(out).not.toContain('row7');
    expect(out).toContain('row8\nfresh\n'); // not a snapshot: the directory is the host's
    expect(out).not.toContain('too many entries');
    expect(readFileSync(secret, 'utf8')).toBe('NEW-SECRET\n');
  });

  it('held by the read gate in a big directory outside: no other name reaches it (symlink, hard link, fd reopen, dirfd, copy), nor a directory made anew in its place', async () => {
    const dir = scratch();
    const data = join(dir.home, '..', 'data');
    mkdirSync(data);
    for (let i = 0; i < 1500; i++) writeFileSync(join(data, `r${i}`), `row${i}\n`);
    const secret = join(data, 'r7');
    const py = [
      'import ctypes, os, shutil, sys, time',
      'libc = ctypes.CDLL(None, use_errno=True)',
      'def t(name, f):',
      '    try: print(name, "GOT", f())',
      '    except OSError as e: print(name, "errno", e.errno)',
      'open("started", "w").close()',
      'while not os.path.exists("go"): time.sleep(0.02)',
      'def routes(tag, p):',
      '    d, n = os.path.split(p)',
      '    os.symlink(p, "sl-" + tag)',
      '    t(tag + "-symlink", lambda: open("sl-" + tag).read())',
      '    t(tag + "-hardlink", lambda: (os.link(p, "hl-" + tag), open("hl-" + tag).read()))',
      '    def linkat():',
      '        fd = os.open(p, os.O_PATH)',
      '        if libc.linkat(fd, b"", -100, ("al-" + tag).encode(), 0x1000) != 0: raise OSError(ctypes.get_errno(), "linkat")',
      '        return open("al-" + tag).read()',
      '    t(tag + "-linkat", linkat)',
      '    t(tag + "-procfd", lambda: open("/proc/self/fd/%d" % os.open(p, os.O_PATH)).read())',
      '    t(tag + "-dirfd", lambda: os.read(os.open(n, os.O_RDONLY, dir_fd=os.open(d, os.O_PATH)), 99).decode())',
      '    t(tag + "-copy", lambda: (shutil.copy(p, "cp-" + tag), open("cp-" + tag).read())[1])',
      'routes("secret", sys.argv[1])',
      'routes("control", sys.argv[2])',
      't("anew", lambda: open(sys.argv[1]).read())',
    ].join('\n');
    const run = background(`python3 -c '${py.replace(/'/g, `'"'"'`)}' ${secret} ${join(data, 'r8')}`, dir, ['--deny-read', secret]);
    await waitForFile(join(dir.cwd, 'started'));
    // The directory moved away and made anew, the denied name in it again (the gate holds the
    // path, not what a mount covered at the start).
    renameSync(data, `${data}.old`);
    mkdirSync(data);
    writeFileSync(secret, 'NEW-SECRET\n');
    writeFileSync(join(data, 'r8'), 'row8\n');
    writeFileSync(join(dir.cwd, 'go'), '');
    const out = await run.done;
    expect(out).not.toContain('row7');
    expect(out).not.toContain('NEW-SECRET');
    for (const route of ['symlink', 'hardlink', 'linkat', 'procfd', 'dirfd', 'copy']) expect(out).toMatch(new RegExp(`^secret-${route} errno \\d+$`, 'm'));
    expect(out).toMatch(/^anew errno 13$/m);
    // The control: the same routes to a neighbour read it (where the kernel lets a route work at all).
    for (const route of ['symlink', 'procfd', 'dirfd', 'copy']) expect(out).toContain(`control-${route} GOT row8`);
    expect(readFileSync(secret, 'utf8')).toBe('NEW-SECRET\n');
    expect(readFileSync(join(`${data}.old`, 'r7'), 'utf8')).toBe('row7\n');
  });

  it('a denied .env in the writable project, saved by an editor outside (rename over it) while the command reads it in a loop: never readable', async () => {
    const dir = scratch();
    const env = join(dir.cwd, '.env');
    writeFileSync(env, 'TOKEN=old\n');
    // Reads as fast as it can, by every route: the name, a hard link, a rename, a symlink.
    const script = afterGo('i=0; while [ $i -lt 400 ] && [ ! -e stop ]; do cat .env 2>/dev/null; ln .env x 2>/dev/null && cat x; ' +
      'mv .env y 2>/dev/null && cat y; ln -sf .env l 2>/dev/null; cat l 2>/dev/null; i=$((i+1)); done; echo loop-done; ls -a');
    const run = background(script, dir, ['--deny-read', env]);
    await waitForFile(join(dir.cwd, 'started'));
    writeFileSync(join(dir.cwd, 'go'), '');
    for (let i = 0; i < 20; i++) {
      replaceByRename(env, `TOKEN=NEW-${i}\n`);
      await sleep(20);
    }
    writeFileSync(join(dir.cwd, 'stop'), '');
    const out = await run.done;
    expect(out).toContain('loop-done');
    expect(out).not.toMatch(/TOKEN=/);
    // The host: the editor's last save is there, nothing else took its name.
    expect(readFileSync(env, 'utf8')).toBe('TOKEN=NEW-19\n');
    expect(existsSync(join(dir.cwd, 'x'))).toBe(false);
    expect(existsSync(join(dir.cwd, 'y'))).toBe(false);
  });

  it('a denied .env in the project that does not exist yet, created outside during the run: unreadable, and the command cannot create it', async () => {
    const dir = scratch();
    const env = join(dir.cwd, '.env');
    const run = background(afterGo('cat .env; echo mine > .env && echo created'), dir, ['--deny-read', env]);
    await waitForFile(join(dir.cwd, 'started'));
    writeFileSync(env, 'TOKEN=NEW\n');
    writeFileSync(join(dir.cwd, 'go'), '');
    const out = await run.done;
    expect(out).not.toContain('TOKEN=NEW');
    expect(out).not.toContain('created');
    expect(readFileSync(env, 'utf8')).toBe('TOKEN=NEW\n');
  });

  it('a denied directory in the project moved away and made anew outside: its new files are unreadable', async () => {
    const dir = scratch();
    const secrets = join(dir.cwd, 'secrets');
    mkdirSync(secrets);
    writeFileSync(join(secrets, 'k'), 'OLD\n');
    const run = background(afterGo('ls -A secrets; cat secrets/k'), dir, ['--deny-read', secrets]);
    await waitForFile(join(dir.cwd, 'started'));
    renameSync(secrets, `${secrets}.old`);
    mkdirSync(secrets);
    writeFileSync(join(secrets, 'k'), 'NEW-KEY\n');
    writeFileSync(join(dir.cwd, 'go'), '');
    const out = await run.done;
    expect(out).not.toContain('NEW-KEY');
    expect(readFileSync(join(secrets, 'k'), 'utf8')).toBe('NEW-KEY\n');
  });
  it('a denied .env and directory in the project, replaced outside: no other route reaches them either (fd reopen, dirfd, link, rename, removal, creation)', async () => {
    const dir = scratch();
    mkdirSync(join(dir.cwd, 'sub'));
    writeFileSync(join(dir.cwd, 'sub', '.env'), 'TOKEN=old\n');
    mkdirSync(join(dir.cwd, 'keys'));
    const py = [
      'import ctypes, os, time',
      'libc = ctypes.CDLL(None, use_errno=True)',
      'def t(name, f):',
      '    try: print(name, "GOT", f())',
      '    except OSError as e: print(name, "errno", e.errno)',
      'print("keys-listed", os.listdir("keys"))', // the mask itself: an empty directory
      'open("started", "w").close()',
      'while not os.path.exists("go"): time.sleep(0.02)',
      'p = os.open("sub/.env", os.O_PATH)', // O_PATH reads nothing: the kernel answers it
      't("procfd", lambda: open("/proc/self/fd/%d" % p).read())',
      't("dirfd", lambda: os.read(os.open(".env", os.O_RDONLY, dir_fd=os.open("sub", os.O_PATH)), 99))',
      'def link():',
      '    if libc.linkat(p, b"", -100, b"hl", 0x1000) != 0: raise OSError(ctypes.get_errno(), "linkat")',
      '    return open("hl").read()',
      't("link", link)',
      't("mvdir", lambda: (os.rename("sub", "sub2"), open("sub2/.env").read()))',
      't("rm", lambda: os.unlink("sub/.env"))',
      't("rmkeys", lambda: os.rmdir("keys"))',
      't("keys", lambda: os.listdir("keys"))',
      't("keysdot", lambda: os.listdir("keys/."))',
      't("mkdir", lambda: os.mkdir("newdir"))',
      't("rw", lambda: os.read(os.open("sub/.env", os.O_RDWR), 99))',
    ].join('\n');
    const run = background(`python3 -c '${py.replace(/'/g, `'"'"'`)}'`, dir,
      ['--deny-read', join(dir.cwd, 'sub', '.env'), '--deny-read', join(dir.cwd, 'keys'), '--deny-read', join(dir.cwd, 'newdir')]);
    await waitForFile(join(dir.cwd, 'started'));
    replaceByRename(join(dir.cwd, 'sub', '.env'), 'TOKEN=NEW\n');
    renameSync(join(dir.cwd, 'keys'), join(dir.cwd, 'keys.old'));
    mkdirSync(join(dir.cwd, 'keys'));
    writeFileSync(join(dir.cwd, 'keys', 'id'), 'NEW-KEY\n');
    writeFileSync(join(dir.cwd, 'go'), '');
    const out = await run.done;
    expect(out).toContain('keys-listed []');
    for (const route of ['procfd', 'dirfd', 'link', 'mvdir', 'rm', 'rmkeys', 'keys', 'keysdot', 'mkdir', 'rw']) expect(out).toContain(`${route} errno 13`);
    expect(out).not.toContain('TOKEN=');
    expect(out).not.toContain('NEW-KEY');
    // The host: everything where the programs outside left it.
    expect(readFileSync(join(dir.cwd, 'sub', '.env'), 'utf8')).toBe('TOKEN=NEW\n');
    expect(readFileSync(join(dir.cwd, 'keys', 'id'), 'utf8')).toBe('NEW-KEY\n');
    expect(existsSync(join(dir.cwd, 'hl'))).toBe(false);
    expect(existsSync(join(dir.cwd, 'sub2'))).toBe(false);
    expect(existsSync(join(dir.cwd, 'newdir'))).toBe(false);
  });
});

describe('deny globs, judged at each open (the supervisor): nothing is expanded at start', () => {
  it('a match a program outside makes or replaces during the run, in a directory old or new, is unreadable by every route', async () => {
    const dir = scratch();
    mkdirSync(join(dir.cwd, 'app'));
    writeFileSync(join(dir.cwd, 'app', '.env'), 'TOKEN=old\n');
    writeFileSync(join(dir.cwd, 'app', 'main.js'), 'main\n');
    const py = [
      'import os, time',
      'open("started", "w").close()',
      'while not os.path.exists("go"): time.sleep(0.02)',
      'def t(name, f):',
      '    try: print(name, "GOT", f())',
      '    except OSError as e: print(name, "errno", e.errno)',
      't("replaced", lambda: open("app/.env").read())',
      't("new", lambda: open("app/new/.env").read())',
      't("deep", lambda: open("a/b/c/secrets/key").read())',
      't("procfd", lambda: open("/proc/self/fd/%d" % os.open("app/.env", os.O_PATH)).read())',
      't("dirfd", lambda: os.read(os.open(".env", os.O_RDONLY, dir_fd=os.open("app", os.O_PATH)), 99))',
      't("dots", lambda: open("app/new/../.env").read())',
      't("main", lambda: open("app/main.js").read())',
    ].join('\n');
    const run = background(`python3 -c '${py.replace(/'/g, `'"'"'`)}'`, dir, ['--deny-read', '**/.env', '--deny-read', '**/secrets/**']);
    await waitForFile(join(dir.cwd, 'started'));
    replaceByRename(join(dir.cwd, 'app', '.env'), 'TOKEN=NEW\n');
    mkdirSync(join(dir.cwd, 'app', 'new'));
    writeFileSync(join(dir.cwd, 'app', 'new', '.env'), 'TOKEN=NEWDIR\n');
    mkdirSync(join(dir.cwd, 'a', 'b', 'c', 'secrets'), { recursive: true });
    writeFileSync(join(dir.cwd, 'a', 'b', 'c', 'secrets', 'key'), 'NEW-KEY\n');
    writeFileSync(join(dir.cwd, 'go'), '');
    const out = await run.done;
    for (const route of ['replaced', 'new', 'deep', 'procfd', 'dirfd', 'dots']) expect(out).toContain(`${route} errno 13`);
    expect(out).toContain("main GOT main");
    expect(out).not.toContain('TOKEN=');
    expect(out).not.toContain('NEW-KEY');
    expect(readFileSync(join(dir.cwd, 'app', '.env'), 'utf8')).toBe('TOKEN=NEW\n');
  });

  it('the command makes no match and no other name for one: create, rename, link, symlink, a moved directory; what stays a match moves', async () => {
    const dir = scratch();
    writeTree(dir.cwd, { 'app/.env': 'TOKEN=A\n', 'vault/secrets/k': 'KEY\n', 'x.txt': 'x\n', 'other/f': 'OTHER\n' });
    symlinkSync(join(dir.cwd, 'other'), join(dir.cwd, 'dir.pem'));
    symlinkSync('app/.env', join(dir.cwd, 'to-env'));
    symlinkSync('x.txt', join(dir.cwd, 'link.pem'));
    const script = [
      attempt('create', 'echo mine > .env'),
      attempt('renameInto', 'mv x.txt .env'),
      attempt('renameOut', 'mv app/.env app/plain'),
      attempt('hardlink', 'ln app/.env hl && cat hl'),
      attempt('symlinkNamed', 'ln -s x.txt y.pem'),
      attempt('viaLink', 'cat to-env'),
      attempt('linkNamed', 'cat link.pem'),
      attempt('linkOnTheWay', 'cat dir.pem/f'),
      attempt('listLink', 'ls dir.pem/ | grep -q f'),
      attempt('moveSecrets', 'mv vault/secrets vault/open && cat vault/open/k'),
      attempt('moveApp', 'mv app app2'),
      attempt('movedStillHidden', 'cat app2/.env'),
      attempt('plain', 'cat other/f'),
    ].join('\n');
    const r = await srt(['--deny-read', '**/.env', '--deny-read', '**/secrets/**', '--deny-read', '**/*.pem', '--', 'sh', '-c', script], dir);
    expect(r.exitCode, r.stderr).toBe(0);
    expect(results(r.stdout)).toEqual({
      create: 'no', renameInto: 'no', renameOut: 'no', hardlink: 'no', symlinkNamed: 'no', viaLink: 'no', linkNamed: 'no', linkOnTheWay: 'no', listLink: 'no',
      moveSecrets: 'no', moveApp: 'yes', movedStillHidden: 'no', plain: 'yes',
    });
    expect(readFileSync(join(dir.cwd, 'app2', '.env'), 'utf8')).toBe('TOKEN=A\n');
    expect(readFileSync(join(dir.cwd, 'vault', 'secrets', 'k'), 'utf8')).toBe('KEY\n');
    for (const gone of ['.env', 'hl', 'y.pem', 'vault/open']) expect(existsSync(join(dir.cwd, gone)), gone).toBe(false);
  });

  it('an allowRead entry re-opens a path inside a match; a glob outside the writable paths covers what appears there', async () => {
    const dir = scratch();
    writeTree(dir.cwd, { 'conf/.env': 'PUBLIC=1\n', 'app/.env': 'TOKEN=A\n' });
    mkdirSync(join(dir.home, 'keys'));
    const settings = join(dir.home, '..', 'reopen.json');
    writeFileSync(settings, JSON.stringify({ filesystem: { denyRead: ['**/.env', '~/**/*.pem'], allowRead: [join(dir.cwd, 'conf', '.env')] } }));
    const run = background(afterGo('cat conf/.env; cat app/.env; cat ~/keys/new.pem; cat ~/keys/notes'), dir, ['--settings', settings]);
    await waitForFile(join(dir.cwd, 'started'));
    writeFileSync(join(dir.home, 'keys', 'new.pem'), 'PEM-SECRET\n');
    writeFileSync(join(dir.home, 'keys', 'notes'), 'notes\n');
    writeFileSync(join(dir.cwd, 'go'), '');
    const out = await run.done;
    expect(out).toContain('PUBLIC=1');
    expect(out).toContain('notes');
    expect(out).not.toContain('TOKEN=A');
    expect(out).not.toContain('PEM-SECRET');
  });

  it('a directory holding hidden paths is not moved onto a path that re-opens them', async () => {
    const dir = scratch();
    writeTree(dir.cwd, { 'vault/secrets/k': 'KEY\n', 'open/secrets/pub/.keep': '' });
    rmSync(join(dir.cwd, 'open', 'secrets', 'pub', '.keep'));
    const settings = join(dir.home, '..', 'reopen-move.json');
    writeFileSync(settings, JSON.stringify({ filesystem: { denyRead: ['**/secrets/**'], allowRead: [join(dir.cwd, 'open', 'secrets', 'pub')] } }));
    const r = await srt(['--settings', settings, '--', 'sh', '-c', `${attempt('listPub', 'ls open/secrets/pub')}\n${attempt('moveOnto', 'mv vault/secrets open/secrets/pub && cat open/secrets/pub/k')}`], dir);
    expect(results(r.stdout)).toEqual({ listPub: 'yes', moveOnto: 'no' });
    expect(readFileSync(join(dir.cwd, 'vault', 'secrets', 'k'), 'utf8')).toBe('KEY\n');
  });

  it('without the supervisor the globs are expanded at start: what matches then is hidden, and srt says the rest is not', async () => {
    const dir = scratch();
    writeTree(dir.cwd, { 'app/.env': 'TOKEN=A\n', 'deep/er/secrets/k': 'KEY\n', 'ok': 'ok\n' });
    const r = await srt(['--deny-read', '**/.env', '--deny-read', '**/secrets/**', '--', 'sh', '-c', 'cat app/.env deep/er/secrets/k ok'], { ...dir, ...NO_SUPERVISOR });
    expect(r.stdout).toBe('ok');
    expect(r.stderr).toContain('a deny glob covers only the paths that match when the run starts');
  });
});

describe('what pinning leaves usable', () => {
  it('the rest of a snapshot directory reads as before, a writable path inside it is writable, a denied directory lists empty', async () => {
    const dir = scratch();
    mkdirSync(join(dir.home, '.ssh'));
    writeFileSync(join(dir.home, '.ssh', 'id'), 'KEY\n');
    writeFileSync(join(dir.home, '.gitconfig'), '[user]\n\tname = t\n');
    mkdirSync(join(dir.home, '.cache'));
    mkdirSync(join(dir.home, 'bin'));
    writeFileSync(join(dir.home, 'bin', 'tool'), '#!/bin/sh\necho tool-ran\n', { mode: 0o755 });
    const r = await srt(['--deny-read', join(dir.home, '.ssh'), '--allow-write', join(dir.home, '.cache'), '--', 'sh', '-c',
      `cat ~/.gitconfig; ~/bin/tool; echo c > ~/.cache/c && echo cache-ok; ls -A ~/.ssh | wc -l; echo x > ~/new 2>/dev/null || echo home-ro`], dir);
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toContain('name = t');
    expect(r.stdout).toContain('tool-ran');
    expect(r.stdout).toContain('cache-ok');
    expect(r.stdout).toContain('home-ro');
    expect(r.stdout.split('\n')).toContain('0');
    expect(readFileSync(join(dir.home, '.cache', 'c'), 'utf8')).toBe('c\n');
    expect(existsSync(join(dir.home, 'new'))).toBe(false);
  });

  it('a home of 300 entries (the helper binds each back): inside, the same names, kinds and contents as on the host, none writable, nothing else', async () => {
    const dir = scratch();
    mkdirSync(join(dir.home, '.ssh'));
    writeFileSync(join(dir.home, '.ssh', 'id'), 'KEY\n');
    for (let i = 0; i < 100; i++) {
      writeFileSync(join(dir.home, `.rc${i}`), `rc${i}\n`);
      mkdirSync(join(dir.home, `.d${i}`));
      writeFileSync(join(dir.home, `.d${i}`, 'f'), `d${i}\n`);
      symlinkSync(`.rc${i}`, join(dir.home, `.l${i}`));
    }
    const host = readdirSync(dir.home, { withFileTypes: true })
      .map((e) => `${e.name} ${e.isSymbolicLink() ? 'l' : e.isDirectory() ? 'd' : 'f'}`).filter((e) => !e.startsWith('.srt ')).sort();
    const r = await srt(['--deny-read', join(dir.home, '.ssh'), '--', 'sh', '-c',
      'cd ~ && for e in .[!.]* *; do [ "$e" = .srt ] && continue; [ -e "$e" ] || [ -L "$e" ] || continue; ' +
      'if [ -L "$e" ]; then echo "$e l"; elif [ -d "$e" ]; then echo "$e d"; else echo "$e f"; fi; done | LC_ALL=C sort; echo --; ' +
      'cat .rc7 .d42/f .l9; ls -A .ssh | wc -l; n=0; for i in 0 1 2 3 4 5 6 7 8 9; do (echo x >> .rc$i) 2>/dev/null || n=$((n+1)); (echo x > .d$i/new) 2>/dev/null || n=$((n+1)); done; echo "refused $n"'], dir);
    expect(r.exitCode).toBe(0);
    const [inside, rest] = r.stdout.split('--\n');
    expect(inside!.trim().split('\n')).toEqual(host);
    expect(rest!.split('\n')).toEqual(['rc7', 'd42', 'rc9', '0', 'refused 20']);
    expect(readFileSync(join(dir.home, '.rc0'), 'utf8')).toBe('rc0\n');
    expect(readdirSync(join(dir.home, '.d0'))).toEqual(['f']);
  });

  // bwrap re-read the mount table after each of its binds: 1,000 denied files took 2 s. The
  // helper binds srt's denied file over each itself (init/verify.c `d` binds).
  it('1,000 denied files outside the writable paths, in the project and in a snapshot: each unreadable and unwritable, its neighbours as on the host', async () => {
    const dir = scratch();
    const outside = join(dir.home, '..', 'data');
    mkdirSync(outside);
    mkdirSync(join(dir.cwd, 'sec'));
    mkdirSync(join(dir.home, '.aws'));
    const denied: string[] = [];
    for (let i = 0; i < 400; i++) {
      writeFileSync(join(outside, `s${i}`), `SECRET${i}\n`);
      writeFileSync(join(dir.cwd, 'sec', `s${i}`), `SECRET${i}\n`);
      denied.push(join(outside, `s${i}`), join(dir.cwd, 'sec', `s${i}`));
    }
    for (let i = 0; i < 200; i++) {
      writeFileSync(join(dir.home, '.aws', `s${i}`), `SECRET${i}\n`);
      denied.push(join(dir.home, '.aws', `s${i}`));
    }
    writeFileSync(join(outside, 'open'), 'open\n');
    writeFileSync(join(dir.cwd, 'sec', 'open'), 'open\n');
    writeFileSync(join(dir.home, '.aws', 'open'), 'open\n');
    const settings = join(dir.home, '..', 'many.json');
    writeFileSync(settings, JSON.stringify({ filesystem: { denyRead: denied } }));
    const probe = (p: string) => `c=$(cat ${p} 2>/dev/null) && echo "read ${p}"; (echo x >> ${p}) 2>/dev/null && echo "wrote ${p}"`;
    const sample = [0, 1, 2, 399, 400, 401, 798, 799, 800, 999].map((i) => denied[i]!);
    const script = [...sample.map(probe), `cat ${join(outside, 'open')} sec/open ~/.aws/open`,
      `n=0; for f in ${join(outside, 's*')} sec/s* ~/.aws/s*; do cat "$f" 2>/dev/null | grep -q SECRET && n=$((n+1)); done; echo "readable $n"`].join('\n');
    const r = await srt(['--settings', settings, '--', 'sh', '-c', script], dir);
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.stdout.trim().split('\n')).toEqual(['open', 'open', 'open', 'readable 0']);
    for (const p of sample) expect(readFileSync(p, 'utf8')).toMatch(/^SECRET\d+\n$/);
    // --dry-run lists them (they are not in bwrap's arguments).
    const dry = await srt(['--settings', settings, '--dry-run', '--', 'true'], dir);
    expect(dry.stdout).toContain("# denied files: srt-init binds srt's empty unreadable file over each");
    expect(dry.stdout).toContain(`\n${denied[999]}\n`);
  }, 120_000); // two srt runs with 1,000 denies and a thousand refused reads: slow on a loaded machine

  // With filesystem.disabled the host's root is mounted read-write: the helper's bind of srt's
  // denied file over a credential file must still be read-only (it re-mounts each one so).
  it('filesystem.disabled: a credentials.files deny is still an empty file that can be neither read nor written', async () => {
    const dir = scratch();
    const secret = join(dir.home, 'token');
    writeFileSync(secret, 'REAL-TOKEN\n');
    const settings = join(dir.home, '..', 'disabled.json');
    writeFileSync(settings, JSON.stringify({ filesystem: { disabled: true }, credentials: { files: [{ path: secret, mode: 'deny' }] } }));
    const r = await srt(['--settings', settings, '--', 'sh', '-c',
      `cat ${secret} 2>/dev/null && echo read; (echo x > ${secret}) 2>/dev/null && echo wrote; (echo x >> ${secret}) 2>/dev/null && echo appended; stat -c %s ${secret}`], dir);
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.stdout.trim()).toBe('0');
    expect(readFileSync(secret, 'utf8')).toBe('REAL-TOKEN\n');
  });

  it('without the supervisor a denied path in a writable directory cannot be held: srt says so at start', async () => {
    const dir = scratch();
    writeFileSync(join(dir.cwd, '.env'), 'TOKEN=x\n');
    const r = await srt(['--deny-read', join(dir.cwd, '.env'), '--', 'cat', '.env'], { ...dir, ...NO_SUPERVISOR });
    expect(r.stdout).not.toContain('TOKEN');
    expect(r.stderr).toContain('is a denied path inside a writable directory: if a program outside the sandbox replaces one during the run');
    rmSync(join(dir.cwd, '.env'));
  });
});
