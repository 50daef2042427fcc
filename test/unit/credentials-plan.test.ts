import * as jose from 'jose';
import { describe, expect, it } from 'vitest';
import { buildCredentialPlan, MAX_MASKED_FILE, type FileFact, type PlanInput } from '../../src/credentials/plan.js';
import { emptyCredentialPlan, hasCredentials } from '../../src/credentials/env.js';
import { hasValidChecksum } from '../../src/credentials/sentinels.js';
import { buildPolicy, type SettingsLayer } from '../../src/settings/index.js';

const ctx = { cwd: '/work/repo', home: '/home/u', root: '/work/repo' };
const user = (settings: unknown): SettingsLayer => ({ scope: 'user', file: '/home/u/.srt/settings.json', base: '/home/u/.srt', settings });
const GH = 'ghp_16C7e42F292c6912E7710c838347Ae178B4a';
const TLS = { tlsTerminate: {}, allowedDomains: ['api.github.com', '*.example.com'] };
/** What srt says at start for masks without injectHosts under TLS's allowedDomains. */
const leftOut = (labels: string) => `credentials: ${labels} ${labels.includes(',') ? 'have' : 'has'} no injectHosts: the real value goes only to the allowedDomains entries that name one host, not to *.example.com; list it in injectHosts to send it there`;

function plan(settings: unknown, extra: Partial<PlanInput> = {}) {
  const policy = buildPolicy(ctx, [user(settings)]);
  return buildCredentialPlan({ policy, env: {}, files: new Map(), bindFiles: true, jose, ...extra });
}

const file = (text: string | Buffer): FileFact => ({ kind: 'file', bytes: Buffer.isBuffer(text) ? text : Buffer.from(text) });

