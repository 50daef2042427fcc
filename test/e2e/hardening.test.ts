// Hardening (issue: address guard, cleanup, other runs' files, …), end to end with the real srt.
import { execFileSync } from 'node:child_process';
import { execa } from 'execa';
import { existsSync, linkSync, mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { attempt, keyValues, NO_SUPERVISOR, results, SRT_BIN, srt, startBackground, stopStragglers, tempDir, writeTree } from './helpers.js';

const tmp = tempDir('srt-e2e-hardening-');
afterAll(async () => {
  await stopStragglers();
  tmp.cleanup();
});

let n = 0;
function world() {
  const root = join(tmp.path, `w${n++}`);
  const home = join(root, 'home');
  const cwd = join(root, 'work');
  mkdirSync(home, { recursive: true });
  mkdirSync(cwd, { recursive: true });
  return { root, home, cwd };
}
const settings = (w: { root: string }, doc: object) => {
  const f = join(w.root, `s${n++}.json`);
  writeFileSync(f, JSON.stringify(doc));
  return f;
};

describe("the resolved-address guard knows every address of this host", () => {
  it('an allowed name resolving to an interface that is up without a carrier (docker0-like) is refused', async () => {
    // A network namespace of this test's own (user + net, works unprivileged): v0 is up, its veth
    // peer is down, so v0 has no carrier; Node's os.networkInterfaces() does not list it, the
    // kernel accepts connections to its address all the same.
    const home = join(tmp.path, 'home');
    mkdirSync(home, { recursive: true });
    const hosts = join(tmp.path, 'hosts');
    writeFileSync(hosts, '127.0.0.1 localhost\n10.99.0.1 nocarrier.test\n');
    const script = [
      'set -e',
      'ip link set lo up',
      'ip link add v0 type veth peer name v1',
      'ip addr add 10.99.0.1/24 dev v0',
      'ip link set v0 up',
      // The service on that address, and proof that it answers directly.
      `"${process.execPath}" -e "require('http').createServer((q, s) => s.end('reached')).listen(8099, '10.99.0.1', () => console.log('up'))" > "${tmp.path}/server.out" &`,
      'server=$!',
      'for i in $(seq 100); do grep -q up "' + tmp.path + '/server.out" 2>/dev/null && break; sleep 0.05; done',
      `echo direct=$(curl -s --max-time 5 http://10.99.0.1:8099/)`,
      `echo unlisted=$("${process.execPath}" -e "console.log(Object.keys(require('os').networkInterfaces()).includes('v0'))")`,
      // srt with that name allowed; the proxy resolves it from the hosts file bound over /etc/hosts.
      `bwrap --dev-bind / / --bind "${hosts}" /etc/hosts -- env HOME="${home}" PATH="$PATH" "${process.execPath}" "${SRT_BIN}" --allow-domain nocarrier.test -c "echo proxied=\\$(curl -s --max-time 5 -o /dev/null -w '%{http_code}' http://nocarrier.test:8099/); echo connect=\\$(curl -s -p --max-time 5 http://nocarrier.test:8099/ || echo refused); echo socks=\\$(curl -s --max-time 5 --socks5-hostname 127.0.0.1:1080 http://nocarrier.test:8099/ || echo refused)" || true`,
      'kill $server',
    ].join('\n');
    const r = await execa('unshare', ['-rn', 'sh', '-c', script], { reject: false, cwd: tmp.path, env: { PATH: process.env.PATH }, timeout: 60_000 });
    expect(r.stdout).toContain('direct=reached');
    expect(r.stdout).toContain('unlisted=false');
    expect(r.stdout).toContain('proxied=403');
    expect(r.stdout).toContain('connect=refused');
    expect(r.stdout).toContain('socks=refused');
    expect(r.stderr).toContain('srt: blocked nocarrier.test:8099 — resolves only to blocked addresses: 10.99.0.1 is an address of this host');
  });
});

describe('denied paths', () => {
  it('a denied file reads as Permission denied (exit 1), a denied directory lists nothing; credential deny files too', async () => {
    const w = world();
    writeTree(w.home, { 'secret.txt': 'S1\n', 'keys/a': 'S2\n', '.netrc': 'S3\n' });
    const f = settings(w, { filesystem: { denyRead: ['~/secret.txt', '~/keys'] }, credentials: { files: [{ path: '~/.netrc', mode: 'deny' }] } });
    const r = await srt(['-s', f, '-c', 'cat ~/secret.txt; echo file=$?; echo dir=$(ls -A ~/keys | wc -l); cat ~/.netrc; echo cred=$?'], { home: w.home, cwd: w.cwd });
    expect(r.stderr).toContain(`cat: ${join(w.home, 'secret.txt')}: Permission denied`);
    expect(r.stderr).toContain(`cat: ${join(w.home, '.netrc')}: Permission denied`);
    expect(keyValues(r.stdout)).toEqual({ file: '1', dir: '0', cred: '1' });
    expect(r.stdout).not.toMatch(/S[123]/);
  });

  it('the directories above a read-denied file cannot be renamed to put other content at its path', async () => {
    const w = world();
    writeTree(w.cwd, { 'conf/deep/key': 'REAL\n' });
    const f = settings(w, { filesystem: { denyRead: ['conf/deep/key'] } });
    const r = await srt(['-s', f, '-c', 'mv conf c2 2>/dev/null; mv conf/deep conf/d2 2>/dev/null; mkdir -p c3/deep && echo FAKE > c3/deep/key && mv -T c3 conf 2>/dev/null; ls conf; true'], { home: w.home, cwd: w.cwd });
    expect(r.stdout).toBe('deep');
    expect(readFileSync(join(w.cwd, 'conf/deep/key'), 'utf8')).toBe('REAL\n');
    expect(existsSync(join(w.cwd, 'c2'))).toBe(false);
  });

  it('a denyWrite path that runs through a symlink loop stops the run (125); nothing runs', async () => {
    const w = world();
    symlinkSync('loop2', join(w.cwd, 'loop1'));
    symlinkSync('loop1', join(w.cwd, 'loop2'));
    const f = settings(w, { filesystem: { denyWrite: ['loop1/secret.txt'] } });
    const r = await srt(['-s', f, '-c', 'touch ran'], { home: w.home, cwd: w.cwd });
    expect(r.exitCode).toBe(125);
    expect(r.stderr).toBe(`srt: filesystem.denyWrite: loop1/secret.txt: srt cannot tell where ${join(w.cwd, 'loop1')} leads (its symlinks loop or nest deeper than 40); fix the path or remove the entry`);
    expect(existsSync(join(w.cwd, 'ran'))).toBe(false);
  });

  it('a denyWrite path below an existing file cannot be made by replacing the file with a directory', async () => {
    const w = world();
    writeFileSync(join(w.cwd, 'afile'), 'x');
    const f = settings(w, { filesystem: { denyWrite: ['afile/x'] } });
    await srt(['-s', f, '-c', 'rm -f afile; mkdir afile; echo pwned > afile/x; true'], { home: w.home, cwd: w.cwd });
    expect(readFileSync(join(w.cwd, 'afile'), 'utf8')).toBe('x');
  });

  it('denyRead ["/"] with allowRead carve-outs (a read allowlist) runs: the system, the project, /proc, /dev and /sys, nothing else', async () => {
    const w = world();
    writeTree(w.cwd, { 'src.txt': 'project\n' });
    writeTree(w.home, { 'private.txt': 'P\n' });
    const f = settings(w, { filesystem: { denyRead: ['/'], allowRead: ['/usr', '/lib', '/lib64', '/bin', '/sbin', '/etc', process.execPath] } });
    const script = [
      'echo project=$(cat src.txt)', 'echo write=$(echo x > new && echo ok)', 'echo home=$(cat ~/private.txt 2>/dev/null || echo hidden)',
      'echo proc=$(test -r /proc/self/status && echo ok)', 'echo dev=$(echo hi > /dev/null && echo ok)', 'echo sys=$(test -d /sys/kernel && echo ok)',
      `echo node=$("${process.execPath}" -e "console.log(1+1)")`, 'echo etc=$(test -r /etc/passwd && echo ok)',
    ].join('; ');
    const r = await srt(['-s', f, '-c', script], { home: w.home, cwd: w.cwd });
    expect(r.exitCode, r.stderr).toBe(0);
    expect(keyValues(r.stdout)).toEqual({ project: 'project', write: 'ok', home: 'hidden', proc: 'ok', dev: 'ok', sys: 'ok', node: '2', etc: 'ok' });
  });
});

describe('setuid and setgid files', () => {
  it('cannot be made inside, by any syscall that sets a mode; ordinary modes still work', async () => {
    const w = world();
    const r = await srt(['-c', [
      'cp /bin/sh ./sh',
      attempt('chmod', 'chmod u+s sh'),
      attempt('chmod_g', 'chmod g+s sh'),
      attempt('chmod_octal', 'chmod 4755 sh'),
      attempt('install', 'install -m 4755 /bin/sh ./sh2'),
      attempt('mkdir', 'mkdir -m 2755 sgid'),
      attempt('python_open', `python3 -c "import os; os.close(os.open('py', os.O_CREAT | os.O_WRONLY, 0o4755))"`),
      attempt('python_mknod', `python3 -c "import os, stat; os.mknod('fifo', stat.S_IFIFO | 0o6644)"`),
      attempt('plain', 'chmod 755 sh && chmod +x sh && mkdir -m 755 d && touch f && chmod 600 f'),
    ].join('\n')], { home: w.home, cwd: w.cwd });
    expect(results(r.stdout)).toEqual({ chmod: 'no', chmod_g: 'no', chmod_octal: 'no', install: 'no', mkdir: 'no', python_open: 'no', python_mknod: 'no', plain: 'yes' });
    // The host afterwards: nothing setuid or setgid in the work tree.
    const found = await execa('find', [w.cwd, '-perm', '/6000'], { reject: false });
    expect(found.stdout).toBe('');
  });
});

describe('what srt prints', () => {
  it('a refused name the command chose is shown escaped: it cannot erase or forge report lines', async () => {
    const w = world();
    await execa('git', ['init', '-q', w.cwd]);
    const r = await srt(['-c', `touch .git/config.x 2>/dev/null; touch ".git/hooks/$(printf 'x\\033[1A\\033[2K\\rsrt: all clear')" 2>/dev/null; true`], { home: w.home, cwd: w.cwd });
    expect(r.stderr).toContain('srt: refused writing .git/hooks/x\\x1b[1A\\x1b[2K\\rsrt: all clear (protected)');
    expect(r.stderr).not.toMatch(/\x1b/);
  });
});

describe('hard links', () => {
  it('a protected file with another name elsewhere is reported at start', async () => {
    const w = world();
    await execa('git', ['init', '-q', w.cwd]);
    writeTree(w.cwd, { 'scripts/hook': '#!/bin/sh\n', '.bashrc': '# rc\n' });
    await execa('ln', ['-f', join(w.cwd, 'scripts/hook'), join(w.cwd, '.git/hooks/pre-commit')]);
    await execa('ln', [join(w.cwd, '.bashrc'), join(w.cwd, 'scripts/rc')]);
    const r = await srt(['--', 'true'], { home: w.home, cwd: w.cwd });
    expect(r.stderr).toContain(`srt: warning: protected file ${join(w.cwd, '.git/hooks/pre-commit')} has 2 hard links`);
    expect(r.stderr).toContain(`srt: warning: protected file ${join(w.cwd, '.bashrc')} has 2 hard links`);
  });
});

describe('socket files', () => {
  it('a socketpair socket cannot be bound to a path in the work tree (no leftover socket inode)', async () => {
    const w = world();
    const py = `python3 -c "import socket; a, b = socket.socketpair(); a.bind('sock')"`;
    const r = await srt(['-c', attempt('bind', py)], { home: w.home, cwd: w.cwd });
    expect(results(r.stdout)).toEqual({ bind: 'no' });
    expect(existsSync(join(w.cwd, 'sock'))).toBe(false);
    // allowAllUnixSockets brings socket files back.
    const f = settings(w, { network: { allowAllUnixSockets: true } });
    const ok = await srt(['-s', f, '-c', attempt('bind', py)], { home: w.home, cwd: w.cwd });
    expect(results(ok.stdout)).toEqual({ bind: 'yes' });
  });
});

describe('deny globs', () => {
  // With the supervisor each open is judged by the glob (the undecodable name alone is hidden);
  // expanded at start (without it), the directory holding a name bwrap cannot be given is covered whole.
  it.each([
    ['with the supervisor (judged at each open)', {}, 'fine\nfine\n0', false],
    ['without it (expanded at start)', NO_SUPERVISOR, 'fine\n0', true],
  ] as const)('cover a symlink whose name matches, an empty matching directory, and never under-cover a name that is not UTF-8, %s', async (_, mode, expected, wholeDir) => {
    const w = world();
    writeTree(w.root, { 'elsewhere/real.txt': 'LINKED-SECRET\n' });
    writeTree(w.home, { 'keys/plain.pem': 'PEM-SECRET\n', 'keys/notes.txt': 'fine\n', 'odd/fine.txt': 'fine\n' });
    symlinkSync(join(w.root, 'elsewhere/real.txt'), join(w.home, 'keys', 'link.pem'));
    mkdirSync(join(w.home, 'keys', 'empty.pem'));
    writeFileSync(join(w.home, 'keys', 'empty.pem', 'x'), '');
    writeFileSync(Buffer.from(join(w.home, 'odd') + '/bad\xff.pem', 'latin1'), 'ODD-SECRET\n');
    const f = settings(w, { filesystem: { denyRead: ['~/keys/*.pem', '~/odd/*.pem'] } });
    const r = await srt(['-s', f, '-c', 'cat ~/keys/*.pem ~/keys/link.pem ~/odd/* 2>/dev/null; cat ~/keys/notes.txt; ls ~/keys/empty.pem 2>/dev/null | wc -l'], { home: w.home, cwd: w.cwd, ...mode });
    expect(r.stdout).not.toMatch(/SECRET/);
    expect(r.stdout).toBe(expected);
    const covered = `filesystem.denyRead: ~/odd/*.pem: ${join(w.home, 'odd')} holds a name that is not valid UTF-8 and may match; srt cannot name it to bubblewrap, so the whole directory is covered`;
    if (wholeDir) expect(r.stderr).toContain(covered);
    else expect(r.stderr).not.toContain(covered);
  });

  it('a denyWrite glob says it covers only the files that exist at start', async () => {
    const w = world();
    const f = settings(w, { filesystem: { denyWrite: ['*.lock'] } });
    const r = await srt(['-s', f, '--', 'true'], { home: w.home, cwd: w.cwd });
    expect(r.stderr).toContain('filesystem.denyWrite: *.lock: a glob covers only the paths that match when the run starts');
  });
});

describe("other runs' files", () => {
  it("a run sees only its own run directory: not another run's TMPDIR", async () => {
    const w = world();
    const a = await startBackground(['-c', 'echo SECRET-OF-A > $TMPDIR/a.txt; echo $TMPDIR; echo ready; sleep 30'], w.home, w.cwd);
    const aTmp = a.firstLine.trim();
    expect(existsSync(join(aTmp, 'a.txt'))).toBe(true);
    const r = await srt(['-c', `cat ${aTmp}/a.txt; ls ~/.srt/run | wc -l; cat ~/.srt/run/*/tmp/a.txt`], { home: w.home, cwd: w.cwd });
    expect(r.stdout).not.toContain('SECRET-OF-A');
    expect(r.stdout.trim()).toBe('1');
    a.child.kill('SIGTERM');
    await a.exit;
  });
});

describe('cleanup the command cannot defeat', () => {
  it('a TMPDIR tree deeper than PATH_MAX, with a directory left without permissions, is removed', async () => {
    const w = world();
    const script = `cd $TMPDIR && mkdir -p locked/inner && chmod 000 locked && python3 -c "import os
for _ in range(100): os.mkdir('d' * 50); os.chdir('d' * 50)
print(len(os.getcwd()))"`;
    const r = await srt(['-c', script], { home: w.home, cwd: w.cwd });
    expect(Number(r.stdout.trim())).toBeGreaterThan(4096);
    expect(readdirSync(join(w.home, '.srt', 'run'))).toEqual([]);
    expect(r.stderr).not.toContain('could not remove');
  });
});

describe('--control-fd the command could write', () => {
  // A FIFO or file in a writable path as the control descriptor let the command append lines that
  // replace its own network policy while it runs. Refused before anything runs; pipes, sockets and
  // what lies outside every writable path still work.
  const run = (w: { home: string; cwd: string }, redirect: string) => execa('bash', ['-c', `${redirect} exec "$@"`, 'bash', process.execPath, SRT_BIN, '--control-fd', '3', '--', 'sh', '-c', 'echo ran > ran'],
    { cwd: w.cwd, env: { PATH: process.env.PATH, HOME: w.home, LANG: 'C.UTF-8' }, extendEnv: false, reject: false, timeout: 60_000 });

  it('a FIFO or file inside a writable path (or with a second name there) is refused: exit 125, a clear error, nothing run', async () => {
    const w = world();
    execFileSync('mkfifo', [join(w.cwd, 'ctl')]);
    writeFileSync(join(w.cwd, 'ctl.json'), '');
    writeFileSync(join(w.root, 'linked.json'), '');
    linkSync(join(w.root, 'linked.json'), join(w.cwd, 'linked.json'));
    for (const [redirect, what] of [
      ['exec 3<>ctl;', `a FIFO inside a path the command may write (${w.cwd}/ctl)`],
      ['exec 3<ctl.json;', `a file inside a path the command may write (${w.cwd}/ctl.json)`],
      [`exec 3<${join(w.root, 'linked.json')};`, 'a file with 2 names: srt cannot tell whether the command may write one of them'],
    ] as const) {
      const r = await run(w, redirect);
      expect(r.exitCode, `${redirect} ${r.stderr}`).toBe(125);
      expect(r.stderr).toContain(`srt: --control-fd 3 is ${what}`);
      expect(existsSync(join(w.cwd, 'ran'))).toBe(false);
    }
  });

  it('an anonymous pipe, and a FIFO or file outside every writable path, are accepted', async () => {
    const w = world();
    execFileSync('mkfifo', [join(w.root, 'ctl')]);
    writeFileSync(join(w.root, 'ctl.json'), '');
    for (const redirect of ['exec 3< <(true);', `exec 3<>${join(w.root, 'ctl')};`, `exec 3<${join(w.root, 'ctl.json')};`]) {
      const r = await run(w, redirect);
      expect(r.exitCode, `${redirect} ${r.stderr}`).toBe(0);
      expect(readFileSync(join(w.cwd, 'ran'), 'utf8')).toBe('ran\n');
      rmSync(join(w.cwd, 'ran'));
    }
  });
});
