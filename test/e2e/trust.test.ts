// SPEC §2.4 and invariant 7 end to end: a cloned repository's settings cannot undo the user's
// protections. Each attack runs the real srt on a real repository; the host is checked afterwards.
import { execFileSync } from 'node:child_process';
import { appendFileSync, existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeServer, listenOn } from './proxy-fixtures.js';
import { attempt, keyValues, results, SRT_BIN, srt, srtManaged, tempDir, writeTree } from './helpers.js';

const HOST = '127.0.0.2';
const tmp = tempDir('srt-e2e-trust-');
let server: http.Server;
let port: number;
let hits = 0;

beforeAll(async () => {
  server = http.createServer((_req, res) => { hits++; res.end('reached'); });
  port = await listenOn(server, HOST);
});
afterAll(async () => {
  await closeServer(server);
  tmp.cleanup();
});

let n = 0;
/** A home with a private key and AWS credentials, and a git repository to run in. */
function world(userSettings: object = {}) {
  const root = join(tmp.path, `w${n++}`);
  const home = join(root, 'home');
  const repo = join(root, 'repo');
  writeTree(home, {
    '.ssh/id_ed25519': 'PRIVATE-KEY-BYTES\n',
    '.aws/credentials': '[default]\naws_secret_access_key = AWS-SECRET-BYTES\n',
    '.srt/settings.json': JSON.stringify(userSettings),
  });
  mkdirSync(repo, { recursive: true });
  execFileSync('git', ['init', '-q', repo], { env: { PATH: process.env.PATH, HOME: home } });
  return { root, home, repo };
}

const project = (repo: string, doc: object) => writeTree(repo, { '.srt/settings.json': JSON.stringify(doc) });

describe('a repository cannot re-open what the user denies (even once approved)', () => {
  it('project allowRead/allowWrite on ~/.ssh, ~/.aws/credentials, ~ and / read and write nothing', async () => {
    const w = world({ filesystem: { denyRead: ['~/.ssh'] }, credentials: { files: [{ path: '~/.aws/credentials', mode: 'deny' }] } });
    project(w.repo, {
      filesystem: {
        allowRead: ['~/.ssh', '~/.ssh/id_ed25519', '~/.aws', '~/.aws/credentials'],
        allowWrite: ['~/.ssh', '~', '/', '../outside'],
      },
    });
    mkdirSync(join(w.root, 'outside'));
    const trusted = await srt(['trust'], { home: w.home, cwd: w.repo });
    expect(trusted.exitCode).toBe(0);
    const r = await srt(['-c', [
      'cat ~/.ssh/id_ed25519 ~/.aws/credentials 2>/dev/null',
      attempt('key', 'cat ~/.ssh/id_ed25519'),
      attempt('aws', 'cat ~/.aws/credentials | grep -q AWS-SECRET'),
      attempt('authorized_keys', 'echo ssh-ed25519 AAAA attacker >> ~/.ssh/authorized_keys'),
      attempt('home', 'touch ~/pwned'),
      attempt('root', 'touch /pwned-srt-trust-test'),
      attempt('outside', 'touch ../outside/x'),
      attempt('repo', 'touch ok'),
    ].join('\n')], { home: w.home, cwd: w.repo });
    expect(r.stdout).not.toContain('PRIVATE-KEY-BYTES');
    expect(r.stdout).not.toContain('AWS-SECRET-BYTES');
    expect(results(r.stdout)).toEqual({ key: 'no', aws: 'no', authorized_keys: 'no', home: 'no', root: 'no', outside: 'no', repo: 'yes' });
    // The host afterwards: nothing was written outside the repository.
    expect(existsSync(join(w.home, '.ssh', 'authorized_keys'))).toBe(false);
    expect(existsSync(join(w.home, 'pwned'))).toBe(false);
    expect(existsSync('/pwned-srt-trust-test')).toBe(false);
    expect(existsSync(join(w.root, 'outside', 'x'))).toBe(false);
    expect(existsSync(join(w.repo, 'ok'))).toBe(true);
    for (const entry of ['~/.ssh', '~', '/', '../outside']) {
      expect(r.stderr).toContain(`filesystem.allowWrite[${['~/.ssh', '~', '/', '../outside'].indexOf(entry)}]: ignored — project settings (which come with the repository) may only make paths inside the project root ${w.repo} writable (${entry})`);
    }
  });

  it('a managed denyRead is re-opened neither by user nor by project settings; a user deny by the user is', async () => {
    const w = world();
    writeTree(w.home, { '.config/corp/token': 'CORP-TOKEN\n', '.config/mine/notes': 'MY-NOTES\n' });
    const managed = join(w.root, 'managed');
    writeTree(managed, { 'managed-settings.json': JSON.stringify({ filesystem: { denyRead: [join(w.home, '.config/corp')] } }) });
    writeTree(w.home, { '.srt/settings.json': JSON.stringify({ filesystem: { denyRead: ['~/.config/mine'], allowRead: ['~/.config/corp/token', '~/.config/mine/notes'] } }) });
    project(w.repo, { filesystem: { allowRead: ['~/.config/corp', '~/.config/corp/token'] } });
    expect((await srt(['trust'], { home: w.home, cwd: w.repo })).exitCode).toBe(0);
    const r = await srtManaged(managed, ['-c', 'cat ~/.config/corp/token; cat ~/.config/mine/notes'], { home: w.home, cwd: w.repo, scratch: w.root });
    expect(r.stdout).not.toContain('CORP-TOKEN');
    expect(r.stdout).toContain('MY-NOTES');
  });
});

