// `srt doctor` end to end: every check on a healthy machine, each dependency check flipping to
// error when the dependency is hidden (an outer mount or user namespace the test makes), the
// settings checks on a crafted tree, and stale state found, fixed and never a live run's.
import { Ajv2020 } from 'ajv/dist/2020.js';
import { execa } from 'execa';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { INIT_HELPER_PATH } from '../../src/paths.js';
import { NO_SUPERVISOR, REPO, SRT_BIN, srt, startBackground, stopStragglers, tempDir, writeTree } from './helpers.js';

const tmp = tempDir('srt-e2e-doctor-');
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

/** The documented shape of `srt doctor --json` (docs/cli.md "srt doctor"). */
const REPORT_SCHEMA = {
  type: 'object', additionalProperties: false, required: ['version', 'checks', 'summary'],
  properties: {
    version: { const: 1 },
    checks: {
      type: 'array',
      items: {
        type: 'object', additionalProperties: false, required: ['id', 'title', 'status', 'detail'],
        properties: {
          id: { type: 'string', pattern: '^[a-z][a-zA-Z0-9.-]*$' }, title: { type: 'string' }, detail: { type: 'string' },
          status: { enum: ['ok', 'warn', 'error'] }, fix: { type: 'string' },
          items: { type: 'array', items: { type: 'string' }, maxItems: 3 }, more: { type: 'integer', minimum: 1 },
        },
      },
    },
    summary: { type: 'object', additionalProperties: false, required: ['ok', 'warn', 'error'], properties: { ok: { type: 'integer' }, warn: { type: 'integer' }, error: { type: 'integer' } } },
  },
};
const validate = new Ajv2020({ strict: true }).compile(REPORT_SCHEMA);

interface Report { checks: Array<{ id: string; status: string; detail: string; fix?: string; items?: string[]; more?: number }>; summary: Record<string, number> }
const byId = (r: Report) => Object.fromEntries(r.checks.map((c) => [c.id, c]));

async function doctor(w: { home: string; cwd: string }, args: string[] = [], wrap: string[] = [], path = process.env.PATH, env: Record<string, string> = {}) {
  const r = await execa(wrap[0] ?? process.execPath, [...wrap.slice(1), ...(wrap.length ? [process.execPath] : []), SRT_BIN, 'doctor', '--json', ...args], {
    reject: false, cwd: w.cwd, extendEnv: false, env: { PATH: path, HOME: w.home, LANG: 'C.UTF-8', ...env }, timeout: 240_000,
  });
  const report = JSON.parse(r.stdout) as Report;
  expect(validate(report), JSON.stringify(validate.errors)).toBe(true);
  return { exitCode: r.exitCode, report, checks: byId(report) };
}

describe('srt doctor on this machine', () => {
  it('runs every check, exit 0, a valid versioned JSON report; the text form has a line per check and a summary', async () => {
    const w = world();
    const { exitCode, report, checks } = await doctor(w);
    expect(exitCode).toBe(0);
    for (const id of ['platform', 'bubblewrap', 'ripgrep', 'srt-init', 'landlock', 'user-namespaces', 'apparmor', 'settings.files', 'settings.approval',
      'settings.ignored', 'domains.spelling', 'credentials.injectHosts', 'credentials.masking', 'credentials.unset', 'credentials.loopback', 'srt.location', 'protected.landing', 'stale', 'code-cache']) {
      expect(checks[id], id).toBeDefined();
    }
    expect(checks.socat).toBeUndefined(); // the relays are the helper's own
    expect(report.summary.error).toBe(0);
    const text = await srt(['doctor'], { home: w.home, cwd: w.cwd });
    expect(text.exitCode).toBe(0);
    expect(text.stdout).toMatch(/^ok {4}bubblewrap: \/\S+bwrap \d+\.\d+/m);
    expect(text.stdout).toMatch(/^srt doctor: \d+ ok, \d+ warnings?, 0 errors$/m);
  });
});