describe('credential plan: environment', () => {
  it('a policy without credential entries has the empty plan (what a run uses without loading the builder)', () => {
    const settings = { network: { ...TLS, allowedDomains: [] }, credentials: { sigv4: { presigned: 'passthrough' }, allowPlaintextInject: true } };
    const policy = buildPolicy(ctx, [user(settings)]);
    expect(hasCredentials(policy)).toBe(false);
    expect(plan(settings, { env: { GH_TOKEN: GH, AWS_ACCESS_KEY_ID: 'AKIAIOSFODNN7EXAMPLE' } })).toEqual(emptyCredentialPlan());
    for (const c of [{ envVars: [{ name: 'X', mode: 'deny' }] }, { files: [{ path: '~/.netrc', mode: 'deny' }] }]) {
      expect(hasCredentials(buildPolicy(ctx, [user({ credentials: c })]))).toBe(true);
    }
  });

  it('deny unsets; mask sets a sentinel of the same shape; the secret keeps its canonical inject hosts and places', () => {
    const p = plan(
      { network: TLS, credentials: { envVars: [{ name: 'NPM_TOKEN', mode: 'deny' }, { name: 'GH_TOKEN', mode: 'mask', injectHosts: ['API.GitHub.com.'], injectInto: ['headers', 'query'] }] } },
      { env: { NPM_TOKEN: 'npm_x', GH_TOKEN: GH, OTHER: 'kept' } },
    );
    expect(p.unsetEnv).toEqual(['NPM_TOKEN']);
    expect(p.setEnv).toHaveLength(1);
    const [change] = p.setEnv;
    expect(change!.name).toBe('GH_TOKEN');
    expect(change!.value).not.toBe(GH);
    expect(change!.value).toHaveLength(GH.length);
    expect(hasValidChecksum(change!.value!)).toBe(true);
    expect(p.secrets).toEqual([{ label: 'GH_TOKEN', real: GH, sentinel: change!.value, injectHosts: [expect.objectContaining({ text: 'api.github.com' })], injectInto: ['headers', 'query'], inject: true }]);
    expect(p.warnings).toEqual([]);
    expect(p.errors).toEqual([]);
  });

  it('a masked variable that is not set is a note, not a secret', () => {
    const p = plan({ network: TLS, credentials: { envVars: [{ name: 'GH_TOKEN', mode: 'mask' }] } });
    expect(p.setEnv).toEqual([]);
    expect(p.secrets).toEqual([]);
    expect(p.notes).toEqual(["credentials: GH_TOKEN is masked but not set in srt's environment: nothing to mask"]);
  });

  it('another variable holding a masked value gets the sentinel there too; one holding a denied value is unset', () => {
    const p = plan(
      { network: TLS, credentials: { envVars: [{ name: 'GH_TOKEN', mode: 'mask' }, { name: 'NPM_TOKEN', mode: 'deny' }] } },
      { env: { GH_TOKEN: GH, GITHUB_TOKEN: GH, URL: `https://x:${GH}@github.com`, NPM_TOKEN: 'npm_0123456789', NPM_CONFIG_TOKEN: 'npm_0123456789' } },
    );
    const sentinel = p.setEnv.find((c) => c.name === 'GH_TOKEN')!.value!;
    expect(p.setEnv.find((c) => c.name === 'GITHUB_TOKEN')!.value).toBe(sentinel);
    expect(p.setEnv.find((c) => c.name === 'URL')!.value).toBe(`https://x:${sentinel}@github.com`);
    expect(p.unsetEnv).toEqual(['NPM_TOKEN', 'NPM_CONFIG_TOKEN']);
    expect(p.warnings).toEqual([
      leftOut('GH_TOKEN'),
      'credentials: GITHUB_TOKEN holds the value of masked GH_TOKEN; the command sees the sentinel there too',
      'credentials: URL holds the value of masked GH_TOKEN; the command sees the sentinel there too',
      'credentials: NPM_CONFIG_TOKEN holds the value of a denied variable; unset too',
    ]);
  });

  it('extract on a variable masks group 1 only', () => {
    const p = plan({ network: TLS, credentials: { envVars: [{ name: 'DB', mode: 'mask', extract: ':([^:@]+)@' }] } }, { env: { DB: 'postgres://me:hunter2hunter2@db.example.com/x' } });
    const v = p.setEnv[0]!.value!;
    expect(v).toMatch(/^postgres:\/\/me:[a-z0-9]{14}@db\.example\.com\/x$/);
    expect(v).not.toContain('hunter2');
  });

  it('onExtractNoMatch: warn passes unmasked, deny withholds, error refuses to start', () => {
    const entry = (on: string) => ({ network: TLS, credentials: { envVars: [{ name: 'T', mode: 'mask', extract: 'token=(\\w+)', onExtractNoMatch: on }] } });
    const env = { T: 'no match here' };
    const warn = plan(entry('warn'), { env });
    expect(warn.setEnv).toEqual([]);
    expect(warn.unsetEnv).toEqual([]);
    expect(warn.warnings).toEqual(['credentials: T: extract "token=(\\\\w+)" matches nothing; passed to the command UNMASKED (onExtractNoMatch "warn"; set it to "deny" to withhold it)']);
    const deny = plan(entry('deny'), { env });
    expect(deny.unsetEnv).toEqual(['T']);
    const error = plan(entry('error'), { env });
    expect(error.errors).toEqual(['credentials: T: extract "token=(\\\\w+)" matches nothing (onExtractNoMatch is "error"); fix the entry\'s extract/decode or the value']);
  });

  it('with the per-user key every sentinel (a fake JWT too) is the same in every run; without one, new each run', async () => {
    const jwt = await new jose.SignJWT({ sub: 'u-1', exp: 4000000000 }).setProtectedHeader({ alg: 'HS256' }).sign(new Uint8Array(32));
    const settings = { network: TLS, credentials: { envVars: [{ name: 'GH_TOKEN', mode: 'mask' }, { name: 'JWT', mode: 'mask', decode: 'jwt' }], files: [{ path: '~/.netrc', mode: 'mask', extract: 'password (\\S+)' }] } };
    const env = { GH_TOKEN: GH, JWT: jwt, COPY: `x ${GH}` };
    const files = new Map([['/home/u/.netrc', file('machine api.github.com login me password s3cr3t-netrc-password\n')]]);
    const shown = (p: ReturnType<typeof plan>) => [...p.setEnv.map((c) => `${c.name}=${c.value}`), ...p.maskFiles.map((m) => m.content.toString())];
    const key = Buffer.alloc(32, 1);
    const first = plan(settings, { env, files, sentinelKey: key });
    expect(shown(plan(settings, { env, files, sentinelKey: Buffer.from(key) }))).toEqual(shown(first));
    expect(shown(plan(settings, { env, files, sentinelKey: Buffer.alloc(32, 2) }))).not.toEqual(shown(first));
    expect(shown(plan(settings, { env, files }))).not.toEqual(shown(plan(settings, { env, files })));
    // A key srt could not use: said once, and the run goes on with new sentinels.
    const problem = plan(settings, { env, files, sentinelKeyProblem: 'others may read or change K (mode 644); chmod 600 it' });
    expect(problem.warnings).toContain('credentials: sentinels are new in this run, not the ones earlier runs used: others may read or change K (mode 644); chmod 600 it');
  });

  it('decode "jwt": the variable gets a fake JWT; a value that is not one follows onExtractNoMatch', async () => {
    const real = await new jose.SignJWT({ sub: 'u-1', exp: 4000000000 }).setProtectedHeader({ alg: 'HS256' }).sign(new Uint8Array(32));
    const p = plan({ network: TLS, credentials: { envVars: [{ name: 'JWT', mode: 'mask', decode: 'jwt' }] } }, { env: { JWT: real } });
    const fake = p.setEnv[0]!.value!;
    expect(jose.decodeJwt(fake).exp).toBe(4000000000);
    expect(p.secrets[0]).toMatchObject({ real, sentinel: fake });
    const bad = plan({ network: TLS, credentials: { envVars: [{ name: 'JWT', mode: 'mask', decode: 'jwt', onExtractNoMatch: 'deny' }] } }, { env: { JWT: 'opaque-token-123456' } });
    expect(bad.unsetEnv).toEqual(['JWT']);
    expect(bad.warnings[0]).toBe('credentials: JWT: decode "jwt": the value is not a JWT; withheld from the command (onExtractNoMatch "deny")');
  });

  it('source commands: the sourced value is masked; before they ran (dry run) the change is described as pending', () => {
    const settings = { network: TLS, credentials: { envVars: [{ name: 'OPENAI_API_KEY', mode: 'mask', source: { command: ['pass', 'openai'] } }] } };
    const dry = plan(settings, { env: { OPENAI_API_KEY: 'ignored' } });
    expect(dry.setEnv).toEqual([{ name: 'OPENAI_API_KEY', pending: ['pass', 'openai'] }]);
    expect(dry.secrets).toEqual([]);
    const real = 'sk-proj-abcdefghijklmnopqrstuvwxyz0123456789';
    const run = plan(settings, { env: {}, sourced: new Map([['OPENAI_API_KEY', real]]) });
    expect(run.setEnv[0]!.value).toMatch(/^sk-proj-[A-Za-z0-9]{36}$/);
    expect(run.secrets[0]!.real).toBe(real);
  });

  it('one value under two entries is one secret whose hosts and places are the union', () => {
    const p = plan(
      { network: TLS, credentials: { envVars: [{ name: 'A', mode: 'mask', injectHosts: ['api.github.com'] }, { name: 'B', mode: 'mask', injectHosts: ['x.example.com'], injectInto: ['body'] }] } },
      { env: { A: GH, B: GH } },
    );
    expect(p.secrets).toHaveLength(1);
    expect(p.secrets[0]!.injectHosts!.map((r) => r.text)).toEqual(['api.github.com', 'x.example.com']);
    expect(p.secrets[0]!.injectInto).toEqual(['headers', 'body']);
    expect(p.setEnv.map((c) => c.value)).toEqual([p.secrets[0]!.sentinel, p.secrets[0]!.sentinel]);
  });
});

