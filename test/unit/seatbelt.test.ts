// The Seatbelt profile: golden profiles for representative policies, each checked structurally
// (test/unit/sbpl-checker.ts) and evaluated against the access model on a table of paths, with
// every regex matched by a real POSIX ERE engine (GNU grep -E).
import { dirname } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Policy } from '../../src/policy.js';
import { mayRead, mayWrite } from '../../src/profiles/verdicts.js';
import {
  buildSeatbeltProfile, HTTP_PROXY_PARAM, SOCKS_PROXY_PARAM, type SeatbeltFacts, type SeatbeltPlan,
} from '../../src/profiles/seatbelt.js';
import { allowDomains, cli, credentialFile, Landings, local, managed, policy, project, user } from './policy-fixtures.js';
import { loadProfile, primeRegexes, type Query } from './sbpl-checker.js';

const HOME = '/Users/ann';
const CWD = `${HOME}/proj`;
const RUN = `${HOME}/.srt/run/4242-abc`;

function facts(more: Partial<SeatbeltFacts> = {}): SeatbeltFacts {
  return {
    landings: new Landings(), tmpDir: `${RUN}/tmp`, runDir: RUN, runRoot: `${HOME}/.srt/run`,
    runtimeFiles: [{ path: '/opt/srt/dist/proxy/node-preload.cjs' }],
    cwdIsRepository: true, cwdGitFile: false, terminals: ['/dev/ttys003'], managedDir: '/Library/Application Support/srt', logTag: 'srt-0123456789ab',
    ...more,
  };
}

const RUNTIME: [string, string][] = [[HTTP_PROXY_PARAM, 'localhost:49152'], [SOCKS_PROXY_PARAM, 'localhost:49153']];

function load(plan: SeatbeltPlan) {
  return loadProfile(plan.profile, [...plan.params, ...RUNTIME]);
}

/** The profile as reviewed: text, then every -D value (JSON-quoted so odd characters show). */
function golden(plan: SeatbeltPlan): string {
  const params = [...plan.params, ...plan.runtimeParams.map((n) => [n, 'localhost:<port of the running proxy>'] as [string, string])];
  return `${plan.profile}\n;; sandbox-exec -D parameters\n${params.map(([k, v]) => `;; -D ${k}=${JSON.stringify(v)}`).join('\n')}\n`;
}

type Kind = 'DIRECTORY' | 'REGULAR-FILE';

/** Paths around every rule of the plan: the base, inside it, beside it, above it, protected names below it. */
function pathsAround(plan: SeatbeltPlan, extra: string[] = []): string[] {
  const out = new Set<string>(extra);
  const rules = plan.rules;
  for (const r of [...rules.readDenies, ...rules.readAllows, ...rules.writeRoots, ...rules.writeDenies, ...rules.ownWritable]) {
    const b = r.region.base;
    for (const p of [b, `${b}/x`, `${b}/x/y.pem`, `${b}x`, dirname(b), `${b}/.git/hooks/pre-commit`, `${b}/sub/.vscode/settings.json`,
      `${b}/a/b/.bashrc`, `${b}/k.pem`, `${b}/d/k.pem`, `${b}/.env`, `${b}/pkg/.git/config`]) out.add(p.replace(/\/+/g, '/'));
  }
  return [...out].filter((p) => !p.startsWith('/dev'));
}

/** SBPL and the access model agree on reading and writing every path. */
function expectAgreement(plan: SeatbeltPlan, paths: string[]): void {
  const ev = load(plan);
  ev.prime(paths);
  const diffs: string[] = [];
  for (const path of paths) {
    const type: Kind = /\.\w+$/.test(path) ? 'REGULAR-FILE' : 'DIRECTORY';
    const read = ev.allows({ op: 'file-read-data', path, type });
    const write = ev.allows({ op: 'file-write-data', path, type }) && ev.allows({ op: 'file-write-create', path, type });
    const model = { read: mayRead(plan.rules, path).allowed, write: mayWrite(plan.rules, path).allowed };
    // A regular file named .git is read-only in the profile beyond the model (a narrowing deny).
    const modelWrite = model.write && !(type === 'REGULAR-FILE' && /\/\.git$/.test(path));
    if (read !== model.read || write !== modelWrite) diffs.push(`${path}: profile read=${read} write=${write}, model read=${model.read} write=${modelWrite}`);
  }
  expect(diffs).toEqual([]);
}