describe('each dependency check flips to error when the dependency is hidden', () => {
  const hide = (path: string) => ['bwrap', '--dev-bind', '/', '/', '--ro-bind', '/dev/null', path, '--'];
  it.each([
    ['bubblewrap', ['/usr/bin/bwrap'], /not found/],
    ['ripgrep', ['/usr/bin/rg'], /not found/],
    ['srt-init', [INIT_HELPER_PATH], /srt-init/],
  ])('%s', async (id, paths, detail) => {
    const w = world();
    const { exitCode, checks } = await doctor(w, [], paths.flatMap(hide).slice(0, -1).concat('--'));
    expect(exitCode).toBe(1);
    expect(checks[id]!.status).toBe('error');
    expect(checks[id]!.detail).toMatch(detail);
    expect(checks[id]!.fix).toBeTruthy();
  });

  it('user namespaces disabled (in a user namespace the test makes)', async () => {
    const w = world();
    const r = await execa('unshare', ['-Ur', 'sh', '-c', `echo 0 > /proc/sys/user/max_user_namespaces && exec "${process.execPath}" "${SRT_BIN}" doctor --json`], {
      reject: false, cwd: w.cwd, extendEnv: false, env: { PATH: process.env.PATH, HOME: w.home },
    });
    expect(r.exitCode).toBe(1);
    const c = byId(JSON.parse(r.stdout) as Report)['user-namespaces']!;
    expect(c.status).toBe('error');
    expect(c.detail).toContain('user namespaces are disabled (user.max_user_namespaces=0)');
    expect(c.fix).toContain('sysctl -w user.max_user_namespaces=');
  });
});

describe('settings checks on a crafted tree', () => {
  it('reports every problem of every file, not just the first, and each warning once', async () => {
    const w = world();
    await execa('git', ['init', '-q', w.cwd]);
    writeTree(w.cwd, { '.srt/settings.json': JSON.stringify({ network: { allowedDomains: ['api.example'] }, allowNestedUserNamespaces: true }) });
    writeTree(w.home, {
      '.srt/settings.json': JSON.stringify({
        network: { allowedDomains: ['fe80::1:8080', 'api.github.com'] },
        credentials: { envVars: [
          { name: 'GH_TOKEN', mode: 'mask', injectHosts: ['api.github.com:443', 'nothere.example'] },
          { name: 'AWS_SECRET_ACCESS_KEY', mode: 'mask' },
        ] },
      }),
    });
    const { checks } = await doctor(w);
    expect(checks['settings.files']!.status).toBe('ok');
    expect(checks['settings.approval']).toMatchObject({ status: 'warn', items: [join(w.cwd, '.srt/settings.json')] });
    expect(checks['settings.approval']!.fix).toContain('srt trust');
    expect(checks['settings.ignored']!.status).toBe('warn');
    expect(checks['settings.ignored']!.items![0]).toContain('allowNestedUserNamespaces');
    expect(checks['domains.spelling']!.items![0]).toContain('fe80::1:8080');
    // injectHosts are canonical like allowedDomains (a port is fine); one names no allowed host.
    expect(checks['credentials.injectHosts']!.items).toEqual([
      'credentials: GH_TOKEN: injectHosts entry "nothere.example" is not covered by network.allowedDomains, so the proxy never connects there and the value is never sent',
    ]);
    expect(checks['credentials.masking']!.status).toBe('warn');
    expect(checks['credentials.masking']!.items).toContain("credentials: AWS_SECRET_ACCESS_KEY is masked but AWS_ACCESS_KEY_ID is not: srt cannot re-sign AWS requests without masking the key id too, and an AWS secret key's sentinel may go nowhere (it is only ever used to sign)");

    // Broken files: all of them reported, the run would refuse (exit 1).
    writeTree(w.home, { '.srt/settings.json': '{"network": {"allowedDomain": []}}', '.srt-settings.json': '{ nope' });
    const bad = await doctor(w);
    expect(bad.exitCode).toBe(1);
    const items = bad.checks['settings.files']!.items!.join('\n');
    expect(items).toContain('network.allowedDomain: unknown key');
    expect(items).toContain('.srt-settings.json:1:3: invalid JSON');
  });
});