describe('an allow entry that a higher deny overrules is shown as ignored, with the deny that wins', () => {
  it('srt trust, srt config and srt check agree with the run: a project allowRead of a user-denied path opens nothing', async () => {
    const w = world();
    writeTree(w.home, { 'notes/todo': 'NOTES\n', '.ssh/known_hosts': 'KNOWN-HOSTS\n' });
    const user = join(w.home, '.srt', 'settings.json');
    writeFileSync(user, [
      '{',
      '  "filesystem": {',
      '    "denyRead": ["~/.ssh"],',
      '    "allowRead": ["~/.ssh/known_hosts"]',
      '  },',
      '  "credentials": {',
      '    "files": [{ "path": "~/.aws/credentials", "mode": "deny" }]',
      '  }',
      '}',
    ].join('\n'));
    // `keys` is a link in the repository: judged where it lands, inside ~/.ssh.
    symlinkSync(join(w.home, '.ssh'), join(w.repo, 'keys'));
    const file = join(w.repo, '.srt', 'settings.json');
    writeTree(w.repo, { '.srt/settings.json': [
      '{',
      '  "filesystem": {',
      '    "allowRead": [',
      '      "~/.ssh",',
      '      "~/.ssh/id_ed25519",',
      '      "keys",',
      '      "~/.aws/credentials",',
      '      "~/notes"',
      '    ]',
      '  }',
      '}',
    ].join('\n') });
    const wins = `overruled by filesystem.denyRead[0] "~/.ssh" in ${user}:3 (user): project settings never re-open what user settings deny`;
    const credential = `overruled by credential ${join(w.home, '.aws/credentials')} (user ${user}): no allow entry re-opens a credential file or srt's own secrets`;

    const trusted = await srt(['trust'], { home: w.home, cwd: w.repo });
    expect(trusted.exitCode).toBe(0);
    expect(trusted.stdout.split('\n')).toEqual([
      expect.stringMatching(new RegExp(`^approved ${file.replace(/[.]/g, '\\.')} \\(sha256 [0-9a-f]{12}\\): 1 allow entry now applies$`)),
      '  filesystem.allowRead: ~/notes',
      `  still ignored: filesystem.allowRead[0] ~/.ssh — ${wins}`,
      `  still ignored: filesystem.allowRead[1] ~/.ssh/id_ed25519 — ${wins}`,
      `  still ignored: filesystem.allowRead[2] keys — ${wins}`,
      `  still ignored: filesystem.allowRead[3] ~/.aws/credentials — ${credential}`,
    ]);

    const json = JSON.parse((await srt(['config', '--json'], { home: w.home, cwd: w.repo })).stdout);
    // Applied: the user's own re-opening and the project entry no deny covers.
    expect(json.settings.filesystem.allowRead.map((r: { original: string }) => r.original)).toEqual(['~/notes', '~/.ssh/known_hosts']);
    const userDeny = { entry: '~/.ssh', key: 'filesystem.denyRead[0]', source: { scope: 'user', file: user }, line: 3 };
    expect(json.ignored).toEqual([
      ...['~/.ssh', '~/.ssh/id_ed25519', 'keys'].map((value, i) => ({
        key: `filesystem.allowRead[${i}]`, value, source: { scope: 'project', file }, reason: wins, overruledBy: userDeny,
      })),
      { key: 'filesystem.allowRead[3]', value: '~/.aws/credentials', source: { scope: 'project', file }, reason: credential },
    ]);
    const text = (await srt(['config'], { home: w.home, cwd: w.repo })).stdout;
    expect(text).toContain(`filesystem.allowRead[2] keys  project .srt/settings.json: ${wins}`);
    expect(text).not.toMatch(/filesystem\.allowRead +[^\n]*\.ssh\/id_ed25519/);

    const check = await srt(['check', 'read', 'keys/id_ed25519'], { home: w.home, cwd: w.repo });
    expect(check.exitCode).toBe(1);
    expect(check.stdout).toContain(`entry: filesystem.denyRead[0] "~/.ssh" in ${user}:3 (user)`);
    for (const [i, entry] of ['~/.ssh', '~/.ssh/id_ed25519', 'keys'].entries()) {
      expect(check.stdout).toContain(`overruled: filesystem.allowRead[${i}] "${entry}" in ${file}:${4 + i} (project): project settings never re-open what user settings deny`);
    }
    const allowed = await srt(['check', 'read', '~/.ssh/known_hosts', '--json'], { home: w.home, cwd: w.repo });
    expect(JSON.parse(allowed.stdout)).toMatchObject({ allowed: true, rule: { entry: '~/.ssh/known_hosts', source: { scope: 'user' } } });

    // The run agrees: the overruled entries read nothing, the applied ones read.
    const r = await srt(['-c', 'cat ~/.ssh/id_ed25519 keys/id_ed25519 2>/dev/null; cat ~/notes/todo ~/.ssh/known_hosts'], { home: w.home, cwd: w.repo });
    expect(r.stdout).not.toContain('PRIVATE-KEY-BYTES');
    expect(r.stdout).toContain('NOTES');
    expect(r.stdout).toContain('KNOWN-HOSTS');
  });
});