describe('credential plan: where a mask without injectHosts goes', () => {
  const allowed = ['api.github.com', '*.example.com', '127.0.0.1:3000', '[::1]', 'example.org:8443', '*:22'];

  it('every allowedDomains entry that names one host; wildcards are left out, and srt says which', () => {
    const p = plan({ network: { tlsTerminate: {}, allowedDomains: allowed }, credentials: { envVars: [{ name: 'A', mode: 'mask' }, { name: 'B', mode: 'mask' }] } }, { env: { A: GH, B: 'npm_abcdefghijklmnopqrstuvwxyz0123456789' } });
    for (const s of p.secrets) expect(s.injectHosts.map((r) => r.text)).toEqual(['api.github.com', '127.0.0.1:3000', '[::1]', 'example.org:8443']);
    expect(p.warnings).toEqual(['credentials: A, B have no injectHosts: the real value goes only to the allowedDomains entries that name one host, not to *.example.com, *:22; list them in injectHosts to send it there']);
  });

  it('a wildcard listed in injectHosts is used as listed; nothing is said when nothing is left out', () => {
    const p = plan({ network: { tlsTerminate: {}, allowedDomains: allowed }, credentials: { envVars: [{ name: 'A', mode: 'mask', injectHosts: ['*.example.com'] }] } }, { env: { A: GH } });
    expect(p.secrets[0]!.injectHosts.map((r) => r.text)).toEqual(['*.example.com']);
    expect(p.warnings).toEqual([]);
    const hostsOnly = plan({ network: { tlsTerminate: {}, allowedDomains: ['api.github.com'] }, credentials: { envVars: [{ name: 'A', mode: 'mask' }] } }, { env: { A: GH } });
    expect(hostsOnly.warnings).toEqual([]);
  });

  it('the same value under an entry with injectHosts and one without goes to both sets; under allowManagedDomainsOnly only managed entries count', () => {
    const p = plan({ network: { tlsTerminate: {}, allowedDomains: allowed }, credentials: { envVars: [{ name: 'A', mode: 'mask', injectHosts: ['*.example.com'] }, { name: 'B', mode: 'mask' }] } }, { env: { A: GH, B: GH } });
    expect(p.secrets[0]!.injectHosts.map((r) => r.text)).toEqual(['*.example.com', 'api.github.com', '127.0.0.1:3000', '[::1]', 'example.org:8443']);
    const managed: SettingsLayer = { scope: 'managed', file: '/etc/srt/managed-settings.json', base: '/etc/srt', settings: { network: { allowedDomains: ['corp.example', '*.corp.example'], allowManagedDomainsOnly: true } } };
    const policy = buildPolicy(ctx, [managed, user({ network: { tlsTerminate: {}, allowedDomains: ['api.github.com'] }, credentials: { envVars: [{ name: 'A', mode: 'mask' }] } })]);
    const q = buildCredentialPlan({ policy, env: { A: GH }, files: new Map(), bindFiles: true, jose });
    expect(q.secrets[0]!.injectHosts.map((r) => r.text)).toEqual(['corp.example']);
    expect(q.warnings).toContain('credentials: A has no injectHosts: the real value goes only to the allowedDomains entries that name one host, not to *.corp.example; list it in injectHosts to send it there');
  });
});