const scenarios: Record<string, () => SeatbeltPlan> = {
  default: () => buildSeatbeltProfile(policy(), facts()),
  'deny-home-allow-project': () => buildSeatbeltProfile(policy({
    denyRead: [user(HOME, '~/')],
    allowRead: [project(CWD, '.'), user(`${HOME}/.gitconfig`, '~/.gitconfig')],
    allowWrite: [user(`${HOME}/.cache/npm`, '~/.cache/npm')],
  }), facts()),
  'project-allow-vs-user-deny': () => buildSeatbeltProfile(policy({
    denyRead: [user(`${HOME}/.aws`, '~/.aws'), managed(`${HOME}/secrets`, '~/secrets'), project(`${CWD}/private`, 'private')],
    allowRead: [project(`${HOME}/.aws/config`, '~/.aws/config'), local(`${HOME}/secrets/shared`, '~/secrets/shared'), project(`${CWD}/private/public`, 'private/public')],
    allowWrite: [project(`${CWD}/build`, 'build')],
  }), facts()),
  'protected-paths': () => buildSeatbeltProfile(policy({
    allowWrite: [user(HOME, '~'), cli('/Volumes/data/work')],
    denyWrite: [user(`${CWD}/.env`, '.env'), cli(`${CWD}/config/**/*.key`, 'config/**/*.key')],
  }, { cwd: `${HOME}/wt/feature`, root: `${HOME}/wt/feature` }), facts({
    cwdIsRepository: true, cwdGitFile: true, worktree: { commonDir: `${CWD}/.git`, gitDir: `${CWD}/.git/worktrees/feature` },
  })),
  'not-a-repository': () => buildSeatbeltProfile(policy({}, { cwd: '/private/tmp/scratch', root: '/private/tmp/scratch' }), facts({ cwdIsRepository: false })),
  globs: () => buildSeatbeltProfile(policy({
    denyRead: [user(`${HOME}/**/*.pem`, '~/**/*.pem'), user(`${CWD}/secrets/*/key?[0-9].txt`, 'secrets/*/key?[0-9].txt')],
    allowRead: [user(`${CWD}/secrets/ok`, 'secrets/ok'), user(`${HOME}/**/*.pem`, '~/**/*.pem (as allow)')],
    denyWrite: [user(`${CWD}/**/*.lock`, '**/*.lock')],
  }), facts({ globTargets: new Map([[`${CWD}/**/*.lock`, [`${HOME}/data/real-lockfile`]]]) })),
  credentials: () => buildSeatbeltProfile(policy({ allowRead: [managed(`${HOME}/.ssh`, '~/.ssh')] }, {
    credentials: { envVars: [], files: [credentialFile(`${HOME}/.ssh`), credentialFile(`${HOME}/.config/gh/hosts.yml`, 'mask')], awsPairs: [], sigv4: { presigned: 'deny', streaming: 'deny', sigv4a: 'deny', mint: 'deny' }, allowPlaintextInject: false },
  }), facts()),
  'unix-sockets': () => buildSeatbeltProfile(policy({}, {}, { allowUnixSockets: ['/var/run/docker.sock', `${HOME}/.colima/default/docker.sock`] }),
    facts({ landings: new Landings([['/var/run/docker.sock', { real: '/private/var/run/docker.sock', kind: 'file' }]]) })),
  'all-unix-sockets': () => buildSeatbeltProfile(policy({}, {}, { allowAllUnixSockets: true }), facts()),
  'every-rule-group': () => buildSeatbeltProfile(policy({}, {
    allowPty: true, allowAppleEvents: true, enableWeakerNetworkIsolation: true,
  }, { allowedDomains: allowDomains('github.com', 'localhost:5432', '127.0.0.1:6379', '[::1]:8080', 'localhost') }), facts()),
  'local-binding-and-exposed-ports': () => buildSeatbeltProfile(policy({}, {}, {
    allowLocalBinding: true, exposePorts: [{ hostAddress: '127.0.0.1', hostPort: 3000, sandboxPort: 3000, source: { scope: 'user' } }, { hostAddress: '127.0.0.1', hostPort: 8080, sandboxPort: 80, source: { scope: 'user' } }],
  }), facts()),
  'filesystem-disabled': () => buildSeatbeltProfile(policy({ disabled: true }, {
    credentials: { envVars: [], files: [credentialFile(`${HOME}/.netrc`)], awsPairs: [], sigv4: { presigned: 'deny', streaming: 'deny', sigv4a: 'deny', mint: 'deny' }, allowPlaintextInject: false },
  }), facts()),
  'hostile-paths': () => buildSeatbeltProfile(policy({
    denyRead: [user(`${HOME}/we"ird) (allow default)\n;x`, 'hostile')],
    allowWrite: [cli(`${HOME}/a b/(c)/[d]/é 日本/$x^y.+?{z}|w\\`, 'literal', false)],
  }, { cwd: `${HOME}/pro"j (1)`, root: `${HOME}/pro"j (1)` }), facts()),
};