// One derivation of the writable roots for a run and for doctor (writeRootsOf): an allowWrite
// entry through a symlink a sandbox could have planted makes nothing writable in a run, so srt's
// own files behind it are not in a path the command may write either.
describe('srt.location judges the writable roots a run has', () => {
  it("an allowWrite entry through a planted symlink to srt's own directory is left out, as a run leaves it out; the directory named itself is reported", async () => {
    const w = world();
    const link = join(w.cwd, 'tools');
    symlinkSync(REPO, link);
    const run = await srt(['--allow-write', link, '--', 'true'], { home: w.home, cwd: w.cwd });
    expect(run.stderr).toContain(`filesystem.allowWrite: ${link}: runs through the symlink ${link} -> ${REPO}; entry ignored`);
    const linked = await doctor(w, ['--allow-write', link]);
    expect(linked.checks['srt.location']!.status, linked.checks['srt.location']!.detail).toBe('ok');
    const named = await doctor(w, ['--allow-write', REPO]);
    expect(named.checks['srt.location']).toMatchObject({ status: 'warn', detail: expect.stringMatching(/^srt\b.* inside a path this policy lets the command write/) });
  });
});

describe('credential checks', () => {
  it('a masked variable that is not set, a whole-file mask of a multi-line file, the worst line first, and loopback inject hosts', async () => {
    const w = world();
    writeTree(w.home, {
      '.npmrc': 'registry=https://registry.npmjs.org/\n//registry.npmjs.org/:_authToken=npm_Qm9lR2VzdFRva2VuRm9yU3J0MDEyMzQ1Njc4\n',
      '.srt/settings.json': JSON.stringify({
        network: { allowedDomains: ['localhost', 'localhost:8443', 'api.github.com', '*.example.com'], tlsTerminate: {} },
        credentials: {
          envVars: [
            { name: 'LOCAL_TOKEN', mode: 'mask', injectHosts: ['localhost:9443'] },
            { name: 'OK_TOKEN', mode: 'mask', injectHosts: ['localhost:8443'] },
            { name: 'MISSING_TOKEN', mode: 'mask' },
            { name: 'AWS_SESSION_TOKEN', mode: 'mask' },
            { name: 'PIN', mode: 'mask', injectHosts: ['api.github.com'] },
            { name: 'AWS_ACCESS_KEY_ID', mode: 'mask', injectHosts: ['api.github.com'] },
          ],
          files: [{ path: '~/.npmrc', mode: 'mask', injectHosts: ['api.github.com'] }],
        },
      }),
    });
    const env = {
      LOCAL_TOKEN: 'local-token-0123456789abcdef', OK_TOKEN: 'ok-token-0123456789abcdef', GITHUB_TOKEN: 'ok-token-0123456789abcdef', PIN: '1234',
      AWS_ACCESS_KEY_ID: 'AKIAIOSFODNN7EXAMPLE', AWS_SECRET_ACCESS_KEY: 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY',
    };
    const { checks } = await doctor(w, [], [], process.env.PATH, env);
    // The plan finds three other warnings before it (a multi-line file masked whole, a short
    // value, a copy in GITHUB_TOKEN); the one that says the command sees a real value is named
    // first all the same, and the list is cut after three.
    const masking = checks['credentials.masking']!;
    expect(masking.status).toBe('warn');
    expect(masking.items![0]).toBe('credentials: AWS_ACCESS_KEY_ID is masked but AWS_SECRET_ACCESS_KEY is not: the command sees the real secret key; mask it too');
    expect(masking.more).toBe(1);
    expect(masking.items!.slice(1).join('\n')).toContain('/.npmrc: masked whole (no extract) although it has several lines');
    // The session token of an AWS pair may well be unset; another masked variable is worth a look.
    expect(checks['credentials.unset']).toMatchObject({ status: 'warn', items: ['MISSING_TOKEN'] });
    expect(checks['credentials.loopback']).toMatchObject({
      status: 'warn',
      items: [`LOCAL_TOKEN → localhost:9443: no forwarded port serves it (allow it with its port, e.g. "localhost:9443", as user, CLI or managed settings${process.getuid?.() === 0 ? '' : '; ports below 1024 only when srt runs as root'}), so a client that keeps loopback direct (NO_PROXY) cannot reach it`],
    });

    const text = await execa(process.execPath, [SRT_BIN, 'doctor'], { reject: false, cwd: w.cwd, extendEnv: false, env: { PATH: process.env.PATH, HOME: w.home, LANG: 'C.UTF-8', ...env } });
    expect(text.stdout).toContain('warn  masked variables: 1 masked variable is not set here, so nothing is masked for it');

    // Allowed with its port (forwarded) and TLS terminated: ok; in excludeDomains: never injected.
    writeTree(w.home, { '.srt/settings.json': JSON.stringify({
      network: { allowedDomains: ['localhost:9443', 'localhost:8443'], tlsTerminate: { excludeDomains: ['localhost:8443'] } },
      credentials: { envVars: [{ name: 'LOCAL_TOKEN', mode: 'mask', injectHosts: ['localhost:9443'] }, { name: 'OK_TOKEN', mode: 'mask', injectHosts: ['localhost:8443'] }] },
    }) });
    const second = await doctor(w, [], [], process.env.PATH, env);
    expect(second.checks['credentials.loopback']).toMatchObject({
      status: 'warn',
      items: ['OK_TOKEN → localhost:8443: in network.tlsTerminate.excludeDomains, so its TLS is never terminated: nothing is injected there'],
    });
    expect(second.checks['credentials.unset']!.status).toBe('ok');
  }, 120_000);
});