describe('credential plan: copies elsewhere, encoded or not', () => {
  const b64 = (t: string) => Buffer.from(t).toString('base64');
  const docker = (t: string) => JSON.stringify({ auths: { 'ghcr.io': { auth: b64(`octocat:${t}`) } } });
  const NPM = 'npm_deniedDeniedDeniedDenied0123456789';

  it('another variable holding a masked value base64-encoded gets the sentinel encoded the same way; a denied one is withheld', () => {
    const p = plan(
      { network: TLS, credentials: { envVars: [{ name: 'GH_TOKEN', mode: 'mask', injectHosts: ['api.github.com'] }, { name: 'NPM_TOKEN', mode: 'deny' }] } },
      { env: { GH_TOKEN: GH, NPM_CONFIG__AUTH: b64(`octocat:${GH}`), DOCKER_AUTH_CONFIG: docker(GH), NPM_CONFIG_OTHER_AUTH: b64(`me:${NPM}`), NPM_TOKEN: NPM, PLAIN: 'nothing here at all' } },
    );
    const sentinel = p.secrets[0]!.sentinel;
    const seen = (name: string) => p.setEnv.find((c) => c.name === name)?.value;
    expect(seen('NPM_CONFIG__AUTH')).toBe(b64(`octocat:${sentinel}`));
    expect(seen('DOCKER_AUTH_CONFIG')).toBe(docker(sentinel));
    expect(seen('PLAIN')).toBeUndefined();
    expect(p.unsetEnv).toEqual(['NPM_TOKEN', 'NPM_CONFIG_OTHER_AUTH']);
    expect(p.warnings).toEqual([
      'credentials: NPM_CONFIG__AUTH holds the value of masked GH_TOKEN base64-encoded; the command sees the sentinel there, encoded the same way',
      'credentials: DOCKER_AUTH_CONFIG holds the value of masked GH_TOKEN base64-encoded; the command sees the sentinel there, encoded the same way',
      'credentials: NPM_CONFIG_OTHER_AUTH holds the value of a denied variable (base64-encoded); unset too',
    ]);
  });

  it('a variable passed unmasked (its extract matched nothing) gets the sentinel too; a copy srt cannot re-encode withholds the variable', () => {
    const p = plan(
      { network: TLS, credentials: { envVars: [{ name: 'GH_TOKEN', mode: 'mask', injectHosts: ['api.github.com'] }, { name: 'GIT_CONFIG_VALUE_0', mode: 'mask', extract: 'token=(\\S+)' }] } },
      { env: { GH_TOKEN: GH, GIT_CONFIG_VALUE_0: `Authorization: Basic ${b64(`x:${GH}`)}`, BLOB: `/v1/x/${b64(`u:${GH}`)}/y` } },
    );
    const sentinel = p.secrets[0]!.sentinel;
    expect(p.setEnv.find((c) => c.name === 'GIT_CONFIG_VALUE_0')?.value).toBe(`Authorization: Basic ${b64(`x:${sentinel}`)}`);
    expect(p.unsetEnv).toEqual(['BLOB']);
    expect(p.warnings).toContain('credentials: BLOB holds the value of masked GH_TOKEN base64-encoded inside a longer run srt cannot re-encode; unset too');
  });

  it('a file passed unmasked (extract matched nothing) never carries a value masked elsewhere; a masked file holding a denied value is denied', () => {
    const netrc = `machine github.com login octocat password ${GH}\n`;
    const p = plan(
      { network: TLS, credentials: {
        envVars: [{ name: 'GH_TOKEN', mode: 'mask', injectHosts: ['api.github.com'] }, { name: 'NPM_TOKEN', mode: 'deny' }],
        files: [
          { path: '/home/u/.netrc', mode: 'mask', extract: 'token=(\\S+)' },
          { path: '/home/u/plain.txt', mode: 'mask', extract: 'token=(\\S+)' },
          { path: '/home/u/.npmrc', mode: 'mask', extract: '_authToken=(\\S+)' },
          { path: '/home/u/docker.json', mode: 'mask', extract: 'nomatch=(\\S+)' },
        ],
      } },
      { env: { GH_TOKEN: GH, NPM_TOKEN: NPM }, files: new Map([
        ['/home/u/.netrc', file(netrc)],
        ['/home/u/plain.txt', file('nothing guarded\n')],
        ['/home/u/.npmrc', file(`//r.example/:_authToken=npm_maskedMaskedMasked0123456789\n//other/:_auth=${b64(`x:${NPM}`)}\n`)],
        ['/home/u/docker.json', file(docker(GH))],
      ]) },
    );
    const gh = p.secrets.find((s) => s.real === GH)!;
    expect(p.maskFiles.map((m) => [m.path, m.content.toString(), m.masked])).toEqual([
      ['/home/u/.netrc', netrc.replace(GH, gh.sentinel), 1],
      ['/home/u/docker.json', docker(gh.sentinel), 1],
    ]);
    expect(p.denyFiles.map((d) => [d.rule.path, d.why])).toEqual([['/home/u/.npmrc', 'holds the value of a denied variable (base64-encoded)']]);
    expect(p.warnings).toEqual(expect.arrayContaining([
      'credentials: /home/u/.netrc: its extract matched nothing, but it holds the value of masked GH_TOKEN: the command sees the sentinel there (the rest is passed unmasked)',
      'credentials: /home/u/docker.json: its extract matched nothing, but it holds the value of masked GH_TOKEN: the command sees the sentinel there (the rest is passed unmasked)',
      'credentials: /home/u/.npmrc holds the value of a denied variable (base64-encoded); denied too',
    ]));
  });
});