describe('Seatbelt profile: golden profiles', () => {
  for (const [name, build] of Object.entries(scenarios)) {
    it(name, async () => {
      const plan = build();
      load(plan); // parses, only known operations and filters, every param supplied, every regex POSIX ERE
      await expect(golden(plan)).toMatchFileSnapshot(`golden/seatbelt/${name}.sb`);
    });
  }
});

describe('Seatbelt profile agrees with the access model', () => {
  for (const [name, build] of Object.entries(scenarios)) {
    it(name, () => {
      const plan = build();
      expectAgreement(plan, pathsAround(plan, ['/etc/hosts', '/usr/bin/git', '/private/tmp/x', `${HOME}/Documents/a.txt`]));
    });
  }
});

describe('Seatbelt profile semantics', () => {
  const q = (op: string, path: string, type: Query['type'] = 'REGULAR-FILE'): Query => ({ op, path, type });

  it('starts from (deny default), tags its denials for the log, and keeps every path out of the text', () => {
    const plan = scenarios['hostile-paths']!();
    expect(plan.profile.startsWith('(version 1)\n')).toBe(true);
    expect(plan.profile).toContain('(deny default (with message "srt-0123456789ab"))');
    for (const p of [HOME, 'é 日本', 'we"ird']) expect(plan.profile.replace(/^\s*;.*$/gm, '')).not.toContain(p);
    // A comment is one line whatever the path holds: the newline in the entry cannot start a rule.
    expect(plan.profile).toContain('; denyRead hostile');
    expect(plan.profile).not.toMatch(/^;x/m);
    const ev = load(plan);
    expect(ev.allows(q('file-read-data', `${HOME}/we"ird) (allow default)\n;x/f`))).toBe(false);
    expect(ev.allows(q('file-write-create', `${HOME}/a b/(c)/[d]/é 日本/$x^y.+?{z}|w\\/new`))).toBe(true);
    expect(ev.allows(q('file-write-create', `${HOME}/a b/(c)/[d]/é 日本/$x^y.+?{z}|w/new`))).toBe(false);
  });

  it('denyRead ~ with the project re-opened: the project reads and writes, the rest of home does not', () => {
    const ev = load(scenarios['deny-home-allow-project']!());
    expect(ev.allows(q('file-read-data', `${HOME}/.ssh/id_ed25519`))).toBe(false);
    expect(ev.allows(q('file-read-data', `${CWD}/src/index.ts`))).toBe(true);
    expect(ev.allows(q('file-read-data', `${HOME}/.gitconfig`))).toBe(true);
    expect(ev.allows(q('file-write-data', `${HOME}/.cache/npm/_cacache/x`))).toBe(true);
    expect(ev.allows(q('file-write-data', `${HOME}/.cache/other`))).toBe(false);
    // realpath() through the hidden home still works: stat of directories, not their listing.
    expect(ev.allows(q('file-read-metadata', HOME, 'DIRECTORY'))).toBe(true);
    expect(ev.allows(q('file-read-data', HOME, 'DIRECTORY'))).toBe(false);
    expect(ev.allows(q('file-read-metadata', `${HOME}/.ssh/id_ed25519`))).toBe(false);
    // Another run's directory is hidden, this run's is not.
    expect(ev.allows(q('file-read-data', `${HOME}/.srt/run/999-zzz/tmp/secret`))).toBe(false);
    expect(ev.allows(q('file-read-data', `${RUN}/tmp/mine`))).toBe(true);
  });

  it('scope trust: a repository allow never re-opens user or managed denies; its own deny it may', () => {
    const ev = load(scenarios['project-allow-vs-user-deny']!());
    expect(ev.allows(q('file-read-data', `${HOME}/.aws/config`))).toBe(false);
    expect(ev.allows(q('file-read-data', `${HOME}/secrets/shared/a`))).toBe(false);
    expect(ev.allows(q('file-read-data', `${CWD}/private/x`))).toBe(false);
    expect(ev.allows(q('file-read-data', `${CWD}/private/public/x`))).toBe(true);
    expect(ev.allows(q('file-write-data', `${CWD}/build/out.js`))).toBe(true);
  });

  it('credential files stay hidden, even against a managed allowRead of the same path', () => {
    const ev = load(scenarios.credentials!());
    expect(ev.allows(q('file-read-data', `${HOME}/.ssh/id_rsa`))).toBe(false);
    expect(ev.allows(q('file-read-data', `${HOME}/.config/gh/hosts.yml`))).toBe(false);
    expect(ev.allows(q('file-read-data', `${HOME}/.config/gh/config.yml`))).toBe(true);
  });

  it('protected paths are unwritable at any depth, existing or not, in every case spelling; TMPDIR stays writable', () => {
    const plan = scenarios['protected-paths']!();
    const ev = load(plan);
    const wt = `${HOME}/wt/feature`;
    for (const p of [
      `${wt}/.vscode/settings.json`, `${wt}/a/b/c/d/.idea/workspace.xml`, `${HOME}/x/.bashrc`, `${HOME}/.zshrc`,
      `${wt}/sub/.git/hooks/pre-commit`, `${wt}/sub/.GIT/HOOKS/pre-commit`, `${wt}/.Vscode/tasks.json`, `${HOME}/.ssh/authorized_keys`,
      `${HOME}/Library/LaunchAgents/evil.plist`, `${HOME}/.config/git/config`, `${HOME}/.srt/settings.json`, `${HOME}/.srt-settings.json`,
      `${CWD}/.git/config`, `${CWD}/.git/hooks/post-checkout`, `${CWD}/.git/worktrees/feature/commondir`, `${CWD}/.git/worktrees/feature/gitdir`,
      `${CWD}/.git/modules/lib/hooks/pre-commit`, `${wt}/.git`, `${CWD}/.env`, `${CWD}/config/a/b/server.key`, `${CWD}/config/server.KEY`,
      `/Volumes/data/work/x.code-workspace`, `/Volumes/data/work/.mcp.json`,
    ]) expect(ev.allows(q('file-write-create', p)), p).toBe(false);
    for (const p of [`${wt}/src/a.ts`, `${CWD}/.git/worktrees/feature/index`, `${CWD}/.git/objects/ab/cdef`, `${HOME}/notes.txt`, `${RUN}/tmp/.bashrc`, `${RUN}/tmp/r/.git/hooks/x`]) {
      expect(ev.allows(q('file-write-create', p)), p).toBe(true);
    }
    expect(plan.warnings.join('\n')).toContain('the whole home directory /Users/ann is writable');
  });

  it('rename guards: the directories protected paths hang from cannot be moved away; others can', () => {
    const ev = load(scenarios['protected-paths']!());
    const wt = `${HOME}/wt/feature`;
    for (const d of [`${wt}/sub/.git`, `${CWD}/.git/modules`, `${CWD}/.git/modules/lib`, `${CWD}/.git/worktrees/feature`, `${HOME}/.config`, `${CWD}/config`, `${CWD}/config/a`]) {
      expect(ev.allows(q('file-write-unlink', d, 'DIRECTORY')), d).toBe(false);
    }
    for (const d of [`${wt}/src`, `${HOME}/Downloads`, `${RUN}/tmp/r/.git`]) expect(ev.allows(q('file-write-unlink', d, 'DIRECTORY')), d).toBe(true);
    // A file named like a guarded directory is not a directory: it can be removed.
    expect(ev.allows(q('file-write-unlink', `${wt}/sub/.git/objects/ab/cd`, 'REGULAR-FILE'))).toBe(true);
    // The current directory's .git file (linked worktree) is read-only, and so is any existing .git file.
    expect(ev.allows(q('file-write-data', `${wt}/.git`, 'REGULAR-FILE'))).toBe(false);
    expect(ev.allows(q('file-write-data', `${wt}/vendor/lib/.git`, 'REGULAR-FILE'))).toBe(false);
  });

  it('outside a repository, .git and a bare repository cannot be created in the current directory', () => {
    const ev = load(scenarios['not-a-repository']!());
    for (const p of ['.git', '.git/config', 'HEAD', 'objects/ab', 'refs/heads/x']) expect(ev.allows(q('file-write-create', `/private/tmp/scratch/${p}`))).toBe(false);
    expect(ev.allows(q('file-write-create', '/private/tmp/scratch/README'))).toBe(true);
  });

  it('globs: anchored, `*` within a segment, `**` across, classes and `?`; a glob allow re-opens only the same glob', () => {
    const plan = scenarios.globs!();
    const ev = load(plan);
    expect(ev.allows(q('file-read-data', `${HOME}/a/b/server.pem`))).toBe(true); // the same glob re-opens it (as allow)
    expect(ev.allows(q('file-read-data', `${CWD}/secrets/x/keyA7.txt`))).toBe(false);
    expect(ev.allows(q('file-read-data', `${CWD}/secrets/x/keyA77.txt`))).toBe(true);
    expect(ev.allows(q('file-read-data', `${CWD}/secrets/x/y/keyA7.txt`))).toBe(true);
    // A symlink matching a deny glob is covered where it leads.
    expect(ev.allows(q('file-write-data', `${CWD}/yarn.lock`))).toBe(false);
    expect(plan.rules.writeDenies.some((d) => d.region.base === `${HOME}/data/real-lockfile`)).toBe(true);
    // The deny names a deeper path than the allow: the more specific rule wins.
    expect(ev.allows(q('file-read-data', `${CWD}/secrets/ok/keyA7.txt`))).toBe(false);
    expect(ev.allows(q('file-read-data', `${CWD}/secrets/ok/keyA77.txt`))).toBe(true);
  });

  it('network: only the proxy ports, forwarded loopback ports and the groups the settings switch on', () => {
    const d = load(scenarios.default!());
    expect(d.allows({ op: 'network-outbound', remoteIp: 'localhost:49152' })).toBe(true);
    expect(d.allows({ op: 'network-outbound', remoteIp: 'localhost:49153' })).toBe(true);
    expect(d.allows({ op: 'network-outbound', remoteIp: 'localhost:5432' })).toBe(false);
    expect(d.allows({ op: 'network-outbound', remoteIp: '*:443' })).toBe(false);
    expect(d.allows({ op: 'network-bind', localIp: 'localhost:3000' })).toBe(false);
    expect(d.allows({ op: 'network-outbound', unixPath: '/private/var/run/mDNSResponder' })).toBe(false);
    expect(d.allows({ op: 'system-socket', socketDomain: 'AF_UNIX' })).toBe(true);
    for (const op of ['pseudo-tty', 'appleevent-send']) expect(d.allows({ op })).toBe(false);
    expect(d.allows({ op: 'mach-lookup', machName: 'com.apple.trustd.agent' })).toBe(false);
    expect(d.allows({ op: 'mach-lookup', machName: 'com.apple.SecurityServer' })).toBe(false);
    expect(d.allows({ op: 'mach-lookup', machName: 'com.apple.coreservices.launchservicesd' })).toBe(false);
    expect(d.allows({ op: 'mach-lookup', machName: 'com.apple.system.opendirectoryd.libinfo' })).toBe(true);
    expect(d.allows({ op: 'sysctl-read', sysctl: 'hw.ncpu' })).toBe(true);
    expect(d.allows({ op: 'sysctl-read', sysctl: 'kern.procargs2' })).toBe(false);
    expect(d.allows({ op: 'signal', target: 'others' })).toBe(false);
    expect(d.allows({ op: 'file-link', path: `${CWD}/a` })).toBe(false);
    expect(d.allows({ op: 'file-write-setugid', path: `${CWD}/a` })).toBe(false);

    const g = load(scenarios['every-rule-group']!());
    for (const port of [5432, 6379, 8080]) expect(g.allows({ op: 'network-outbound', remoteIp: `localhost:${port}` })).toBe(true);
    expect(g.allows({ op: 'network-outbound', remoteIp: 'localhost:5433' })).toBe(false);
    expect(g.allows({ op: 'network-bind', localIp: 'localhost:3000' })).toBe(false);
    expect(g.allows({ op: 'network-outbound', remoteIp: '*:443' })).toBe(false);
    const b = load(scenarios['local-binding-and-exposed-ports']!());
    expect(b.allows({ op: 'network-bind', localIp: 'localhost:3001' })).toBe(true);
    expect(b.allows({ op: 'network-inbound', localIp: 'localhost:3001' })).toBe(true);
    expect(b.allows({ op: 'network-outbound', remoteIp: 'localhost:3001' })).toBe(true);
    expect(b.allows({ op: 'network-outbound', remoteIp: '*:443' })).toBe(false);
    const exposedOnly = load(buildSeatbeltProfile(policy({}, {}, { exposePorts: [{ hostAddress: '127.0.0.1', hostPort: 3000, sandboxPort: 3000, source: { scope: 'user' } }] }), facts()));
    expect(exposedOnly.allows({ op: 'network-bind', localIp: 'localhost:3000' })).toBe(true);
    expect(exposedOnly.allows({ op: 'network-bind', localIp: 'localhost:3001' })).toBe(false);
    expect(scenarios['local-binding-and-exposed-ports']!().warnings.join()).toContain('network.exposePorts 8080:80: macOS has no private loopback');
    for (const op of ['pseudo-tty', 'appleevent-send']) expect(g.allows({ op })).toBe(true);
    expect(g.allows({ op: 'mach-lookup', machName: 'com.apple.trustd.agent' })).toBe(true);
    expect(g.allows({ op: 'file-read-data', path: '/dev/ttys009', type: 'CHARACTER-DEVICE' })).toBe(true);
    expect(d.allows({ op: 'file-read-data', path: '/dev/ttys009', type: 'CHARACTER-DEVICE' })).toBe(false);
  });

  it('devices: the command keeps its own terminal; other terminals, raw disks and bpf stay closed', () => {
    const ev = load(scenarios.default!());
    const dev = (op: string, path: string) => ev.allows({ op, path, type: 'CHARACTER-DEVICE' });
    expect(dev('file-read-data', '/dev/ttys003')).toBe(true);
    expect(dev('file-write-data', '/dev/ttys003')).toBe(true);
    const ioctl = (path: string, name: string) => ev.allows({ op: 'file-ioctl', path, type: 'CHARACTER-DEVICE', ioctl: name });
    for (const name of ['TIOCGETA', 'TIOCSETA', 'TIOCGWINSZ']) expect(ioctl('/dev/ttys003', name), name).toBe(true);
    expect(ioctl('/dev/ttys003', 'TIOCSTI')).toBe(false); // no typing into the shell, even for a root caller
    expect(ioctl('/dev/ttys004', 'TIOCGETA')).toBe(false);
    expect(ioctl('/dev/dtracehelper', 'TIOCSTI')).toBe(true); // not a terminal: any control
    for (const p of ['/dev/ttys004', '/dev/disk0', '/dev/rdisk1s2', '/dev/bpf0', '/dev/ptmx']) expect(dev('file-read-data', p), p).toBe(false);
    expect(dev('file-write-data', '/dev/null')).toBe(true);
    expect(dev('file-write-unlink', '/dev/null')).toBe(false);
    expect(dev('file-read-data', '/dev/urandom')).toBe(true);
    expect(dev('file-write-data', '/dev/fd/1')).toBe(true);
  });

  it('unix sockets: only the listed paths, as written and where they lead', () => {
    const ev = load(scenarios['unix-sockets']!());
    for (const p of ['/var/run/docker.sock', '/private/var/run/docker.sock', `${HOME}/.colima/default/docker.sock`]) {
      expect(ev.allows({ op: 'network-outbound', unixPath: p }), p).toBe(true);
    }
    expect(ev.allows({ op: 'network-outbound', unixPath: '/private/var/run/mDNSResponder' })).toBe(false);
    const all = load(scenarios['all-unix-sockets']!());
    expect(all.allows({ op: 'network-outbound', unixPath: '/private/var/run/mDNSResponder' })).toBe(true);
    expect(all.allows({ op: 'network-bind', unixPath: `${CWD}/app.sock` })).toBe(true);
  });

  it('filesystem.disabled: everything readable and writable but credential files', () => {
    const ev = load(scenarios['filesystem-disabled']!());
    expect(ev.allows(q('file-write-data', '/etc/hosts'))).toBe(true);
    expect(ev.allows(q('file-read-data', `${HOME}/.netrc`))).toBe(false);
    expect(ev.allows(q('file-write-data', `${HOME}/.netrc`))).toBe(false);
  });

  it('an allowWrite entry through a symlink a sandbox could have planted is refused, as on Linux (one derivation of the write roots)', () => {
    const via = (link: string, target: string, system = false) => ({ link, target, system });
    // An earlier run made `build` a link to ~/.ssh; the settings name `./build`.
    const plan = buildSeatbeltProfile(policy({ allowWrite: [project(`${CWD}/build`, './build'), user('/var/run/x'), user(`${HOME}/sys/x`)] }), facts({
      landings: new Landings([
        [CWD, { real: CWD, kind: 'dir' }],
        [`${CWD}/build`, { real: `${HOME}/.ssh`, kind: 'dir', via: [via(`${CWD}/build`, `${HOME}/.ssh`)] }],
        // A root-owned link in a root-owned directory (the system's own layout) stays usable…
        ['/var/run/x', { real: '/private/var/run/x', kind: 'dir', via: [via('/var/run', '/private/var/run', true)] }],
        // …but not inside the home directory, cwd or another writable root.
        [`${HOME}/sys/x`, { real: '/opt/x', kind: 'dir', via: [via(`${HOME}/sys`, '/opt', true)] }],
      ]),
    }));
    expect(plan.warnings).toContain(`filesystem.allowWrite: ./build: runs through the symlink ${CWD}/build -> ${HOME}/.ssh; entry ignored (a sandboxed command could have planted that link; name the directory it points to instead)`);
    expect(plan.warnings.some((w) => w.includes(`${HOME}/sys -> /opt`))).toBe(true);
    expect(plan.writable).toEqual([CWD, '/private/var/run/x']);
    const ev = load(plan);
    for (const path of [`${HOME}/.ssh/authorized_keys`, `${HOME}/notes.txt`, '/opt/x/y']) {
      expect(mayWrite(plan.rules, path).allowed, path).toBe(false);
      expect(ev.allows(q('file-write-data', path)), path).toBe(false);
    }
    expect(ev.allows(q('file-write-data', '/private/var/run/x/y'))).toBe(true);
  });

  it('an allowWrite entry that is a symlink to one of its own ancestors is refused, as on Linux', () => {
    const plan = buildSeatbeltProfile(policy({ allowWrite: [user('/srv/area/up')] }), facts({
      landings: new Landings([[CWD, { real: CWD, kind: 'dir' }], ['/srv/area/up', { real: '/srv', kind: 'dir', via: [{ link: '/srv/area/up', target: '..', system: true }] }]]),
    }));
    expect(plan.warnings).toContain('filesystem.allowWrite: /srv/area/up: leads to /srv, which holds /srv/area/up itself (a symlink to an ancestor of its own); entry ignored (name the directory meant instead)');
    expect(plan.writable).toEqual([CWD]);
    expect(load(plan).allows(q('file-write-data', '/srv/x'))).toBe(false);
  });

  it('a deny entry whose symlinks loop stops the run (fail closed)', () => {
    const plan = buildSeatbeltProfile(policy({ denyRead: [user(`${HOME}/loop`)] }), facts({
      landings: new Landings([[`${HOME}/loop`, { real: `${HOME}/loop`, kind: 'impossible', why: 'loop' }]]),
    }));
    expect(plan.errors.join()).toMatch(/filesystem.denyRead: .*loop: srt cannot tell where/);
  });
});