describe('what killed runs leave behind', () => {
  it('is reported and removed by --fix, while a live run keeps its own; --dry-run changes nothing', async () => {
    const w = world();
    // A live run in another directory, which must keep everything (it started first: a run
    // starting later would clear the dead run's leftovers itself).
    const other = join(w.root, 'other');
    mkdirSync(other);
    // Placeholders exist only without the seccomp supervisor (an old kernel): forced here.
    const live = await startBackground(['-c', 'echo started; echo ready; sleep 60'], w.home, other, NO_SUPERVISOR);
    const liveFiles = readdirSync(other);
    // A run killed with SIGKILL while its placeholders exist (a directory outside a repository:
    // the placeholders include .git, .bashrc, …).
    const dead = await startBackground(['-c', 'echo started; echo ready; sleep 60'], w.home, w.cwd, NO_SUPERVISOR);
    dead.child.kill('SIGKILL');
    await dead.exit;
    const placeholders = readdirSync(w.cwd);
    expect(placeholders.length).toBeGreaterThan(0);
    const liveRuns = readdirSync(join(w.home, '.srt', 'run')).filter((d) => d.startsWith(`${live.child.pid}-`));
    expect(liveRuns).toHaveLength(1);

    const stateDir = join(w.home, '.srt', 'state');
    const snapshot = () => readdirSync(stateDir).sort().map((f) => `${f}:${readFileSync(join(stateDir, f), 'utf8')}`);
    const before = snapshot();
    await srt(['--dry-run', '--', 'true'], { home: w.home, cwd: w.cwd });
    expect(snapshot()).toEqual(before);

    const found = await doctor(w);
    expect(found.checks.stale!.status).toBe('warn');
    expect(found.checks.stale!.detail).toMatch(/stale sandbox mask file/);
    expect(found.checks.stale!.items!.length).toBe(3);
    expect(found.checks.stale!.more).toBeGreaterThan(0);
    expect(readdirSync(w.cwd)).toEqual(placeholders); // reporting changes nothing

    const fixed = await doctor(w, ['--fix']);
    expect(fixed.checks.stale!.status).toBe('ok');
    expect(readdirSync(w.cwd)).toEqual([]);
    expect(readdirSync(other)).toEqual(liveFiles);
    expect(existsSync(join(w.home, '.srt', 'run', liveRuns[0]!))).toBe(true);
    expect(statSync(join(w.home, '.srt', 'run', liveRuns[0]!)).isDirectory()).toBe(true);
    live.child.kill('SIGTERM');
    await live.exit;
    expect((await doctor(w)).checks.stale!.status).toBe('ok');
    writeFileSync(join(w.cwd, 'x'), ''); // the work tree is usable again
  });
});