describe('a repository cannot open host-local addresses (even once approved)', () => {
  it('project IP-literal allows for a host loopback port and the metadata address are refused; the same from the user works', async () => {
    const w = world();
    project(w.repo, { network: { allowedDomains: [`${HOST}:${port}`, '169.254.169.254', `localhost:${port}`] } });
    expect((await srt(['trust'], { home: w.home, cwd: w.repo })).exitCode).toBe(0);
    const before = hits;
    const curl = `curl -s --max-time 10 -o /dev/null -w '%{http_code}'`;
    const script = `echo loop=$(${curl} http://${HOST}:${port}/); echo meta=$(${curl} http://169.254.169.254/latest/meta-data/)`;
    const r = await srt(['-c', script], { home: w.home, cwd: w.repo });
    expect(keyValues(r.stdout)).toEqual({ loop: '403', meta: '403' });
    expect(hits).toBe(before);
    expect(r.stderr).toContain(`network.allowedDomains[0]: ignored — project settings (which come with the repository) may not open a loopback address (${HOST}:${port})`);
    expect(r.stderr).toContain('may not open a cloud metadata address (169.254.169.254)');
    expect(r.stderr).toContain(`srt: blocked ${HOST}:${port}`);
    // Control: the user may open it.
    const u = await srt(['--allow-domain', `${HOST}:${port}`, '-c', script], { home: w.home, cwd: w.repo });
    expect(keyValues(u.stdout).loop).toBe('200');
    expect(hits).toBe(before + 1);
  });
});

