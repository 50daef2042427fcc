// A new user's path with npm, verbatim from the documentation (the README's npm recipe and
// docs/trust.md's walkthrough), against the real npm registry (the one registry this machine
// reaches): `srt --with npm -- npm install left-pad` in a fresh project, the README's snippet and
// commands, and the `srt trust` → `srt -- npm ci` walkthrough. Runs as root and, in CI, again
// unprivileged.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO, scratchDirs, srt, tempDir } from './helpers.js';

const REGISTRY = 'https://registry.npmjs.org/left-pad';
const tmp = tempDir('srt-e2e-npm-');
afterAll(() => tmp.cleanup());

// npm retries for minutes when the registry does not answer: fail fast, saying why.
const npmEnv = { npm_config_fetch_retries: '1', npm_config_fetch_timeout: '30000', npm_config_update_notifier: 'false', npm_config_fund: 'false', npm_config_audit: 'false' };

// Asked with npm itself, so its configuration (a CA file in /etc/npmrc, say) is the tests' too.
beforeAll(async () => {
  const r = await execa('npm', ['view', 'left-pad@1.3.0', 'version', '--fetch-retries=0', '--fetch-timeout=20000'], { reject: false, timeout: 40_000, cwd: tmp.path });
  if (r.exitCode !== 0 || r.stdout.trim() !== '1.3.0') {
    throw new Error(`these tests need the npm registry, and ${REGISTRY} did not answer npm on this machine (${r.timedOut ? 'timed out' : (r.stderr.split('\n')[0] || `exit ${r.exitCode}`)}); nothing else is wrong`);
  }
}, 240_000);

/** A project whose package-lock.json pins left-pad 1.3.0, for npm ci. */
function leftPadProject(cwd: string): void {
  writeFileSync(join(cwd, 'package.json'), JSON.stringify({ name: 'app', version: '1.0.0', dependencies: { 'left-pad': '1.3.0' } }));
  writeFileSync(join(cwd, 'package-lock.json'), JSON.stringify({
    name: 'app', version: '1.0.0', lockfileVersion: 3, requires: true,
    packages: {
      '': { name: 'app', version: '1.0.0', dependencies: { 'left-pad': '1.3.0' } },
      'node_modules/left-pad': {
        version: '1.3.0', resolved: 'https://registry.npmjs.org/left-pad/-/left-pad-1.3.0.tgz',
        integrity: 'sha512-XI5MPzVNApjAyhQzphX8BkmKsKUxD4LdyK24iZeQGinBN9yTQT3bFlCBy/aVx2HrNcqQGsdot8ghrjyrvMCoEA==', license: 'WTFPL',
      },
    },
  }));
}