describe('srt doctor --tools', () => {
  const tools = (r: Report) => r.checks.filter((c) => c.id.startsWith('tools.'));
  it('tries each installed client through a throwaway sandbox: curl, git, node, python3 and ssh through git use the proxy', async () => {
    const w = world();
    // A TMPDIR of this test's own: other runs on the machine make and remove probe directories too.
    const tmp = join(w.root, 'tmp');
    mkdirSync(tmp);
    const tmpLeft = () => readdirSync(tmp).filter((f) => f.startsWith('srt-doctor-tools-')).length;
    const before = tmpLeft();
    const { exitCode, checks, report } = await doctor(w, ['--tools'], [], process.env.PATH, { TMPDIR: tmp });
    expect(exitCode).toBe(0);
    for (const id of ['tools.curl', 'tools.git', 'tools.node', 'tools.python3', 'tools.ssh']) {
      expect(checks[id], JSON.stringify(tools(report))).toMatchObject({ status: 'ok', detail: "reached the probe through srt's proxy" });
    }
    expect(tmpLeft()).toBe(before); // the probe's throwaway directory is gone
  }, 240_000);

  it('with TLS termination on, a client trusts srt\'s CA (npm too: srt sets npm_config_cafile)', async () => {
    const w = world();
    writeTree(w.home, { '.srt/settings.json': JSON.stringify({ network: { tlsTerminate: {} } }) });
    const { checks, report } = await doctor(w, ['--tools']);
    for (const id of ['tools.curl', 'tools.git', 'tools.node', 'tools.python3', 'tools.npm']) {
      expect(checks[id], JSON.stringify(tools(report))).toMatchObject({ status: 'ok', detail: "reached the probe through srt's proxy, trusting srt's CA" });
    }
  }, 240_000);

  it('reports a client that ignores the proxy (raw sockets), one that never connects, and one that does not trust srt\'s CA, each with its fix', async () => {
    const w = world();
    const shims = join(w.root, 'shims');
    writeTree(shims, {
      // A `curl` that opens its own socket to the probe: reachable only as a forwarded loopback port.
      curl: '#!/bin/sh\nexec python3 -c \'import socket, os, urllib.parse as u; p = u.urlsplit(os.environ["SRT_DOCTOR_URL"]); s = socket.create_connection((p.hostname, p.port), timeout=10); s.sendall(b"GET " + p.path.encode() + b" HTTP/1.0\\r\\n\\r\\n"); s.recv(100)\'\n',
      pip: '#!/bin/sh\necho "pip: no network today" >&2; exit 1\n',
    });
    execFileSync('chmod', ['+x', join(shims, 'curl'), join(shims, 'pip')]);
    const direct = await doctor(w, ['--tools'], [], `${shims}:${process.env.PATH}`);
    expect(direct.exitCode).toBe(0); // warnings, not errors
    expect(direct.checks['tools.curl']).toMatchObject({ status: 'warn', detail: expect.stringContaining('connects directly, not through srt\'s proxy'), fix: expect.stringContaining('.curlrc') });
    expect(direct.checks['tools.pip']).toMatchObject({ status: 'warn', detail: "does not use srt's proxy (it never reached it): pip: no network today", fix: expect.stringContaining('pip config') });
    expect(direct.checks['tools.node']!.status).toBe('ok');

    // With termination on, a `curl` that trusts only the system roots reaches the proxy, not the probe.
    writeTree(w.home, { '.srt/settings.json': JSON.stringify({ network: { tlsTerminate: {} } }) });
    writeTree(shims, { curl: '#!/bin/sh\nexec /usr/bin/curl --cacert /etc/ssl/certs/ca-certificates.crt "$@"\n' });
    const untrusting = await doctor(w, ['--tools'], [], `${shims}:${process.env.PATH}`);
    expect(untrusting.checks['tools.curl']).toMatchObject({ status: 'warn', detail: expect.stringMatching(/^reached srt's proxy but not the probe: it does not trust srt's CA/), fix: expect.stringContaining('cacert') });
  }, 240_000);

  it('is not tried when a sandbox cannot start: one error says why', async () => {
    const w = world();
    writeTree(w.cwd, { '.srt/settings.json': '{ not json' });
    const { exitCode, checks } = await doctor(w, ['--tools']);
    expect(exitCode).toBe(1);
    expect(checks.tools).toMatchObject({ status: 'error', detail: expect.stringMatching(/^not tried: settings files: /) });
  });
});