describe('approval: allow entries apply only to the approved content', () => {
  it('unapproved → refused with a warning; srt trust → applied; changed → refused again', async () => {
    const w = world();
    const file = join(w.repo, '.srt', 'settings.json');
    project(w.repo, { network: { allowedDomains: ['approved.test'] } });
    // approved.test resolves (instantly, from a hosts file) to an address the proxy's guard refuses:
    // "not in network.allowedDomains" vs "resolves only to blocked addresses" tells whether the
    // allow entry applied, without any outside network.
    const run = () => srtManaged(null, ['-c', "curl -s --max-time 10 -o /dev/null -w '%{http_code}' http://approved.test/"], {
      home: w.home, cwd: w.repo, scratch: w.root, hosts: '127.0.0.1 localhost\n127.0.0.9 approved.test\n',
    });
    const warning = `srt: warning: ${file}: its allow entries are not applied until you approve them: srt trust ${file}`;
    const unapproved = await run();
    expect(unapproved.stderr).toContain(warning);
    expect(unapproved.stderr).toContain('srt: blocked approved.test:80 — not in network.allowedDomains');

    const trusted = await srt(['trust', '.srt/settings.json'], { home: w.home, cwd: w.repo });
    expect(trusted.stdout).toBe(`approved ${file} (sha256 ${trusted.stdout.match(/sha256 ([0-9a-f]{12})/)![1]}): 1 allow entry now applies\n  network.allowedDomains: approved.test`);
    const approved = await run();
    expect(approved.stderr).not.toContain('not applied until you approve');
    expect(approved.stderr).not.toContain('not in network.allowedDomains');
    expect(approved.stderr).toMatch(/srt: blocked approved\.test:80 — .*resolves only to blocked addresses/);

    appendFileSync(file, '\n');
    const changed = await run();
    expect(changed.stderr).toContain(warning);
    expect(changed.stderr).toContain('not in network.allowedDomains');
    const list = await srt(['trust', '--list'], { home: w.home, cwd: w.repo });
    expect(list.stdout).toMatch(new RegExp(`^changed\\s+${file.replace(/[.]/g, '\\.')}`));
  });

  it('srt config and --dry-run list what is held back and why', async () => {
    const w = world();
    project(w.repo, { network: { allowedDomains: ['api.example'] }, filesystem: { allowWrite: ['build'] } });
    const json = JSON.parse((await srt(['config', '--json'], { home: w.home, cwd: w.repo })).stdout);
    expect(json.ignored.map((i: { key: string; value: string; reason: string }) => [i.key, i.value, i.reason.split(':')[0]])).toEqual([
      ['network.allowedDomains[0]', 'api.example', 'not approved'],
      ['filesystem.allowWrite[0]', 'build', 'not approved'],
    ]);
    expect(json.settings.network.allowedDomains).toEqual([]);
    const text = (await srt(['config'], { home: w.home, cwd: w.repo })).stdout;
    expect(text).toMatch(/network\.allowedDomains\[0\] api\.example {2}project \.srt\/settings\.json: not approved/);
    const dry = (await srt(['--dry-run', '--', 'true'], { home: w.home, cwd: w.repo })).stdout;
    expect(dry).toMatch(/# settings entries ignored[^\n]*\nnetwork\.allowedDomains\[0\] api\.example \(project \.srt\/settings\.json\): not approved/);
  });

  it('a command inside the sandbox cannot approve anything', async () => {
    const w = world();
    project(w.repo, { network: { allowedDomains: ['api.example'] } });
    const r = await srt(['--', process.execPath, SRT_BIN, 'trust'], { home: w.home, cwd: w.repo });
    expect(r.exitCode).toBe(125);
    expect(r.stderr).toContain('cannot record the approval');
    expect(r.stderr).toContain('inside an srt sandbox ~/.srt is read-only');
    expect(existsSync(join(w.home, '.srt', 'trusted.json'))).toBe(false);
  });
});

describe('the approvals record (~/.srt/trusted.json) is unreadable inside', () => {
  it('by default, with the home as the current directory, in allowWrite, and with filesystem.disabled; outside it is intact', async () => {
    const w = world();
    project(w.repo, { network: { allowedDomains: ['api.example'] } });
    expect((await srt(['trust'], { home: w.home, cwd: w.repo })).exitCode).toBe(0);
    const record = join(w.home, '.srt', 'trusted.json');
    const before = readFileSync(record, 'utf8');
    const probe = [
      'cat ~/.srt/trusted.json 2>/dev/null',
      attempt('read', 'cat ~/.srt/trusted.json'),
      attempt('write', 'cp /dev/null ~/.srt/trusted.json'),
      attempt('settings', 'cat ~/.srt/settings.json'),
    ].join('\n');
    for (const [what, user, cwd] of [
      ['default', {}, w.repo],
      ['cwd is the home', {}, w.home],
      ['allowWrite the home', { filesystem: { allowWrite: ['~'] } }, w.repo],
      ['filesystem.disabled', { filesystem: { disabled: true } }, w.repo],
    ] as const) {
      writeTree(w.home, { '.srt/settings.json': JSON.stringify(user) });
      const r = await srt(['-c', probe], { home: w.home, cwd });
      expect(r.stdout, what).not.toContain(w.repo);
      expect(results(r.stdout), what).toEqual({ read: 'no', write: 'no', settings: 'yes' });
    }
    // The control: outside, the record is there, unchanged, and still approves the project.
    expect(readFileSync(record, 'utf8')).toBe(before);
    expect(before).toContain(join(w.repo, '.srt', 'settings.json'));
  });
});

describe("what srt prints of a repository's file cannot forge or hide lines", () => {
  it('control sequences and newlines in entries are shown escaped by srt trust, srt config and the warnings', async () => {
    const w = world();
    const hide = '\x1b[1A\x1b[2K\rnothing to see';
    project(w.repo, { network: { allowedDomains: ['exfil.example'], deniedDomainReasons: { 'evil.example': `bad\nsrt: fake ${hide}` }, deniedDomains: ['evil.example'] }, filesystem: { allowRead: [`x${hide}`] } });
    const outputs = [
      await srt(['trust'], { home: w.home, cwd: w.repo }),
      await srt(['config'], { home: w.home, cwd: w.repo }),
      await srt(['-c', "curl -s -o /dev/null --max-time 5 http://evil.example/; true"], { home: w.home, cwd: w.repo }),
    ];
    for (const r of outputs) {
      expect(r.stdout + r.stderr).not.toMatch(/\x1b|\r/);
      expect(r.stdout + r.stderr).not.toMatch(/^srt: fake/m);
    }
    expect(outputs[0]!.stdout).toContain('exfil.example');
    expect(outputs[0]!.stdout).toContain('\\x1b[1A');
    expect(outputs[2]!.stderr).toContain('bad\\nsrt: fake');
  });
});

describe('a planted nested project root sheds no parent deny', () => {
  it.each([
    ['planted by an earlier sandboxed command', 'inside'],
    ['an empty .git made on the host', 'host'],
    ['a real repository created inside (it is the root; the parent denies still apply)', 'nested-repo'],
  ])('%s', async (_what, how) => {
    const w = world();
    project(w.repo, { filesystem: { denyRead: ['secret'] }, network: { deniedDomains: [HOST] } });
    writeTree(w.repo, { 'secret/key': 'PARENT-SECRET\n' });
    const planted = JSON.stringify({ filesystem: { allowRead: ['../secret'] }, network: { allowedDomains: [`${HOST}:${port}`] } });
    if (how === 'inside' || how === 'nested-repo') {
      const repo = how === 'inside' ? 'mkdir -p sub/.git' : 'git init -q sub';
      // A `.srt/` is protected at any depth in a directory that existed before the run: the
      // sandbox cannot plant one there (a run without the seccomp supervisor, on an old kernel,
      // could below the search depth; and a directory the run creates may hold one: made on the
      // host here, what matters is that it sheds nothing).
      mkdirSync(join(w.repo, 'sub'));
      const plant = await srt(['-c', `${repo} && mkdir -p sub/.srt && printf '%s' '${planted}' > sub/.srt/settings.json`], { home: w.home, cwd: w.repo });
      expect(plant.exitCode).not.toBe(0);
      expect(existsSync(join(w.repo, 'sub', '.srt'))).toBe(false);
      writeTree(w.repo, { 'sub/.srt/settings.json': planted });
    } else {
      mkdirSync(join(w.repo, 'sub', '.git'), { recursive: true });
      writeTree(w.repo, { 'sub/.srt/settings.json': planted });
    }
    const sub = join(w.repo, 'sub');
    // Even a user who approves the planted file gains nothing: it is not a project root.
    await srt(['trust', '.srt/settings.json'], { home: w.home, cwd: sub });
    const config = JSON.parse((await srt(['config', '--json'], { home: w.home, cwd: sub })).stdout);
    expect(config.root).toBe(how === 'nested-repo' ? sub : w.repo);
    const before = hits;
    const r = await srt(['-c', `cat ../secret/key; echo net=$(curl -s --max-time 10 -o /dev/null -w '%{http_code}' http://${HOST}:${port}/)`], { home: w.home, cwd: sub });
    expect(r.stdout).not.toContain('PARENT-SECRET');
    expect(keyValues(r.stdout).net).toBe('403');
    expect(hits).toBe(before);
  });
});

describe('srt trust: bad input is a clear error (exit 125), nothing recorded', () => {
  it.each([
    ['a missing file', ['trust', 'nope/.srt/settings.json'], /srt: .*nope\/\.srt\/settings\.json: no such file/],
    ['a file that is not a project settings file', ['trust', '/etc/passwd'], /srt: \/etc\/passwd: not a project or local settings file/],
    ['a settings file that does not validate', ['trust', 'bad/.srt/settings.json'], /network\.allowedDomain: unknown key \(did you mean allowedDomains\?\)/],
    ['a settings file that does not parse', ['trust', 'broken/.srt/settings.json'], /invalid JSON/],
    ['the user settings file', ['trust', '../home/.srt/settings.json'], /your user settings file/],
    ['no file here', ['trust'], /no project or local settings file applies in/],
    ['two actions at once', ['trust', '--list', '.srt/settings.json'], /give one of FILE, --list or --revoke FILE/],
  ])('%s', async (_what, args, message) => {
    const w = world();
    writeTree(w.repo, { 'bad/.srt/settings.json': '{"network": {"allowedDomain": []}}', 'broken/.srt/settings.json': '{"network": ' });
    const r = await srt(args, { home: w.home, cwd: w.repo });
    expect(r.exitCode).toBe(125);
    expect(r.stderr).toMatch(message);
    expect(existsSync(join(w.home, '.srt', 'trusted.json'))).toBe(false);
  });

  it('a corrupt trust record approves nothing, with a warning; trusting again repairs it; --revoke undoes', async () => {
    const w = world();
    project(w.repo, { network: { allowedDomains: ['api.example'] } });
    await srt(['trust'], { home: w.home, cwd: w.repo });
    writeFileSync(join(w.home, '.srt', 'trusted.json'), '{"version": 1, "approved": [{"path": "/", "sha256": "all"}]}');
    const r = await srt(['config', '--json'], { home: w.home, cwd: w.repo });
    expect(r.exitCode).toBe(0);
    expect(r.stderr).toContain('trusted.json: corrupt (malformed entry); treating every project settings file as not approved');
    expect(JSON.parse(r.stdout).settings.network.allowedDomains).toEqual([]);
    await srt(['trust'], { home: w.home, cwd: w.repo });
    expect(JSON.parse((await srt(['config', '--json'], { home: w.home, cwd: w.repo })).stdout).settings.network.allowedDomains).toHaveLength(1);
    const revoked = await srt(['trust', '--revoke', '.srt/settings.json'], { home: w.home, cwd: w.repo });
    expect(revoked.stdout).toBe(`revoked the approval of ${join(w.repo, '.srt', 'settings.json')}`);
    expect(JSON.parse((await srt(['config', '--json'], { home: w.home, cwd: w.repo })).stdout).settings.network.allowedDomains).toEqual([]);
    expect(JSON.parse(readFileSync(join(w.home, '.srt', 'trusted.json'), 'utf8')).approved).toEqual([]);
  });
});