describe('credential plan: files', () => {
  const hosts = 'github.com:\n  user: me\n  oauth_token: gho_16C7e42F292c6912E7710c838347Ae178B4a\n';

  it('a masked file gets a sentinel copy (group 1 replaced); a deny file is denied', () => {
    const p = plan(
      { network: TLS, credentials: { files: [{ path: '/home/u/hosts.yml', mode: 'mask', extract: 'oauth_token:\\s*(\\S+)' }, { path: '/home/u/.npmrc', mode: 'deny' }] } },
      { files: new Map([['/home/u/hosts.yml', file(hosts)]]) },
    );
    expect(p.denyFiles.map((d) => [d.rule.path, d.why])).toEqual([['/home/u/.npmrc', '']]);
    expect(p.maskFiles).toHaveLength(1);
    const copy = p.maskFiles[0]!.content.toString();
    expect(copy).not.toContain('gho_16C7e42F');
    expect(copy).toBe(hosts.replace('gho_16C7e42F292c6912E7710c838347Ae178B4a', p.secrets[0]!.sentinel));
    expect(p.secrets[0]).toMatchObject({ label: '/home/u/hosts.yml', real: 'gho_16C7e42F292c6912E7710c838347Ae178B4a' });
  });

  it('falls back to deny, with a warning, for a glob, a directory, a file over 8 MiB, non-UTF-8, an unreadable file, or no bind support', () => {
    const cases: Array<[string, FileFact | undefined, string]> = [
      ['/home/u/*.yml', undefined, 'a glob names several files'],
      ['/home/u/dir', { kind: 'dir' }, 'it is a directory'],
      ['/home/u/big', { kind: 'too-large', size: MAX_MASKED_FILE + 1 }, `it is larger than 8 MiB (${MAX_MASKED_FILE + 1} bytes)`],
      ['/home/u/bin', file(Buffer.from([0x66, 0xff, 0xfe, 0x00])), 'it is not UTF-8 text'],
      ['/home/u/locked', { kind: 'unreadable', why: 'EACCES' }, 'srt cannot read it (EACCES)'],
    ];
    for (const [path, fact, why] of cases) {
      const p = plan({ network: TLS, credentials: { files: [{ path, mode: 'mask' }] } }, { files: new Map(fact ? [[path, fact]] : []) });
      expect(p.denyFiles.map((d) => d.why), path).toEqual([why]);
      expect(p.warnings).toEqual([`credentials: ${path}: ${why}, so it cannot be masked safely; denied instead`]);
      expect(p.maskFiles).toEqual([]);
    }
    const mac = plan({ network: TLS, credentials: { files: [{ path: '/home/u/hosts.yml', mode: 'mask' }] } }, { bindFiles: false, files: new Map([['/home/u/hosts.yml', file(hosts)]]) });
    expect(mac.denyFiles).toHaveLength(1);
  });

  it('a missing file is a note; extract without a match follows onExtractNoMatch', () => {
    expect(plan({ network: TLS, credentials: { files: [{ path: '/home/u/none', mode: 'mask' }] } }).notes).toEqual(['credentials: /home/u/none does not exist: nothing to mask']);
    const p = plan(
      { network: TLS, credentials: { files: [{ path: '/home/u/hosts.yml', mode: 'mask', extract: 'token=(\\S+)', onExtractNoMatch: 'deny' }] } },
      { files: new Map([['/home/u/hosts.yml', file(hosts)]]) },
    );
    expect(p.denyFiles.map((d) => d.rule.path)).toEqual(['/home/u/hosts.yml']);
  });

  it('decode "jwt" on a file: every extracted JWT becomes a fake; one that is not a JWT follows onExtractNoMatch', async () => {
    const jwt = await new jose.SignJWT({ sub: 'svc', exp: 4000000000 }).setProtectedHeader({ alg: 'HS256', typ: 'JWT' }).sign(new Uint8Array(32));
    const text = `{"access_token": "${jwt}", "refresh": "opaque-refresh-0123456789"}`;
    const p = plan(
      { network: TLS, credentials: { files: [{ path: '/home/u/token.json', mode: 'mask', extract: '"access_token":\\s*"([^"]+)"', decode: 'jwt' }] } },
      { files: new Map([['/home/u/token.json', file(text)]]) },
    );
    const out = JSON.parse(p.maskFiles[0]!.content.toString());
    expect(out.refresh).toBe('opaque-refresh-0123456789');
    expect(out.access_token).not.toBe(jwt);
    expect(jose.decodeJwt(out.access_token).exp).toBe(4000000000);
    expect(p.secrets[0]).toMatchObject({ real: jwt, sentinel: out.access_token });
    const bad = plan(
      { network: TLS, credentials: { files: [{ path: '/home/u/token.json', mode: 'mask', extract: '"refresh":\\s*"([^"]+)"', decode: 'jwt', onExtractNoMatch: 'deny' }] } },
      { files: new Map([['/home/u/token.json', file(text)]]) },
    );
    expect(bad.denyFiles.map((d) => d.why)).toEqual(['decode "jwt": the value is not a JWT']);
  });

  it("a masked file that also holds a masked variable's value gets that sentinel too", () => {
    const p = plan(
      { network: TLS, credentials: { envVars: [{ name: 'GH_TOKEN', mode: 'mask' }], files: [{ path: '/home/u/.netrc', mode: 'mask', extract: 'login (\\S+)' }] } },
      { env: { GH_TOKEN: GH }, files: new Map([['/home/u/.netrc', file(`machine github.com login me-myself password ${GH}\n`)]]) },
    );
    const gh = p.secrets.find((s) => s.label === 'GH_TOKEN')!;
    expect(p.maskFiles[0]!.content.toString()).toContain(`password ${gh.sentinel}`);
    expect(p.maskFiles[0]!.content.toString()).not.toContain(GH);
  });
});

