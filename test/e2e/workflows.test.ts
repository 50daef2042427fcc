// Everyday use (issue: workflows): the reference tool's spellings, help, honest messages, a
// read-only working directory, nesting, and what srt says after refusing a connection.
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterAll, describe, expect, it } from 'vitest';
import { REPO, SRT_BIN, srt, tempDir } from './helpers.js';

const tmp = tempDir('srt-e2e-workflows-');
afterAll(() => {
  if (existsSync(join(tmp.path, 'readonly'))) chmodSync(join(tmp.path, 'readonly'), 0o755);
  tmp.cleanup();
});
const home = join(tmp.path, 'home');
const cwd = join(tmp.path, 'work');
mkdirSync(home);
mkdirSync(cwd);

describe("the reference tool's muscle memory", () => {
  it('-s FILE and -d work with a reference-format settings file', async () => {
    const ref = join(tmp.path, 'ref.json');
    writeFileSync(ref, JSON.stringify({ network: { allowedDomains: ['github.com'], deniedDomains: [] }, filesystem: { denyRead: ['~/.ssh'], allowWrite: ['.'], denyWrite: [] } }));
    const r = await srt(['-s', ref, '-d', '--', 'true'], { home, cwd });
    expect(r.exitCode).toBe(0);
    expect(r.stderr).toContain(`srt[debug]: settings: cli ${ref}`);
  });

  it('srt help and srt help SUBCOMMAND print help and exit 0; srt -- help runs a command named help', async () => {
    const top = await srt(['help'], { home, cwd });
    expect(top.exitCode).toBe(0);
    expect(top.stdout).toContain('Usage: srt [options] [--] COMMAND');
    const sub = await srt(['help', 'trust'], { home, cwd });
    expect(sub.exitCode).toBe(0);
    expect(sub.stdout).toContain('Usage: srt trust');
    expect((await srt(['--', 'help'], { home, cwd })).exitCode).toBe(127);
  });

  it('srt help TOPIC that is no subcommand, and srt alone, are usage errors (exit 2: no command was given, so none failed to start) in one line', async () => {
    const run = await srt(['help', 'run'], { home, cwd });
    expect(run.exitCode).toBe(2);
    expect(run.stderr).toBe('srt: unknown command "run"; srt help lists the subcommands (srt help presets: the toolchain presets)');
    expect(run.stdout).toBe('');
    const bare = await srt([], { home, cwd });
    expect(bare.exitCode).toBe(2);
    expect(bare.stderr).toBe('srt: no command given; usage: srt [options] [--] COMMAND [ARGS...]; srt --help for options and subcommands');
  });

  it('srt -- /tmp says it is a directory (126), like a shell', async () => {
    const r = await srt(['--', '/tmp'], { home, cwd });
    expect(r.exitCode).toBe(126);
    expect(r.stderr).toBe('srt: /tmp: is a directory');
  });

  it('a reader that stops early (srt config | head) is no error', async () => {
    // `true` exits before srt writes: every write of srt meets a closed pipe.
    const r = await execa('sh', ['-c', `"${process.execPath}" "${SRT_BIN}" config | true; "${process.execPath}" "${SRT_BIN}" help | true`], {
      reject: false, cwd, env: { HOME: home, PATH: process.env.PATH },
    });
    expect(r.stderr).toBe('');
  });
});

