// The ready `extract` patterns of docs/tls-and-credentials.md, read from that page itself, against
// realistic files: exactly the secrets are masked, nothing else changes, the file still parses.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { buildCredentialPlan, type FileFact } from '../../src/credentials/plan.js';
import { buildPolicy } from '../../src/settings/index.js';
import { REPO } from '../e2e/helpers.js';

const home = '/home/u';
const ctx = { cwd: '/work/repo', home, root: '/work/repo' };

/** The settings block that follows "Ready `extract` patterns" in docs/tls-and-credentials.md. */
function readmePatterns(): { credentials: { files: Array<{ path: string; extract: string }> } } {
  const page = readFileSync(join(REPO, 'docs', 'tls-and-credentials.md'), 'utf8');
  const at = page.indexOf('**Ready `extract` patterns**');
  expect(at).toBeGreaterThan(-1);
  const block = /```json\n([\s\S]*?)```/.exec(page.slice(at))!;
  return JSON.parse(block[1]!.replace(/^ {2}/gm, ''));
}

const SAMPLES: Record<string, { text: string; secrets: string[]; parses?: (text: string) => unknown }> = {
  '~/.npmrc': {
    text: [
      'registry=https://registry.npmjs.org/',
      '@myorg:registry=https://npm.pkg.github.com/',
      '//registry.npmjs.org/:_authToken=npm_Qm9lR2VzdFRva2VuRm9yU3J0MDEyMzQ1Njc4',
      '//npm.pkg.github.com/:_authToken=${GITHUB_TOKEN}',
      '//registry.example.com:8443/npm/:_auth=b2N0b2NhdDpzM2NyM3QtcGFzc3dvcmQ=',
      '//registry.example.com:8443/npm/:_password="c2VjcmV0LXBhc3N3b3JkLTEyMw=="',
      '//registry.example.com:8443/npm/:username=octocat',
      '_authToken = npm_TGVnYWN5VG9wTGV2ZWxUb2tlbkZvclNydDAxMjM0',
      'email=octocat@example.com',
      'always-auth=true',
      '',
    ].join('\n'),
    secrets: ['npm_Qm9lR2VzdFRva2VuRm9yU3J0MDEyMzQ1Njc4', 'b2N0b2NhdDpzM2NyM3QtcGFzc3dvcmQ=', 'c2VjcmV0LXBhc3N3b3JkLTEyMw==', 'npm_TGVnYWN5VG9wTGV2ZWxUb2tlbkZvclNydDAxMjM0'],
  },
  '~/.netrc': {
    text: [
      'machine github.com',
      '  login octocat',
      '  password ghp_16C7e42F292c6912E7710c838347Ae178B4a',
      'machine api.heroku.com login me@example.com password "s3cret pass phrase 2024"',
      'machine example.com login anon password plain-password-123',
      'default login anonymous password guest@example.org',
      '',
    ].join('\n'),
    secrets: ['ghp_16C7e42F292c6912E7710c838347Ae178B4a', 's3cret pass phrase 2024', 'plain-password-123', 'guest@example.org'],
  },
  '~/.config/gh/hosts.yml': {
    text: [
      'github.com:',
      '    users:',
      '        octocat:',
      '            oauth_token: gho_16C7e42F292c6912E7710c838347Ae178B4a',
      '    git_protocol: https',
      '    oauth_token: gho_16C7e42F292c6912E7710c838347Ae178B4a',
      '    user: octocat',
      'ghe.example.com:',
      '    oauth_token: "gho_Zz9yXw8vUt7sRq6pOn5mLk4jIh3gFe2dCb1a"',
      '    user: monalisa',
      '    git_protocol: ssh',
      '',
    ].join('\n'),
    secrets: ['gho_16C7e42F292c6912E7710c838347Ae178B4a', 'gho_Zz9yXw8vUt7sRq6pOn5mLk4jIh3gFe2dCb1a'],
    parses: (t) => parseYaml(t),
  },
  '~/.docker/config.json': {
    text: JSON.stringify({
      auths: {
        'https://index.docker.io/v1/': { auth: 'b2N0b2NhdDpkY2tyX3BhdF9zM2NyM3RfdG9rZW4=' },
        'ghcr.io': { auth: 'b2N0b2NhdDpnaHBfMTIzNDU2Nzg5MGFiY2RlZmdoaWo=' },
        'registry.example.com': { identitytoken: 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJvY3RvY2F0In0.c2lnbmF0dXJlLXZhbHVl' },
      },
      credsStore: '',
      HttpHeaders: { 'User-Agent': 'Docker-Client/24.0.7 (linux)' },
    }, null, '\t') + '\n',
    secrets: ['b2N0b2NhdDpkY2tyX3BhdF9zM2NyM3RfdG9rZW4=', 'b2N0b2NhdDpnaHBfMTIzNDU2Nzg5MGFiY2RlZmdoaWo=', 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJvY3RvY2F0In0.c2lnbmF0dXJlLXZhbHVl'],
    parses: (t) => JSON.parse(t),
  },
  '~/.git-credentials': {
    text: [
      'https://octocat:ghp_aB3dE5gH7jK9mN1pQ3sT5vX7zA9cE1gI3kM5@github.com',
      'https://oauth2:glpat-Xy12Zw34Vu56Ts78Rq90@gitlab.example.com',
      'https://me:p%40ssw0rd-long-enough@git.example.com:8443',
      '',
    ].join('\n'),
    secrets: ['ghp_aB3dE5gH7jK9mN1pQ3sT5vX7zA9cE1gI3kM5', 'glpat-Xy12Zw34Vu56Ts78Rq90', 'p%40ssw0rd-long-enough'],
  },
};

describe('the documented ready extract patterns', () => {
  const settings = readmePatterns();
  const policy = buildPolicy(ctx, [{
    scope: 'user', file: `${home}/.srt/settings.json`, base: `${home}/.srt`,
    settings: { ...settings, network: { tlsTerminate: {}, allowedDomains: ['registry.npmjs.org', 'github.com', 'api.github.com', 'registry-1.docker.io', 'auth.docker.io', 'ghcr.io'] } },
  }]);
  const files = new Map<string, FileFact>(Object.entries(SAMPLES).map(([p, s]) => [p.replace('~', home), { kind: 'file', bytes: Buffer.from(s.text) }]));
  const plan = buildCredentialPlan({ policy, env: {}, files, bindFiles: true });

  it('cover the five files the documentation names, with no warning and no error', () => {
    expect(settings.credentials.files.map((f) => f.path)).toEqual(Object.keys(SAMPLES));
    expect(plan.errors).toEqual([]);
    expect(plan.warnings).toEqual([]);
    expect(plan.maskFiles).toHaveLength(5);
  });

  for (const [path, sample] of Object.entries(SAMPLES)) {
    it(`${path}: exactly its secrets are masked, the rest is kept, and it still parses`, () => {
      const masked = plan.maskFiles.find((m) => m.path === path.replace('~', home))!;
      const text = masked.content.toString();
      const secrets = plan.secrets.filter((s) => s.label === masked.path);
      expect(secrets.map((s) => s.real).sort()).toEqual([...sample.secrets].sort());
      for (const s of sample.secrets) expect(text, s).not.toContain(s);
      // Putting each real value back where its sentinel is gives the file byte for byte.
      let restored = text;
      for (const s of secrets) restored = restored.split(s.sentinel).join(s.real);
      expect(restored).toBe(sample.text);
      sample.parses?.(text);
    });
  }

  it('without them the same files are masked whole, with a warning naming the cure', () => {
    const whole = buildPolicy(ctx, [{
      scope: 'user', file: `${home}/.srt/settings.json`, base: `${home}/.srt`,
      settings: { network: { tlsTerminate: {}, allowedDomains: ['github.com'] }, credentials: { files: settings.credentials.files.map(({ path }) => ({ path, mode: 'mask', injectHosts: ['github.com'] })) } },
    }]);
    const p = buildCredentialPlan({ policy: whole, env: {}, files, bindFiles: true });
    expect(p.warnings).toEqual(Object.keys(SAMPLES).map((path) =>
      `credentials: ${path.replace('~', home)}: masked whole (no extract) although it has several lines: the command reads one sentinel instead of the file, which its tools cannot parse, and the proxy would inject the whole file as one value; give it an extract (docs/tls-and-credentials.md has patterns for .npmrc, .netrc, gh's hosts.yml, .docker/config.json and .git-credentials)`));
  });
});
