// The README's recipes that need no internet, run as the README writes them (settings snippet and
// command taken from the README itself): an agent's shell sees none of the secrets it hides, a
// masked GitHub token and masked AWS keys reach the command only as sentinels. Every recipe's
// snippet is also validated against the schema (test/unit/schema.test.ts reads every block).
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { REPO, scratchDirs, srt, tempDir } from './helpers.js';

const tmp = tempDir('srt-e2e-recipes-');
afterAll(() => tmp.cleanup());
const readme = readFileSync(join(REPO, 'README.md'), 'utf8');

/** The settings snippet and the first command of the README recipe whose title starts so. */
function recipe(title: string): { settings: string; command: string } {
  const at = readme.indexOf(`**${title}`);
  expect(at).toBeGreaterThan(-1);
  const rest = readme.slice(at);
  return {
    settings: /```json\n([\s\S]*?)```/.exec(rest)![1]!,
    command: /```sh\n(.*?)(?:\s+#.*)?\n/.exec(rest)![1]!,
  };
}

const scratch = scratchDirs(() => tmp.path);
/** A fresh home, with ~/.srt for the recipe's settings, and project. */
function fresh(): { home: string; cwd: string } {
  const dirs = scratch();
  mkdirSync(join(dirs.home, '.srt'));
  return dirs;
}

describe('README recipes', () => {
  it("an AI agent's shell: the keys, cloud files and tokens it lists are out of reach", async () => {
    const { settings, command } = recipe("An AI agent's shell");
    expect(command).toBe('srt -s ~/.srt/agent.json -- bash -i');
    const { home, cwd } = fresh();
    writeFileSync(join(home, '.srt', 'agent.json'), settings);
    mkdirSync(join(home, '.ssh'));
    writeFileSync(join(home, '.ssh', 'id_ed25519'), 'PRIVATE KEY\n');
    mkdirSync(join(home, '.aws'));
    writeFileSync(join(home, '.aws', 'credentials'), '[default]\naws_secret_access_key = s3cr3t\n');
    const probe = 'cat ~/.ssh/id_ed25519 ~/.aws/credentials 2>/dev/null; echo "gh=${GH_TOKEN-unset} aws=${AWS_SECRET_ACCESS_KEY-unset}"';
    const r = await srt(['-s', join(home, '.srt', 'agent.json'), '--', 'bash', '-c', probe], {
      home, cwd, env: { GH_TOKEN: 'ghp_realrealrealrealrealrealrealrealreal', AWS_SECRET_ACCESS_KEY: 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY' },
    });
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toBe('gh=unset aws=unset');
  });

  it('a masked GitHub token: the command holds a sentinel of the same shape', async () => {
    const { settings, command } = recipe('A masked GitHub token');
    expect(command).toBe('srt -- gh api user');
    const { home, cwd } = fresh();
    writeFileSync(join(home, '.srt', 'settings.json'), settings);
    const real = `ghp_${'a1B2c3D4e5'.repeat(3)}${'Zz9Yy8'}`;
    const r = await srt(['-c', 'echo "$GH_TOKEN"'], { home, cwd, env: { GH_TOKEN: real } });
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toMatch(/^ghp_[A-Za-z0-9]{36}$/);
    expect(r.stdout).not.toBe(real);
  });

  it('AWS: the command holds sentinels for the key id, the secret and the session token', async () => {
    const { settings, command } = recipe('AWS');
    expect(command).toBe('srt -- aws s3 ls');
    const { home, cwd } = fresh();
    writeFileSync(join(home, '.srt', 'settings.json'), settings);
    const real = { AWS_ACCESS_KEY_ID: 'AKIAIOSFODNN7EXAMPLE', AWS_SECRET_ACCESS_KEY: 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY', AWS_SESSION_TOKEN: 'IQoJb3JpZ2luX2VjEXAMPLETOKENvalue0123456789abcdef' };
    const r = await srt(['-c', 'echo "$AWS_ACCESS_KEY_ID $AWS_SECRET_ACCESS_KEY $AWS_SESSION_TOKEN"'], { home, cwd, env: real });
    expect(r.exitCode).toBe(0);
    const [id, secret, token] = r.stdout.split(' ');
    expect(id).toMatch(/^AKIA[A-Z2-7]{16}$/);
    expect(secret).toHaveLength(40);
    expect(token).toHaveLength(real.AWS_SESSION_TOKEN.length);
    for (const v of Object.values(real)) expect(r.stdout).not.toContain(v);
  });
});