/** Policies for the agreement property: random nestings of denies and allows from random scopes. */
describe('Seatbelt profile agrees with the access model on random policies', () => {
  it('200 random policies', () => {
    let seed = 0x5eed;
    const rnd = (n: number) => { seed = (seed * 1103515245 + 12345) & 0x7fffffff; return seed % n; };
    const pick = <T,>(xs: readonly T[]): T => xs[rnd(xs.length)]!;
    const dirs = [HOME, `${HOME}/a`, `${HOME}/a/b`, `${HOME}/a/b/c`, CWD, `${CWD}/x`, `${CWD}/x/y`, '/opt/data', '/opt/data/z'];
    const globs = [`${HOME}/**/*.pem`, `${HOME}/a/*`, `${CWD}/**/secret*`, `${HOME}/a/b/[!c]*`, `/opt/**`];
    const scopes = [managed, cli, user, project, local];
    const paths = new Set<string>();
    for (const d of dirs) for (const t of ['', '/k.pem', '/secret1', '/c', '/q/r.pem', '/.bashrc']) paths.add(`${d}${t}`);
    const plans = Array.from({ length: 200 }, () => {
      const rule = () => pick(scopes)(rnd(4) === 0 ? pick(globs) : pick(dirs));
      const many = (k: number) => Array.from({ length: rnd(k) }, rule);
      const p: Policy = policy({ denyRead: many(4), allowRead: many(4), denyWrite: many(2), allowWrite: many(3).filter((r) => !r.glob) });
      return buildSeatbeltProfile(p, facts());
    });
    primeRegexes(plans.flatMap((plan) => load(plan).profile.regexes), [...paths]);
    for (const plan of plans) expectAgreement(plan, [...paths]);
  }, 120_000);
});