/** `srt ARGS` of a README command line, as a shell would split it (the README's are plain words). */
function argvOf(line: string): string[] {
  const words = line.trim().split(/\s+/);
  expect(words[0]).toBe('srt');
  expect(line).not.toMatch(/["'$\\`]/);
  return words.slice(1);
}

const fresh = scratchDirs(() => tmp.path);

describe('srt --with npm', () => {
  it('npm install left-pad works in a fresh project and a fresh home (the cache is made for it)', async () => {
    const { home, cwd } = fresh();
    const r = await srt(['--with', 'npm', '--', 'npm', 'install', 'left-pad'], { home, cwd, env: npmEnv, timeout: 180_000 });
    expect(r.stderr).not.toMatch(/srt: (warning|refused|blocked)/);
    expect(r.exitCode).toBe(0);
    expect(JSON.parse(readFileSync(join(cwd, 'node_modules', 'left-pad', 'package.json'), 'utf8')).name).toBe('left-pad');
    expect(existsSync(join(home, '.npm', '_cacache'))).toBe(true);
    // Nothing else of the home became writable, and npx's cache stays out of reach.
    const probe = await srt(['--with', 'npm', '-c', 'mkdir ~/.npm/_npx 2>/dev/null && echo npx-writable; touch ~/elsewhere 2>/dev/null && echo home-writable; echo done'], { home, cwd });
    expect(probe.stdout).toBe('done');
  });
});

describe('without the preset', () => {
  it('npm install fails on the read-only home, and srt says to run it with --with npm, which works', async () => {
    const { home, cwd } = fresh();
    const r = await srt(['--allow-domain', 'registry.npmjs.org', '--', 'npm', 'install', 'left-pad'], { home, cwd, env: npmEnv, timeout: 180_000 });
    expect(r.exitCode).not.toBe(0);
    const lines = r.stderr.split('\n').filter((l) => l.startsWith('srt: '));
    expect(lines).toEqual([expect.stringMatching(/^srt: refused (writing|\d+ writes under) ~\/\.npm \(read-only\): to allow, run with --with npm or add "npm" to presets in ~\/\.srt\/settings\.json$/)]);
    const again = await srt(['--with', 'npm', '--', 'npm', 'install', 'left-pad'], { home, cwd, env: npmEnv, timeout: 180_000 });
    expect(again.stderr).not.toMatch(/srt: (warning|refused|blocked)/);
    expect(again.exitCode).toBe(0);
  });
});

describe('the walkthrough of docs/trust.md: srt trust, then srt -- npm ci', () => {
  it('works verbatim once the user settings name the npm preset', async () => {
    const { home, cwd } = fresh();
    const page = readFileSync(join(REPO, 'docs', 'trust.md'), 'utf8');
    const section = page.slice(page.indexOf('Worked example.'));
    const settings = /```json\n([\s\S]*?)\n```/.exec(section)![1]!;
    const userSettings = /`~\/\.srt\/settings\.json`[^`]*`([^`]+)`/.exec(section)![1]!;
    await execa('git', ['init', '-q', cwd]);
    mkdirSync(join(cwd, '.srt'));
    writeFileSync(join(cwd, '.srt', 'settings.json'), `${settings}\n`);
    leftPadProject(cwd);
    const file = join(cwd, '.srt', 'settings.json');

    const first = await srt(['--', 'npm', 'ci'], { home, cwd, env: npmEnv, timeout: 180_000 });
    expect(first.exitCode).not.toBe(0);
    expect(first.stderr).toContain(`srt: warning: ${file}: its allow entries are not applied until you approve them: srt trust ${file}`);
    expect(first.stderr).toContain(`srt: to allow registry.npmjs.org:443: it is listed in ${file}, which you have not approved: srt trust ${file}`);

    const trust = await srt(['trust'], { home, cwd });
    expect(trust.exitCode).toBe(0);
    expect(trust.stdout).toContain(`approved ${file}`);

    mkdirSync(join(home, '.srt'), { recursive: true });
    writeFileSync(join(home, '.srt', 'settings.json'), userSettings);
    const ci = await srt(['--', 'npm', 'ci'], { home, cwd, env: npmEnv, timeout: 180_000 });
    expect(ci.stderr).not.toMatch(/srt: (refused|blocked)/);
    expect(ci.exitCode).toBe(0);
    expect(existsSync(join(cwd, 'node_modules', 'left-pad', 'index.js'))).toBe(true);
  });
});

describe("the README's npm recipe, as written", () => {
  it('the snippet in ~/.srt/settings.json, then srt -- npm ci; and, without settings, the srt --with npm -- npm ci of its comment', async () => {
    const readme = readFileSync(join(REPO, 'README.md'), 'utf8');
    const recipe = readme.slice(readme.indexOf('**npm, pnpm, yarn**'));
    const settings = /```json\n([\s\S]*?)```/.exec(recipe)![1]!;
    const [, command, comment] = /```sh\n(.*?)\s+#\s*or, without settings:\s*(srt [^;]*);/.exec(recipe)!;
    expect([settings.trim(), command, comment]).toEqual(['{ "presets": ["npm"] }', 'srt -- npm ci', 'srt --with npm -- npm ci']);

    const withSettings = fresh();
    leftPadProject(withSettings.cwd);
    mkdirSync(join(withSettings.home, '.srt'));
    writeFileSync(join(withSettings.home, '.srt', 'settings.json'), settings);
    const first = await srt(argvOf(command!), { ...withSettings, env: npmEnv, timeout: 180_000 });
    expect(first.stderr).not.toMatch(/srt: (warning|refused|blocked)/);
    expect(first.exitCode).toBe(0);
    expect(existsSync(join(withSettings.cwd, 'node_modules', 'left-pad', 'index.js'))).toBe(true);

    const withFlag = fresh();
    leftPadProject(withFlag.cwd);
    const second = await srt(argvOf(comment!), { ...withFlag, env: npmEnv, timeout: 180_000 });
    expect(second.stderr).not.toMatch(/srt: (warning|refused|blocked)/);
    expect(second.exitCode).toBe(0);
    expect(existsSync(join(withFlag.cwd, 'node_modules', 'left-pad', 'index.js'))).toBe(true);
  });
});
