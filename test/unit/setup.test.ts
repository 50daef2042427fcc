// scripts/setup.sh installs only what srt needs, after checking for Node 20 first; the clients
// the tests run are scripts/test-deps.sh's, which npm test runs. Each script runs here from a
// scratch copy with stand-ins for node, npm and apt-get that record how they were called.
import { chmodSync, copyFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterAll, describe, expect, it } from 'vitest';
import { REPO, tempDir } from '../e2e/helpers.js';

const tmp = tempDir('srt-unit-setup-');
afterAll(() => tmp.cleanup());

const TEST_CLIENTS = ['openjdk-17-jdk-headless', 'awscli', 'python3-boto3', 'python3-requests', 'python3-pip'];

function packages(script: string): string[] {
  return /^packages=\(([^)]*)\)/m.exec(readFileSync(join(REPO, 'scripts', script), 'utf8'))![1]!.split(/\s+/).filter(Boolean);
}

/** setup.sh run from a scratch checkout with a node of the given major version. */
async function setup(name: string, nodeMajor: number) {
  const root = join(tmp.path, name);
  const bin = join(root, 'fakebin');
  mkdirSync(join(root, 'scripts'), { recursive: true });
  mkdirSync(bin);
  copyFileSync(join(REPO, 'scripts', 'setup.sh'), join(root, 'scripts', 'setup.sh'));
  const log = join(root, 'calls');
  const fake = (tool: string, body: string) => {
    writeFileSync(join(bin, tool), `#!/bin/sh\necho "${tool} $*" >> '${log}'\n${body}\n`);
    chmodSync(join(bin, tool), 0o755);
  };
  fake('node', `[ "$1" = --version ] && echo v${nodeMajor}.0.0 && exit 0\n[ ${nodeMajor} -ge 20 ]`);
  fake('npm', 'exit 0');
  fake('apt-get', 'exit 0');
  const r = await execa('bash', [join(root, 'scripts', 'setup.sh')], { reject: false, env: { PATH: `${bin}:${process.env.PATH}` } });
  const calls = existsSync(log) ? readFileSync(log, 'utf8').trim().split('\n') : [];
  return { ...r, calls };
}

describe('scripts/setup.sh', () => {
  it('names no client only the tests use; scripts/test-deps.sh does', () => {
    expect(packages('setup.sh').filter((p) => TEST_CLIENTS.includes(p))).toEqual([]);
    expect(packages('test-deps.sh')).toEqual(expect.arrayContaining(TEST_CLIENTS));
    expect(readFileSync(join(REPO, 'scripts', 'test.sh'), 'utf8')).toContain('bash scripts/test-deps.sh');
  });

  it('without Node 20 says so in one line and installs nothing', async () => {
    const r = await setup('node18', 18);
    expect(r.exitCode).toBe(1);
    expect(r.stderr).toBe('setup: srt needs Node 20 or later and npm (found: v18.0.0); get them from https://nodejs.org/ (Debian 12 and Ubuntu 24.04 ship Node 18), then run this again');
    expect(r.calls.filter((c) => !c.startsWith('node '))).toEqual([]);
  });

  it('with Node 20 installs what srt needs (as root), then npm ci and the build', async () => {
    const r = await setup('node20', 20);
    expect(r.stderr).toBe('');
    expect(r.exitCode).toBe(0);
    const apt = r.calls.filter((c) => c.startsWith('apt-get install'));
    if (process.getuid?.() === 0) {
      expect(apt).toHaveLength(1);
      expect(apt[0]).toContain('bubblewrap ripgrep gcc libc6-dev');
      for (const p of TEST_CLIENTS) expect(apt[0]).not.toContain(p);
    } else {
      expect(apt).toEqual([]);
    }
    expect(r.calls.filter((c) => c.startsWith('npm '))).toEqual(['npm ci --no-audit --no-fund', 'npm run build']);
  });
});