describe('credential plan: start-up report and AWS', () => {
  it('masking without tlsTerminate (and without allowPlaintextInject) is reported', () => {
    const noTls = plan({ network: { allowedDomains: ['api.github.com'] }, credentials: { envVars: [{ name: 'GH_TOKEN', mode: 'mask' }] } }, { env: { GH_TOKEN: GH } });
    expect(noTls.warnings).toEqual([
      'credentials: GH_TOKEN masked without network.tlsTerminate: the sentinel would reach the server unchanged and authentication would fail; add "tlsTerminate": {} to network',
    ]);
    expect(plan({ network: { allowedDomains: ['api.github.com'] }, credentials: { envVars: [{ name: 'GH_TOKEN', mode: 'mask' }], allowPlaintextInject: true } }, { env: { GH_TOKEN: GH } }).warnings).toEqual([]);
  });

  it('injectHosts that can never match, and a default with no allowed domain, are reported', () => {
    const p = plan(
      { network: { tlsTerminate: {}, allowedDomains: ['*.github.com', 'api.example.com:443'] }, credentials: { envVars: [
        { name: 'A', mode: 'mask', injectHosts: ['api.github.com', 'github.com', 'api.example.com', 'api.example.com:8443', 'other.test'] },
      ] } },
      { env: { A: GH } },
    );
    expect(p.warnings).toEqual([
      'credentials: A: injectHosts entry "github.com" is not covered by network.allowedDomains, so the proxy never connects there and the value is never sent',
      'credentials: A: injectHosts entry "api.example.com:8443" is not covered by network.allowedDomains, so the proxy never connects there and the value is never sent',
      'credentials: A: injectHosts entry "other.test" is not covered by network.allowedDomains, so the proxy never connects there and the value is never sent',
    ]);
    const none = plan({ network: { tlsTerminate: {} }, credentials: { envVars: [{ name: 'A', mode: 'mask' }] } }, { env: { A: GH } });
    expect(none.warnings).toEqual(['credentials: A: network.allowedDomains is empty, so its real value is never sent anywhere']);
  });

  it('a value too short to hide gets a longer sentinel and a warning', () => {
    const p = plan({ network: TLS, credentials: { envVars: [{ name: 'PIN', mode: 'mask' }] } }, { env: { PIN: '1234' } });
    expect(p.setEnv[0]!.value!.length).toBeGreaterThan(4);
    expect(p.warnings).toEqual([
      'credentials: PIN: the value is too short to hide behind a sentinel of the same length; its sentinel is longer (requests that carry it change length), and any response that contains the value is rewritten',
      leftOut('PIN'),
    ]);
  });

  it('AWS variables masked together are one credential; the secret key is never swapped back', () => {
    const env = { AWS_ACCESS_KEY_ID: 'AKIAIOSFODNN7EXAMPLE', AWS_SECRET_ACCESS_KEY: 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY', AWS_SESSION_TOKEN: 'IQoJb3JpZ2luX2VjEXAMPLETOKEN0123456789' };
    const names = ['AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY', 'AWS_SESSION_TOKEN'];
    const p = plan({ network: TLS, credentials: { envVars: names.map((name) => ({ name, mode: 'mask', injectHosts: ['s3.example.com'] })) } }, { env });
    expect(p.aws).toHaveLength(1);
    const [aws] = p.aws;
    expect(aws!.accessKeyId.sentinel).toMatch(/^AKIA[A-Z2-7]{16}$/);
    expect(aws!.secretAccessKey.sentinel).toHaveLength(40);
    expect(aws!.secretAccessKey.inject).toBe(false);
    expect(aws!.accessKeyId.inject).toBe(true);
    expect(aws!.sessionToken!.real).toBe(env.AWS_SESSION_TOKEN);
  });

  it('an AWS secret key is never injected, paired or not, its key id set or not (its sentinel may go nowhere)', () => {
    const SECRET = 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY';
    const injectable = (p: ReturnType<typeof plan>) => p.secrets.filter((s) => s.real === SECRET).map((s) => s.inject);
    // Alone; beside a key-id entry whose variable is unset; in an awsPairs entry whose key id is
    // unset; extracted from a larger value; under a name that says what it is, unpaired.
    expect(injectable(plan({ network: TLS, credentials: { envVars: [{ name: 'AWS_SECRET_ACCESS_KEY', mode: 'mask' }] } }, { env: { AWS_SECRET_ACCESS_KEY: SECRET } }))).toEqual([false]);
    expect(injectable(plan({ network: TLS, credentials: { envVars: [{ name: 'AWS_ACCESS_KEY_ID', mode: 'mask' }, { name: 'AWS_SECRET_ACCESS_KEY', mode: 'mask' }] } }, { env: { AWS_SECRET_ACCESS_KEY: SECRET } }))).toEqual([false]);
    expect(injectable(plan({ network: TLS, credentials: { envVars: [{ name: 'K', mode: 'mask' }, { name: 'S', mode: 'mask' }], awsPairs: [{ accessKeyIdVar: 'K', secretAccessKeyVar: 'S' }] } }, { env: { S: SECRET } }))).toEqual([false]);
    expect(injectable(plan({ network: TLS, credentials: { envVars: [{ name: 'AWS_SECRET_ACCESS_KEY', mode: 'mask', extract: 'key=(\\S+)' }] } }, { env: { AWS_SECRET_ACCESS_KEY: `key=${SECRET}` } }))).toEqual([false]);
    expect(injectable(plan({ network: TLS, credentials: { envVars: [{ name: 'CI_AWS_SECRET_ACCESS_KEY', mode: 'mask' }] } }, { env: { CI_AWS_SECRET_ACCESS_KEY: SECRET } }))).toEqual([false]);
    // A credentials file's profile with a secret and no key id.
    const fromFile = plan({ network: TLS, credentials: { files: [{ path: '~/.aws/credentials', mode: 'mask' }] } }, { files: new Map([['/home/u/.aws/credentials', file(`[half]\naws_secret_access_key = ${SECRET}\n`)]]) });
    expect(injectable(fromFile)).toEqual([false]);
    // Other secrets are injected as always.
    expect(plan({ network: TLS, credentials: { envVars: [{ name: 'AWS_SECRET_ACCESS_KEY', mode: 'mask' }, { name: 'GH_TOKEN', mode: 'mask' }] } }, { env: { AWS_SECRET_ACCESS_KEY: SECRET, GH_TOKEN: GH } }).secrets.find((s) => s.real === GH)!.inject).toBe(true);
  });

  it('awsPairs group other names, each of which must be a whole-value mask entry', () => {
    const env = { K: 'AKIAIOSFODNN7EXAMPLE', S: 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY' };
    const ok = plan({ network: TLS, credentials: { envVars: [{ name: 'K', mode: 'mask' }, { name: 'S', mode: 'mask' }], awsPairs: [{ accessKeyIdVar: 'K', secretAccessKeyVar: 'S' }] } }, { env });
    expect(ok.aws.map((a) => [a.accessKeyId.label, a.secretAccessKey.label])).toEqual([['K', 'S']]);
    const bad = plan({ network: TLS, credentials: { envVars: [{ name: 'K', mode: 'mask', extract: '(AKIA\\w+)' }], awsPairs: [{ accessKeyIdVar: 'K', secretAccessKeyVar: 'S' }] } }, { env });
    expect(bad.errors).toEqual([
      'credentials.awsPairs: K must be a credentials.envVars entry with mode "mask" masking the whole value (no extract or decode)',
      'credentials.awsPairs: S must be a credentials.envVars entry with mode "mask" masking the whole value (no extract or decode)',
    ]);
  });

  it('a masked AWS credentials file: each value masked in place, each profile one credential (shared with the variables holding the same pair)', () => {
    const text = '[default]\naws_access_key_id = AKIAIOSFODNN7EXAMPLE\naws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\nregion = eu-west-1\n\n[temp]\naws_access_key_id=ASIAIOSFODNN7EXAMPLE\naws_secret_access_key=tempSecretAccessKeytempSecretAccessKey00\naws_session_token = IQoJb3JpZ2luX2VjEXAMPLE+/token==\n\n[half]\naws_access_key_id = AKIAHALFHALFHALFHALF\n';
    const env = { AWS_ACCESS_KEY_ID: 'AKIAIOSFODNN7EXAMPLE', AWS_SECRET_ACCESS_KEY: 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY' };
    const p = plan(
      { network: TLS, credentials: { envVars: [{ name: 'AWS_ACCESS_KEY_ID', mode: 'mask' }, { name: 'AWS_SECRET_ACCESS_KEY', mode: 'mask' }], files: [{ path: '~/.aws/credentials', mode: 'mask', injectHosts: ['s3.example.com'] }] } },
      { env, files: new Map([['/home/u/.aws/credentials', file(text)]]) },
    );
    expect(p.errors).toEqual([]);
    const inside = p.maskFiles[0]!.content.toString();
    for (const real of ['AKIAIOSFODNN7EXAMPLE', 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY', 'ASIAIOSFODNN7EXAMPLE', 'tempSecretAccessKeytempSecretAccessKey00', 'IQoJb3JpZ2luX2VjEXAMPLE+/token==', 'AKIAHALFHALFHALFHALF']) expect(inside).not.toContain(real);
    expect(inside.replace(/= ?\S+/g, '=')).toBe(text.replace(/= ?\S+/g, '='));
    expect(p.aws).toHaveLength(2);
    const [fromEnv, temp] = p.aws;
    expect(inside).toContain(`aws_access_key_id = ${fromEnv!.accessKeyId.sentinel}\n`);
    expect(p.setEnv.find((c) => c.name === 'AWS_ACCESS_KEY_ID')!.value).toBe(fromEnv!.accessKeyId.sentinel);
    expect(temp!.accessKeyId.sentinel).toMatch(/^ASIA[A-Z2-7]{16}$/);
    expect(temp!.accessKeyId.label).toBe('/home/u/.aws/credentials [temp] aws_access_key_id');
    expect(temp!.accessKeyId.injectHosts).toEqual([expect.objectContaining({ text: 's3.example.com' })]);
    expect(temp!.secretAccessKey.inject).toBe(false);
    expect(temp!.sessionToken!.real).toBe('IQoJb3JpZ2luX2VjEXAMPLE+/token==');
    expect(inside).toContain(`aws_session_token = ${temp!.sessionToken!.sentinel}\n`);
    expect(p.warnings).toEqual([
      leftOut('AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY'),
      'credentials: /home/u/.aws/credentials: profile [half] has no aws_secret_access_key, so srt cannot re-sign its requests (its values are masked)',
    ]);
  });

  it('the secret key masked without its key id (and the reverse) is reported', () => {
    const secretOnly = plan({ network: TLS, credentials: { envVars: [{ name: 'AWS_SECRET_ACCESS_KEY', mode: 'mask' }] } }, { env: { AWS_SECRET_ACCESS_KEY: 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY' } });
    expect(secretOnly.warnings).toContain("credentials: AWS_SECRET_ACCESS_KEY is masked but AWS_ACCESS_KEY_ID is not: srt cannot re-sign AWS requests without masking the key id too, and an AWS secret key's sentinel may go nowhere (it is only ever used to sign)");
    const keyUnset = plan({ network: TLS, credentials: { envVars: [{ name: 'AWS_ACCESS_KEY_ID', mode: 'mask' }, { name: 'AWS_SECRET_ACCESS_KEY', mode: 'mask' }] } }, { env: { AWS_SECRET_ACCESS_KEY: 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY' } });
    expect(keyUnset.warnings).toContain("credentials: AWS_SECRET_ACCESS_KEY is masked but AWS_ACCESS_KEY_ID is not set: srt cannot re-sign AWS requests without the key id, and an AWS secret key's sentinel may go nowhere (it is only ever used to sign)");
    const keyOnly = plan({ network: TLS, credentials: { envVars: [{ name: 'AWS_ACCESS_KEY_ID', mode: 'mask' }] } }, { env: { AWS_ACCESS_KEY_ID: 'AKIAIOSFODNN7EXAMPLE', AWS_SECRET_ACCESS_KEY: 'x' } });
    expect(keyOnly.warnings).toContain('credentials: AWS_ACCESS_KEY_ID is masked but AWS_SECRET_ACCESS_KEY is not: the command sees the real secret key; mask it too');
  });
});
