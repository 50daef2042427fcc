// `srt check read|write PATH` and `srt check net HOST[:PORT]`: the verdict of the policy a run
// uses, the deciding entry with its file and line, the landing; exit 0 allowed, 1 refused, 125 bad input.
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterAll, describe, expect, it } from 'vitest';
import { srt, tempDir } from './helpers.js';

const tmp = tempDir('srt-e2e-check-');
afterAll(() => tmp.cleanup());
const home = join(tmp.path, 'home');
const cwd = join(tmp.path, 'repo');
mkdirSync(join(home, '.srt'), { recursive: true });
mkdirSync(join(cwd, '.srt'), { recursive: true });
mkdirSync(join(tmp.path, 'outside'));
await execa('git', ['init', '-q', cwd]);
const project = join(cwd, '.srt', 'settings.json');
writeFileSync(project, '{\n  "filesystem": {\n    "denyWrite": [".env"],\n    "denyRead": ["secrets"]\n  },\n  "network": {\n    "deniedDomains": ["evil.example"]\n  }\n}\n');
const user = join(home, '.srt', 'settings.yaml');
writeFileSync(user, '# mine\nnetwork:\n  allowedDomains:\n    - github.com\n');
symlinkSync(join(tmp.path, 'outside'), join(cwd, 'out-link'));

const check = (args: string[]) => srt(['check', ...args], { home, cwd });

describe('srt check', () => {
  it('write: a denyWrite entry refuses, named with its file and line (exit 1); the current directory allows (exit 0)', async () => {
    const refused = await check(['write', '.env']);
    expect(refused.exitCode).toBe(1);
    expect(refused.stdout).toContain(`write ${join(cwd, '.env')}: refused`);
    expect(refused.stdout).toContain(`entry: filesystem.denyWrite[0] ".env" in ${project}:3 (project)`);
    const allowed = await check(['write', 'src/a.ts']);
    expect(allowed.exitCode).toBe(0);
    expect(allowed.stdout).toContain(`why: inside the current directory ${cwd}`);
  });

  it('write: judged where it lands; outside every writable path it says what would allow it', async () => {
    const r = await check(['write', 'out-link/f', '--json']);
    expect(r.exitCode).toBe(1);
    const v = JSON.parse(r.stdout);
    expect(v).toMatchObject({ version: 1, kind: 'write', allowed: false, landing: { path: join(tmp.path, 'outside', 'f'), exists: false } });
    expect(v.advice).toContain(`--allow-write ${join(tmp.path, 'outside', 'f')}`);
  });

  it('write: a protected path is refused as protected', async () => {
    const r = await check(['write', '.git/hooks/pre-commit']);
    expect(r.exitCode).toBe(1);
    expect(r.stdout).toMatch(/why: write-denied by protected \.git\/hooks/);
  });

  it('read: a denyRead entry hides, named with its line', async () => {
    const r = await check(['read', 'secrets/key']);
    expect(r.exitCode).toBe(1);
    expect(r.stdout).toContain(`entry: filesystem.denyRead[0] "secrets" in ${project}:4 (project)`);
    expect((await check(['read', '/etc/hostname'])).exitCode).toBe(0);
  });

  it('net: allowed by a YAML entry (its line), refused by a deny (its line), unlisted with the fix; --with shows the preset', async () => {
    const ok = await check(['net', 'github.com']);
    expect(ok.exitCode).toBe(0);
    expect(ok.stdout).toContain(`entry: network.allowedDomains[0] "github.com" in ${user}:4 (user)`);
    const denied = await check(['net', 'evil.example:443', '--json']);
    expect(JSON.parse(denied.stdout)).toMatchObject({ allowed: false, rule: { entry: 'evil.example', key: 'network.deniedDomains[0]', line: 7, source: { scope: 'project', file: project } } });
    const unlisted = await check(['net', 'registry.npmjs.org']);
    expect(unlisted.exitCode).toBe(1);
    expect(unlisted.stdout).toContain('to allow: run with --allow-domain registry.npmjs.org, or add "registry.npmjs.org" to network.allowedDomains in ~/.srt/settings.json');
    const preset = await srt(['--with', 'npm', 'check', 'net', 'registry.npmjs.org'], { home, cwd });
    expect(preset.exitCode).toBe(0);
    expect(preset.stdout).toContain('entry: "registry.npmjs.org" in preset npm (cli --with)');
  });

  it('bad input is exit 125 with one line', async () => {
    for (const args of [['bogus', 'x'], ['net', 'a b'], ['net', 'host:99999']]) {
      const r = await check(args);
      expect(r.exitCode, args.join(' ')).toBe(125);
      expect(r.stderr).toMatch(/^srt: check/);
    }
  });
});
