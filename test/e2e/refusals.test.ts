// Refusals you can act on (SPEC §1): what the sandbox refused is reported when the command ends,
// grouped, with the entry that would allow it and the file to put it in — and that entry, once
// added, does allow it. Deny entries are named with their file and line; protected places are
// never offered; refusals the file's own permissions make are not srt's and are not reported.
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterAll, describe, expect, it } from 'vitest';
import { scratchDirs, srt, tempDir } from './helpers.js';

const tmp = tempDir('srt-e2e-refusals-');
afterAll(() => tmp.cleanup());
const fresh = scratchDirs(() => tmp.path);

function userSettings(home: string, settings: unknown): void {
  mkdirSync(join(home, '.srt'), { recursive: true });
  writeFileSync(join(home, '.srt', 'settings.json'), `${JSON.stringify(settings, null, 2)}\n`);
}

const srtLines = (stderr: string) => stderr.split('\n').filter((l) => l.startsWith('srt: '));

describe('writes to a read-only place', () => {
  it('are counted under the directory an allowWrite entry would name, and that entry allows them', async () => {
    const { home, cwd } = fresh();
    mkdirSync(join(home, '.toolx'));
    const cmd = 'mkdir -p ~/.toolx/cache/a && echo x > ~/.toolx/cache/a/f; echo x > ~/.toolx/g; test -f ~/.toolx/g && echo wrote';
    const r = await srt(['-c', cmd], { home, cwd });
    expect(r.stdout).toBe('');
    expect(srtLines(r.stderr)).toEqual([
      'srt: refused 2 writes under ~/.toolx (read-only): to allow, add "~/.toolx" to filesystem.allowWrite in ~/.srt/settings.json',
    ]);
    userSettings(home, { filesystem: { allowWrite: ['~/.toolx'] } });
    const again = await srt(['-c', cmd], { home, cwd });
    expect(again.stdout).toBe('wrote');
    expect(again.stderr).not.toContain('srt: refused');
  });

  it('a directory that does not exist: mkdir -p first, then the entry', async () => {
    const { home, cwd } = fresh();
    const cmd = 'mkdir -p ~/.toolm/data && echo x > ~/.toolm/data/f && echo wrote';
    const r = await srt(['-c', cmd], { home, cwd });
    expect(srtLines(r.stderr)).toEqual([
      'srt: refused writing ~/.toolm (read-only): to allow, mkdir -p ~/.toolm and add "~/.toolm" to filesystem.allowWrite in ~/.srt/settings.json',
    ]);
    mkdirSync(join(home, '.toolm'));
    userSettings(home, { filesystem: { allowWrite: ['~/.toolm'] } });
    const again = await srt(['-c', cmd], { home, cwd });
    expect(again.stdout).toBe('wrote');
    expect(again.stderr).not.toContain('srt: refused');
  });

  it('a tool below ~/.cache gets its own directory, not ~/.cache; a preset cache names the preset', async () => {
    const { home, cwd } = fresh();
    mkdirSync(join(home, '.cache', 'toolc'), { recursive: true });
    mkdirSync(join(home, '.npm'));
    const r = await srt(['-c', 'touch ~/.cache/toolc/a ~/.cache/toolc/b ~/.npm/x; true'], { home, cwd });
    expect(srtLines(r.stderr)).toEqual([
      'srt: refused 2 writes under ~/.cache/toolc (read-only): to allow, add "~/.cache/toolc" to filesystem.allowWrite in ~/.srt/settings.json',
      'srt: refused 1 write under ~/.npm (read-only): to allow, run with --with npm or add "npm" to presets in ~/.srt/settings.json',
    ]);
  });

  it('a shared temporary directory outside the run\'s own TMPDIR (/var/tmp: the tests\' homes are below /tmp)', async () => {
    const { home, cwd, base } = fresh();
    const name = `srt-e2e-refusal-${process.pid}-${base.split('/').at(-1)}`;
    const r = await srt(['-c', `touch /var/tmp/${name}; true`], { home, cwd });
    expect(existsSync(`/var/tmp/${name}`)).toBe(false);
    expect(srtLines(r.stderr)).toEqual([
      'srt: refused 1 write under /var/tmp (read-only): to allow, add "/var/tmp" to filesystem.allowWrite in ~/.srt/settings.json',
    ]);
  });

  it('nothing that would make the home directory writable is offered (a home below /tmp, a write to /tmp)', async () => {
    const { cwd } = fresh();
    const home = realpathSync(mkdtempSync('/tmp/srt-e2e-refusals-home-'));
    try {
      const r = await srt(['-c', 'touch /tmp/srt-e2e-refusal-x; true'], { home, cwd });
      expect(srtLines(r.stderr)).toEqual([
        'srt: refused 1 write under /tmp (read-only): nothing srt offers allows it (it would make the home directory writable)',
      ]);
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });

  it('protected places, the home directory itself and system directories are never offered', async () => {
    const { home, cwd } = fresh();
    mkdirSync(join(home, '.ssh'));
    const r = await srt(['-c', 'touch ~/.ssh/config ~/.bashrc; mkdir -p ~/.local/bin/x ~/.config/git/y; touch /usr/srt-e2e-refusal; true'], { home, cwd });
    const lines = srtLines(r.stderr);
    expect(lines).toContain('srt: refused 1 write under ~/.ssh (read-only): nothing srt offers allows it (~/.ssh is protected)');
    expect(lines).toContain('srt: refused writing ~/.bashrc (read-only): nothing srt offers allows it (.bashrc is protected)');
    expect(lines).toContain('srt: refused writing ~/.local (read-only): nothing srt offers allows it (~/.local/bin is protected)');
    expect(lines).toContain('srt: refused writing ~/.config (read-only): nothing srt offers allows it (~/.config/git is protected)');
    expect(lines.join('\n')).not.toMatch(/to allow, .*(\.ssh|\.bashrc|\.local|\.config|"\/usr")/);
  });

  it('a refusal the file\'s own permissions make is not srt\'s: nothing is reported', async () => {
    const { home, cwd } = fresh();
    writeFileSync(join(cwd, 'ro.txt'), 'x');
    chmodSync(join(cwd, 'ro.txt'), 0o444);
    const r = await srt(['-c', 'echo y > ro.txt; true'], { home, cwd });
    expect(r.stderr).toMatch(/ro\.txt: Permission denied/);
    expect(r.stderr).not.toContain('srt: refused');
  });
});

describe('deny entries', () => {
  it('are named with their file and line, in the end report and in --log', async () => {
    const { home, cwd, base } = fresh();
    writeFileSync(join(cwd, '.env'), 'SECRET=1\n');
    mkdirSync(join(cwd, 'dist'));
    userSettings(home, { filesystem: { denyRead: [join(cwd, '.env')], denyWrite: [join(cwd, 'dist')] } });
    const log = join(base, 'log.jsonl');
    const r = await srt(['--log', log, '-c', 'cat .env; echo y > dist/a; mkdir dist/b; touch .bashrc; true'], { home, cwd });
    expect(srtLines(r.stderr)).toEqual([
      'srt: refused writing .bashrc (protected)',
      `srt: refused 2 writes under ${cwd}/dist (denyWrite "${cwd}/dist" in ~/.srt/settings.json:7)`,
      `srt: refused reading ${cwd}/.env (denyRead "${cwd}/.env" in ~/.srt/settings.json:4)`,
    ]);
    const records = readFileSync(log, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>)
      .filter((e) => e.kind === 'write' || e.kind === 'read');
    const file = join(home, '.srt', 'settings.json');
    expect(records.map(({ time: _t, ...e }) => e)).toEqual([
      { kind: 'write', verdict: 'refused', op: 'create', path: join(cwd, '.bashrc'), rule: 'protected' },
      { kind: 'write', verdict: 'refused', op: 'create', path: join(cwd, 'dist', 'a'), rule: 'denyWrite', entry: join(cwd, 'dist'), source: { scope: 'user', file } },
      { kind: 'write', verdict: 'refused', op: 'create', path: join(cwd, 'dist', 'b'), rule: 'denyWrite', entry: join(cwd, 'dist'), source: { scope: 'user', file } },
      { kind: 'read', verdict: 'refused', op: 'read', path: join(cwd, '.env'), rule: 'denyRead', entry: join(cwd, '.env'), source: { scope: 'user', file } },
    ]);
  });

  it('a read-only refusal in --log carries the entry that would allow it', async () => {
    const { home, cwd, base } = fresh();
    mkdirSync(join(home, '.toolx'));
    const log = join(base, 'log.jsonl');
    await srt(['--log', log, '-c', 'touch ~/.toolx/a; true'], { home, cwd });
    const records = readFileSync(log, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>).filter((e) => e.kind === 'write');
    expect(records.map(({ time: _t, ...e }) => e)).toEqual([
      { kind: 'write', verdict: 'refused', op: 'write', path: join(home, '.toolx', 'a'), rule: 'read-only', allow: join(home, '.toolx') },
    ]);
  });
});

describe('srt --suggest', () => {
  it('prints the smallest snippet that allows what was refused; with it (and its mkdir -p) the command runs', async () => {
    const { home, cwd, base } = fresh();
    mkdirSync(join(home, '.toolx'));
    mkdirSync(join(home, '.ssh'));
    mkdirSync(join(cwd, 'dist'));
    userSettings(home, { filesystem: { denyWrite: [join(cwd, 'dist')] } });
    const server = http.createServer((_q, res) => res.end('served'));
    const port = await new Promise<number>((r) => server.listen(0, '127.0.0.2', () => r((server.address() as { port: number }).port)));
    try {
      const cmd = `mkdir -p ~/.toolm/d; touch ~/.toolx/a ~/.toolm/d/b; curl -sf http://127.0.0.2:${port}/ && test -f ~/.toolm/d/b && test -f ~/.toolx/a && echo ok`;
      const refused = `touch ~/.ssh/x dist/x; ${cmd}`;
      const r = await srt(['--suggest', '-c', refused], { home, cwd });
      expect(r.stdout).toBe('');
      const at = r.stderr.indexOf('srt: --suggest: this would have allowed what was refused');
      expect(at).toBeGreaterThan(-1);
      const rest = r.stderr.slice(at).split('\n').slice(1);
      const json = rest.slice(rest.indexOf('{')).join('\n');
      expect(rest.slice(0, rest.indexOf('{'))).toEqual(['mkdir -p ~/.toolm']);
      const snippet = JSON.parse(json) as unknown;
      // Nothing for ~/.ssh (protected) or dist (a denyWrite entry stays).
      expect(snippet).toEqual({ network: { allowedDomains: [`127.0.0.2:${port}`] }, filesystem: { allowWrite: ['~/.toolm', '~/.toolx'] } });
      await execa('sh', ['-c', 'mkdir -p ~/.toolm'], { env: { HOME: home } });
      const file = join(base, 'suggested.json');
      writeFileSync(file, json);
      const again = await srt(['--settings', file, '--suggest', '-c', cmd], { home, cwd });
      expect(again.stdout).toBe('servedok');
      expect(srtLines(again.stderr)).toEqual(['srt: --suggest: nothing was refused that a settings entry of yours would allow']);
    } finally {
      server.close();
    }
  });
});