describe('the README install and quick start', () => {
  it('puts srt on PATH as the README says, then runs the quick start without a single warning', async () => {
    const readme = readFileSync(join(REPO, 'README.md'), 'utf8');
    const install = /## Install[\s\S]*?```sh\n([\s\S]*?)```/.exec(readme)![1]!;
    const link = install.split('\n').find((l) => l.startsWith('mkdir -p ~/.local/bin'))!.replace(/\s+#.*$/, '');
    const quick = /## Quick start[\s\S]*?```sh\n(.*)\n```/.exec(readme)![1]!;
    const user = join(tmp.path, 'newcomer');
    const project = join(tmp.path, 'project');
    mkdirSync(user);
    mkdirSync(project);
    const linked = await execa('bash', ['-c', link], { reject: false, cwd: REPO, env: { HOME: user, PATH: process.env.PATH } });
    expect(linked.exitCode).toBe(0);
    // Its own TMPDIR, to see that the quick start leaves nothing behind.
    const scratch = join(tmp.path, 'quickstart-tmp');
    mkdirSync(scratch);
    const r = await execa('bash', ['-c', quick], {
      reject: false, cwd: project, env: { HOME: user, PATH: `${join(user, '.local', 'bin')}:${process.env.PATH}`, TMPDIR: scratch },
    });
    expect(readdirSync(scratch)).toEqual([]);
    expect(readdirSync(project)).toEqual([]);
    expect(r.stdout).toContain('in the sandbox');
    expect(r.stdout).toContain('home is read-only');
    expect(r.stdout).toContain('network only through the proxy');
    expect(r.stderr).not.toMatch(/warning/);
  });
});

describe('honest messages', () => {
  it('a nested srt says it does not nest (exit 125)', async () => {
    const r = await srt(['--', process.execPath, SRT_BIN, '--', 'true'], { home, cwd });
    expect(r.exitCode).toBe(125);
    expect(r.stderr).toBe('srt: already inside an srt sandbox (SRT_SANDBOX=1): srt does not nest; run the command directly, it is sandboxed already');
  });

  it('after a refusal srt says how to allow each host, next to its blocked line', async () => {
    const r = await srt(['-c', "curl -s -o /dev/null --max-time 10 http://127.0.0.3:9/ ; curl -s -o /dev/null --max-time 10 http://127.0.0.4:80/; true"], { home, cwd });
    const lines = r.stderr.split('\n');
    const at = lines.indexOf('srt: blocked 127.0.0.3:9 — not in network.allowedDomains');
    expect(at).toBeGreaterThanOrEqual(0);
    expect(lines[at + 1]).toBe('srt: to allow 127.0.0.3:9: run with --allow-domain 127.0.0.3:9, or add "127.0.0.3:9" to network.allowedDomains in ~/.srt/settings.json');
    const at80 = lines.indexOf('srt: blocked 127.0.0.4:80 — not in network.allowedDomains');
    expect(lines[at80 + 1]).toBe('srt: to allow 127.0.0.4:80: run with --allow-domain 127.0.0.4:80, or add "127.0.0.4:80" to network.allowedDomains in ~/.srt/settings.json');
  });

  it('a host listed in an unapproved repository file gets srt trust as its hint', async () => {
    const repo = join(tmp.path, 'unapproved');
    mkdirSync(join(repo, '.srt'), { recursive: true });
    await execa('git', ['init', '-q', repo]);
    const file = join(repo, '.srt', 'settings.json');
    writeFileSync(file, JSON.stringify({ network: { allowedDomains: ['*.example.test'] } }));
    const r = await srt(['-c', 'curl -s -o /dev/null --max-time 10 http://pkg.example.test/; true'], { home, cwd: repo });
    const lines = r.stderr.split('\n');
    const at = lines.indexOf('srt: blocked pkg.example.test:80 — not in network.allowedDomains');
    expect(at).toBeGreaterThanOrEqual(0);
    expect(lines[at + 1]).toBe(`srt: to allow pkg.example.test:80: it is listed in ${file}, which you have not approved: srt trust ${file}`);
  });

  it('strictAllowlist: false on the command line warns that it changes nothing', async () => {
    const f = join(tmp.path, 'loose.json');
    writeFileSync(f, JSON.stringify({ network: { strictAllowlist: false } }));
    const r = await srt(['-s', f, '--', 'true'], { home, cwd });
    expect(r.stderr).toContain('network.strictAllowlist: false has no effect on the command line');
  });
});

describe('clients that ignore the proxy variables', () => {
  it('git:// goes through the proxy (GIT_PROXY_COMMAND), and so does plain ssh with $GIT_SSH_COMMAND', async () => {
    const script = 'git ls-remote git://git.example.invalid:9418/x >/dev/null 2>&1; eval "$GIT_SSH_COMMAND -o BatchMode=yes -p 2222 ssh.example.invalid true" >/dev/null 2>&1; true';
    const r = await srt(['-c', script], { home, cwd });
    // Refused by srt's proxy (reported), not by DNS inside the sandbox: the clients used it.
    expect(r.stderr).toContain('srt: blocked git.example.invalid:9418 — not in network.allowedDomains');
    expect(r.stderr).toContain('srt: blocked ssh.example.invalid:2222 — not in network.allowedDomains');
  });
});

describe('git', () => {
  it('started in a repository subdirectory: a warning that commits fail, with the remedy', async () => {
    const repo = join(tmp.path, 'gitrepo');
    mkdirSync(join(repo, 'sub'), { recursive: true });
    await execa('git', ['init', '-q', repo]);
    const r = await srt(['--', 'true'], { home, cwd: join(repo, 'sub') });
    expect(r.stderr).toContain(`srt: warning: the repository's .git (${join(repo, '.git')}) is outside the writable paths, so git commits fail inside; run srt from ${repo}, or add it to filesystem.allowWrite`);
    expect((await srt(['--', 'true'], { home, cwd: repo })).stderr).not.toContain('outside the writable paths');
  });

  // `mkdir proj && cd proj && srt -- git init` was refused: a new project could not be started inside.
  it('git init, add and commit in a new project directory work; the new repository is reviewed when the run ends', async () => {
    const proj = join(tmp.path, 'proj');
    mkdirSync(proj);
    writeFileSync(join(proj, 'main.c'), 'int main(void) { return 0; }\n');
    const pwned = join(tmp.path, 'init-PWNED');
    const r = await srt(['-c', `git init -q && git add . && git -c user.email=e@x -c user.name=n commit -qm first && git config core.fsmonitor "touch ${pwned}; false" && mkdir sub && git init -q sub && echo ok`],
      { home, cwd: proj });
    expect(r.stdout, r.stderr).toBe('ok');
    expect(r.stderr).toContain('srt: disabled core.fsmonitor in .git, a repository created inside the sandbox (git would run them); review, then restore with: mv .git/config.srt-disabled .git/config');
    const log = await execa('git', ['log', '--format=%s', '--name-only'], { cwd: proj, env: { HOME: home, PATH: process.env.PATH, GIT_CONFIG_NOSYSTEM: '1' } });
    expect(log.stdout.split('\n').filter(Boolean)).toEqual(['first', 'main.c']);
    await execa('git', ['status'], { cwd: proj, env: { HOME: home, PATH: process.env.PATH, GIT_CONFIG_NOSYSTEM: '1' } });
    expect(existsSync(pwned)).toBe(false);
  });
});

describe('a working directory you cannot write', () => {
  it('runs, read-only inside, and leaves nothing behind', async () => {
    const ro = join(tmp.path, 'readonly');
    mkdirSync(ro);
    writeFileSync(join(ro, 'file'), 'data\n');
    chmodSync(ro, 0o555);
    const r = await srt(['-c', 'cat file; if touch new 2>/dev/null; then echo wrote; else echo read-only; fi'], { home, cwd: ro });
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toBe('data\nread-only');
    expect(readdirSync(ro)).toEqual(['file']);
  });
});

describe('--log FILE', () => {
  it('one JSON line per decision, per finished connection (bytes) and per refused protected write; nothing else changes', async () => {
    const http = await import('node:http');
    const server = http.createServer((_q, s) => s.end('x'.repeat(1000)));
    const port = await new Promise<number>((r) => server.listen(0, '127.0.0.2', () => r((server.address() as { port: number }).port)));
    try {
      const repo = join(tmp.path, 'logged');
      mkdirSync(repo);
      await execa('git', ['init', '-q', repo]);
      const log = join(tmp.path, 'audit.jsonl');
      const script = `curl -s -o /dev/null http://127.0.0.2:${port}/; curl -s -o /dev/null http://127.0.0.3/; touch .git/hooks/pre-commit 2>/dev/null; true`;
      const r = await srt(['--log', log, '--allow-domain', `127.0.0.2:${port}`, '-c', script], { home, cwd: repo });
      const events = readFileSync(log, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
      for (const e of events) expect(Date.parse(String(e.time))).not.toBeNaN();
      expect(events).toEqual(expect.arrayContaining([
        expect.objectContaining({ kind: 'network', client: 'http', target: `127.0.0.2:${port}`, verdict: 'allow', rule: `127.0.0.2:${port}`, source: { scope: 'cli', flag: '--allow-domain' } }),
        expect.objectContaining({ kind: 'connection', target: `127.0.0.2:${port}`, bytesDown: expect.any(Number) }),
        expect.objectContaining({ kind: 'network', target: '127.0.0.3:80', verdict: 'deny', reason: 'not in network.allowedDomains' }),
        expect.objectContaining({ kind: 'write', verdict: 'refused', op: 'create', path: join(repo, '.git/hooks/pre-commit'), rule: 'protected' }),
      ]));
      expect((events.find((e) => e.kind === 'connection') as { bytesDown: number }).bytesDown).toBeGreaterThan(1000);
      // Without --log srt says exactly the same.
      const plain = await srt(['--allow-domain', `127.0.0.2:${port}`, '-c', script], { home, cwd: repo });
      expect(plain.stderr).toBe(r.stderr);
      // A log the command could write is warned about.
      const inside = await srt(['--log', join(repo, 'audit.jsonl'), '--', 'true'], { home, cwd: repo });
      expect(inside.stderr).toContain('is inside a path the command may write');
      // So is one reached through a symlink into a writable path; not one outside them all.
      symlinkSync(repo, join(home, 'repo-link'));
      const linked = await srt(['--log', join(home, 'repo-link', 'audit.jsonl'), '--', 'true'], { home, cwd: repo });
      expect(linked.stderr).toContain('is inside a path the command may write');
      const outside = await srt(['--log', join(home, 'audit.jsonl'), '--', 'true'], { home, cwd: repo });
      expect(outside.stderr).not.toContain('is inside a path the command may write');
    } finally {
      server.close();
    }
  });
});

describe('the library', () => {
  /** An embedding program: in a directory of its own, it imports srt's library, loads the policy of
   *  `cwd` (its directory unless given) with the test's home, runs `body`, and is run there. */
  async function embedder(name: string, body: string[], opts: { cwd?: string; prelude?: string[] } = {}) {
    const dir = join(tmp.path, name);
    mkdirSync(dir);
    const at = opts.cwd ?? dir;
    const script = join(dir, 'agent.mjs');
    writeFileSync(script, [
      `import { loadPolicy, Sandbox } from ${JSON.stringify(join(REPO, 'dist', 'index.js'))};`,
      ...(opts.prelude ?? []),
      `const policy = loadPolicy({ cwd: ${JSON.stringify(at)}, home: ${JSON.stringify(home)} });`,
      ...body,
    ].join('\n'));
    const r = await execa(process.execPath, [script], { reject: false, cwd: at, env: { HOME: home, PATH: process.env.PATH } });
    return { dir, script, r };
  }

  it('an embedding program is not taken for srt itself (no "srt is installed inside" warning naming it)', async () => {
    const { script, r } = await embedder('embedder', [
      'const sandbox = await Sandbox.create({ policy });',
      "try { process.exitCode = await sandbox.run({ argv: ['true'] }); } finally { await sandbox.dispose(); }",
    ]);
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.stderr).not.toContain(script);
  });

  it('prints nothing of its own: srt\'s lines go to the onMessage sink, or are kept for messages()', async () => {
    // cwd = home: srt warns that the whole home directory is writable.
    const { r } = await embedder('quiet-embedder', [
      'const kept = await Sandbox.create({ policy });',
      "try { await kept.run({ argv: ['true'] }); } finally { await kept.dispose(); }",
      "console.log('kept=' + JSON.stringify(kept.messages()));",
      'const seen = [];',
      'const sunk = await Sandbox.create({ policy, onMessage: (l) => seen.push(l) });',
      "try { await sunk.run({ argv: ['true'] }); } finally { await sunk.dispose(); }",
      "console.log('sunk=' + JSON.stringify(seen) + ' left=' + sunk.messages().length);",
    ], { cwd: home });
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.stderr).not.toMatch(/srt/);
    const kept = JSON.parse(/^kept=(.*)$/m.exec(r.stdout)![1]!) as string[];
    expect(kept.some((l) => l.startsWith('srt: warning: the whole home directory'))).toBe(true);
    expect(r.stdout).toMatch(/^sunk=\[.*srt: warning: the whole home directory.*\] left=0$/m);
  });

  it('a second run() while one is under way is refused at once, even before the first command starts (no two runs share the run directory)', async () => {
    const { dir, r } = await embedder('overlapping-runs', [
      'const sandbox = await Sandbox.create({ policy });',
      // After a first command: the next one's gathering reuses the search, and was overtaken.
      "await sandbox.run({ argv: ['true'] });",
      "const first = sandbox.run({ shell: 'echo first >> order' });",
      "const second = await sandbox.run({ shell: 'echo second >> order' }).then((c) => `ran ${c}`, (e) => `refused: ${e.message}`);",
      "console.log(`first=${await first} second=${second}`);",
      "console.log(`third=${await sandbox.run({ shell: 'echo third >> order' })}`);",
      'await sandbox.dispose();',
    ]);
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.stdout).toContain('first=0 second=refused: a Sandbox runs one command at a time');
    expect(r.stdout).toContain('third=0');
    expect(readFileSync(join(dir, 'order'), 'utf8')).toBe('first\nthird\n');
  });

  it('updateNetwork replaces the network policy for the later commands of the sandbox too, until the next call', async () => {
    const server = createServer((_req, res) => res.end('hello from the host\n'));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as AddressInfo).port;
    try {
      const get = { shell: `echo "got $(curl -s -o /dev/null -w '%{http_code}' http://localhost:${port}/)"` };
      const { r } = await embedder('update-network', [
        `const widened = loadPolicy({ cwd: process.cwd(), home: ${JSON.stringify(home)}, flags: { allowDomain: ['localhost:${port}'] } });`,
        'const sandbox = await Sandbox.create({ policy });',
        `const get = ${JSON.stringify(get)};`,
        'await sandbox.run(get);',
        'sandbox.updateNetwork(widened.network);',
        'await sandbox.run(get);',
        'await sandbox.run(get);',
        'sandbox.updateNetwork(policy.network);',
        'await sandbox.run(get);',
        // The sandbox holds copies: the caller's objects changed afterwards change nothing inside.
        'widened.network.allowedDomains.length = 0;',
        'sandbox.updateNetwork(widened.network);',
        "widened.network.allowedDomains.push(...load({ cwd: process.cwd(), home: " + JSON.stringify(home) + ", flags: { allowDomain: ['localhost:" + port + "'] } }).network.allowedDomains);",
        'await sandbox.run(get);',
        'await sandbox.dispose();',
      ], { prelude: [`import { loadPolicy as load } from ${JSON.stringify(join(REPO, 'dist', 'index.js'))};`] });
      expect(r.exitCode, r.stderr).toBe(0);
      // Unreachable (no such port inside), then forwarded for two commands in a row, then
      // unreachable again: the second call restores the policy given to create, which the first
      // did not change.
      expect(r.stdout.split('\n').filter((l) => l.startsWith('got '))).toEqual(['got 000', 'got 200', 'got 200', 'got 000', 'got 000']);
    } finally {
      server.close();
    }
  });

  it('an embedding program runs two commands in one sandbox, handles its own SIGINT, and sees nothing on its stderr', async () => {
    const { r } = await embedder('embedder-signals', [
      'const sandbox = await Sandbox.create({ policy });',
      "const plan = sandbox.prepare({ argv: ['true'] });",
      "const first = await sandbox.run({ shell: 'echo first > out1' });",
      'const between = handlers();',
      "const second = await sandbox.run({ shell: 'cat out1; exit 3' });",
      'const after = handlers();',
      // Its own SIGINT, outside any run: its handler runs, the process lives on.
      "process.kill(process.pid, 'SIGINT');",
      'await new Promise((r) => setTimeout(r, 200));',
      'await sandbox.dispose();',
      "console.log(JSON.stringify({ first, second, interrupted, before, between, after, runDir: plan.runDir, messages: sandbox.messages().length }));",
    ], { prelude: [
      "const handlers = () => ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGQUIT', 'exit'].map((s) => process.listenerCount(s)).join(',');",
      'let interrupted = 0;',
      "process.on('SIGINT', () => { interrupted++; });",
      'const before = handlers();',
    ] });
    expect(r.stderr).toBe('');
    expect(r.exitCode).toBe(0);
    const lines = r.stdout.trim().split('\n');
    expect(lines[0]).toBe('first');
    const out = JSON.parse(lines[1]!) as { first: number; second: number; interrupted: number; before: string; between: string; after: string; runDir: string };
    expect(out).toMatchObject({ first: 0, second: 3, interrupted: 1 });
    // No handler of srt's outlives a run: before, between and after the runs, only its own.
    expect(out.between).toBe(out.before);
    expect(out.after).toBe(out.before);
    // The sandbox's run directory (its commands share it) is gone after dispose, and none is left.
    expect(existsSync(out.runDir)).toBe(false);
    expect(readdirSync(join(home, '.srt', 'run'))).toEqual([]);
  });
});
