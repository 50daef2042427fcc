// The administrator's example (examples/managed/, docs/settings.md "Managed settings"): installed as the
// fixed /etc/srt, it holds against a hostile user file and a hostile (even approved) repository.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import http from 'node:http';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeServer, listenOn } from './proxy-fixtures.js';
import { attempt, keyValues, REPO, results, srt, srtManaged, tempDir, writeTree } from './helpers.js';

const MANAGED = join(REPO, 'examples', 'managed');
const tmp = tempDir('srt-e2e-managed-');
let server: http.Server;
let port = 0;
let hits = 0;
beforeAll(async () => {
  server = http.createServer((_q, s) => { hits++; s.end('reached'); });
  port = await listenOn(server, '127.0.0.2');
});
afterAll(async () => {
  await closeServer(server);
  tmp.cleanup();
});

describe('examples/managed as /etc/srt', () => {
  it('srt config shows the weakening entries ignored; a run proves the allowlist, the read denies and the credential denies hold', async () => {
    const home = join(tmp.path, 'home');
    const repo = join(tmp.path, 'repo');
    mkdirSync(repo, { recursive: true });
    execFileSync('git', ['init', '-q', repo]);
    writeTree(home, {
      '.ssh/id_ed25519': 'PRIVATE-KEY\n',
      '.netrc': 'machine x login y password NETRC-SECRET\n',
      '.srt/settings.json': JSON.stringify({
        network: { allowedDomains: ['evil.example', `127.0.0.2:${port}`] },
        filesystem: { allowRead: ['~/.ssh'], disabled: true },
      }),
    });
    writeTree(repo, { '.srt/settings.json': JSON.stringify({ network: { allowedDomains: ['exfil.example'], strictAllowlist: false }, filesystem: { allowWrite: ['build'] } }) });
    expect((await srt(['trust'], { home, cwd: repo })).exitCode).toBe(0); // even approved

    const run = (args: string[]) => srtManaged(MANAGED, args, { home, cwd: repo, scratch: tmp.path, env: { GITHUB_TOKEN: 'ghp_REALTOKEN' } });
    const config = JSON.parse((await run(['config', '--json'])).stdout);
    expect(config.files.map((f: { path: string }) => f.path)).toEqual(expect.arrayContaining(['/etc/srt/managed-settings.json', '/etc/srt/managed-settings.d/50-credentials.yaml']));
    const ignored = config.ignored.map((i: { key: string; source: { scope: string } }) => `${i.source.scope} ${i.key}`);
    expect(ignored).toEqual(expect.arrayContaining([
      'user network.allowedDomains', 'user filesystem.allowRead', 'user filesystem.disabled',
      'project network.allowedDomains', 'project network.strictAllowlist',
    ]));
    expect(config.settings.network.allowedDomains.every((d: { source: { scope: string } }) => d.source.scope === 'managed')).toBe(true);
    expect(config.settings.filesystem.disabled.value).toBe(false);

    const before = hits;
    const r = await run(['-c', [
      `echo loop=$(curl -s --max-time 10 -o /dev/null -w '%{http_code}' http://127.0.0.2:${port}/)`,
      `echo evil=$(curl -s --max-time 10 -o /dev/null -w '%{http_code}' http://evil.example/)`,
      attempt('key', 'cat ~/.ssh/id_ed25519'),
      attempt('netrc', 'cat ~/.netrc'),
      'echo token=${GITHUB_TOKEN-unset}',
    ].join('\n')]);
    expect(keyValues(r.stdout)).toMatchObject({ loop: '403', evil: '403', token: 'unset' });
    expect(results(r.stdout)).toEqual({ key: 'no', netrc: 'no' });
    expect(r.stdout).not.toMatch(/PRIVATE-KEY|NETRC-SECRET/);
    expect(hits).toBe(before);
    expect(existsSync(join(repo, 'build'))).toBe(false);

    const doctor = JSON.parse((await run(['doctor', '--json'])).stdout);
    const check = doctor.checks.find((c: { id: string }) => c.id === 'settings.ignored');
    expect(check.status).toBe('warn');
  });
});
