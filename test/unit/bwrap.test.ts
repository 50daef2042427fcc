import { describe, expect, it } from 'vitest';
import type { PathRule, Policy } from '../../src/policy.js';
import { globToRegExp } from '../../src/glob.js';
import { literalOf } from '../../src/profiles/access-rule.js';
import { buildBwrapPlan, mountPlanner, withCommand } from '../../src/profiles/bwrap.js';
import { globRules, type BwrapFacts, type SnapshotEntry } from '../../src/profiles/bwrap-facts.js';
import type { Landing } from '../../src/profiles/landing.js';
import { encodeMounts, plannedMounts } from '../../src/profiles/mounts.js';
import { encodeRules } from '../../src/profiles/supervisor.js';

const src = { scope: 'cli' as const };
const rule = (path: string, glob = /[*?[]/.test(path)): PathRule => ({ path, glob, original: path, source: src });

function policy(fs: Partial<Policy['filesystem']> = {}, extra: Partial<Policy> = {}): Policy {
  return {
    cwd: '/w', home: '/h', root: '/w',
    network: {
      allowedDomains: [], deniedDomains: [], deniedDomainReasons: {}, strictAllowlist: true, allowManagedDomainsOnly: false,
      deniedResolvedAddresses: [], allowUnixSockets: [], allowAllUnixSockets: false, allowLocalBinding: false, exposePorts: [],
    },
    filesystem: { allowWrite: [], denyWrite: [], denyRead: [], allowRead: [], disabled: false, allowManagedReadPathsOnly: false, ...fs },
    credentials: { envVars: [], files: [], awsPairs: [], sigv4: { presigned: 'deny', streaming: 'deny', sigv4a: 'deny', mint: 'deny' }, allowPlaintextInject: false },
    mandatoryDenySearchDepth: 3, enableWeakerNestedSandbox: false, allowNestedUserNamespaces: false,
    allowPty: false, allowAppleEvents: false, enableWeakerNetworkIsolation: false, warnings: [], ignored: [],
    ...extra,
  };
}

const dir = (real: string): Landing => ({ real, kind: 'dir' });
const file = (real: string): Landing => ({ real, kind: 'file' });
const missing = (real: string, firstMissing = real): Landing => ({ real, kind: 'missing', firstMissing });

function facts(landings: Record<string, Landing>, more: Partial<BwrapFacts> = {}): BwrapFacts {
  return {
    landings: new Map(Object.entries({ '/w': dir('/w'), ...landings })),
    globMatches: new Map(), protectedTargets: [],
    runDir: '/r', tmpDir: '/r/tmp', deniedFile: '/r/denied', jsonStatusFd: 3,
    ...more,
  };
}

/** The mount operations after the fixed prefix, as `op path` strings. */
function mounts(args: string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < args.indexOf('--chdir'); i++) {
    const a = args[i]!;
    if (['--bind', '--ro-bind', '--dev-bind', '--bind-try', '--ro-bind-try'].includes(a)) { out.push(`${a.slice(2)} ${args[i + 2]}${args[i + 1] !== args[i + 2] ? ` <${args[i + 1]}` : ''}`); i += 2; }
    else if (a === '--tmpfs' || a === '--remount-ro' || a === '--proc' || a === '--dev') { out.push(`${a.slice(2)} ${args[i + 1]}`); i += 1; }
  }
  return out;
}

describe('bwrap argv', () => {
  it('always isolates namespaces, drops caps, fresh /proc with read-only /proc/sys', () => {
    const { args } = buildBwrapPlan(policy(), facts({}), ['true']);
    for (const f of ['--unshare-user', '--unshare-net', '--unshare-pid', '--unshare-ipc', '--unshare-uts', '--new-session', '--die-with-parent']) {
      expect(args).toContain(f);
    }
    expect(args.join(' ')).toContain('--cap-drop ALL');
    expect(args).not.toContain('--cap-add');
    expect(mounts(args)).toEqual(['ro-bind /', 'dev /dev', 'proc /proc', 'ro-bind /proc/sys', 'bind /w', 'bind /r/tmp']);
    expect(args.slice(args.indexOf('--chdir'))).toEqual(['--chdir', '/w', '--json-status-fd', '3', '--', 'true']);
  });

  it('launches through srt-init with the capabilities it needs', () => {
    const relays = [{ address: '127.0.0.1', port: 3128, socketPath: '/r/http.sock' }];
    const plan = buildBwrapPlan(policy(), facts({}, { seccomp: { helperPath: '/h/srt-init', goFd: 9, maxProcs: 8192, filterPath: '/r/f.bpf', relays, exposes: [] } }), ['ls', '-l']);
    const { args } = plan;
    expect(args.join(' ')).toContain('--as-pid-1 --cap-drop ALL --cap-add CAP_SYS_ADMIN --cap-add CAP_SETPCAP --cap-add CAP_DAC_READ_SEARCH --cap-add CAP_SYS_RESOURCE --ro-bind');
    expect(args.slice(args.indexOf('--'))).toEqual(['--', '/h/srt-init', '--relay', '127.0.0.1:3128:/r/http.sock',
      '--writable', '/w', '--writable', '/r/tmp', '--max-procs', '8192', '--go-fd', '9', '--filter', '/r/f.bpf', '--', 'ls', '-l']);
    expect(mounts(args)).not.toContain('ro-bind /proc/sys'); // the helper mounts its own /proc
    expect(plan.launcher).toEqual([]); // nothing exposed: bwrap runs directly
  });

  it('a terminal on stdin: the helper gets --pty with the channel, srt\'s stat descriptor and the stdio on the pty; bwrap keeps --new-session', () => {
    const terminal = { channelFd: 4, parentStatFd: 5, stdio: '02' };
    const { args } = buildBwrapPlan(policy(), facts({}, { seccomp: { helperPath: '/h/srt-init', goFd: 9, maxProcs: 8192, filterPath: '/r/f.bpf', relays: [], exposes: [], terminal } }), ['bash']);
    expect(args.slice(args.indexOf('/h/srt-init'))).toEqual(['/h/srt-init', '--writable', '/w', '--writable', '/r/tmp',
      '--pty', '4:5:02', '--max-procs', '8192', '--go-fd', '9', '--filter', '/r/f.bpf', '--', 'bash']);
    expect(args).toContain('--new-session');
  });

  it('relays forwarded and exposed ports; below 1024 the helper may bind (and drops it)', () => {
    const relays = [
      { address: '127.0.0.1', port: 3128, socketPath: '/r/http.sock' },
      { address: '127.0.0.1', port: 80, socketPath: '/r/fwd-0.sock' },
      { address: '::1', port: 80, socketPath: '/r/fwd-0.sock' },
    ];
    const exposes = [{ fd: 6, hostAddress: '127.0.0.1', hostPort: 3000, sandboxPort: 3000 }, { fd: 7, hostAddress: '::1', hostPort: 8080, sandboxPort: 80 }];
    const plan = buildBwrapPlan(policy(), facts({}, { seccomp: { helperPath: '/h/srt-init', goFd: 9, maxProcs: 8192, filterPath: '/r/f.bpf', relays, exposes } }), ['true']);
    expect(plan.args.join(' ')).toContain('--cap-add CAP_DAC_READ_SEARCH --cap-add CAP_SYS_RESOURCE --cap-add CAP_NET_BIND_SERVICE');
    expect(plan.args.slice(plan.args.indexOf('/h/srt-init'), plan.args.indexOf('--writable'))).toEqual(['/h/srt-init',
      '--relay', '127.0.0.1:3128:/r/http.sock', '--relay', '127.0.0.1:80:/r/fwd-0.sock', '--relay', '[::1]:80:/r/fwd-0.sock',
      '--expose', '6:3000', '--expose', '7:80']);
    expect(plan.launcher).toEqual(['/h/srt-init', '--host-listen', '6:127.0.0.1:3000', '--host-listen', '7:[::1]:8080', '--']);
  });

  const seccomp = { seccomp: { helperPath: '/h/srt-init', goFd: 9, maxProcs: 8192, filterPath: '/r/f.bpf', relays: [], exposes: [] } };
  const helperArgs = (args: string[]) => args.slice(args.indexOf('/h/srt-init') + 1, args.lastIndexOf('--max-procs'));

  it('passes the helper exactly the read-write binds (outermost only) for Landlock', () => {
    const targets = [{ path: '/main/.git/hooks', kind: 'dir' as const }, { path: '/w/.git', kind: 'file' as const }];
    const p = policy({ allowWrite: [rule('/data/**'), rule('/w/sub'), rule('/ro/x')], denyWrite: [rule('/data/a/b/secret'), rule('/ro')] });
    const f = facts({
      '/data': dir('/data'), '/data/a/b/secret': file('/data/a/b/secret'), '/w/sub': dir('/w/sub'), '/ro': dir('/ro'), '/ro/x': dir('/ro/x'),
      '/main/.git': dir('/main/.git'), '/main/.git/hooks': dir('/main/.git/hooks'), '/w/.git': file('/w/.git'),
    }, { ...seccomp, protectedTargets: targets, worktree: { commonDir: '/main/.git', gitDir: '/main/.git/worktrees/w' } });
    const { args } = buildBwrapPlan(p, f, ['true']);
    const binds = mounts(args).filter((m) => m.startsWith('bind ')).map((m) => m.slice(5));
    expect(binds).toEqual(expect.arrayContaining(['/data', '/data/a', '/data/a/b', '/w', '/main/.git', '/r/tmp']));
    // /ro/x is under a denyWrite: bound read-only, so not writable for Landlock either.
    expect(helperArgs(args)).toEqual(['--writable', '/data', '--writable', '/w', '--writable', '/main/.git', '--writable', '/r/tmp']);
  });

  it('turns Landlock off where it cannot apply: filesystem.disabled, nested sandboxes (Landlock refuses mount)', () => {
    for (const p of [policy({ disabled: true }), policy({}, { allowNestedUserNamespaces: true })]) {
      expect(helperArgs(buildBwrapPlan(p, facts({}, seccomp), ['true']).args)).toEqual(['--no-landlock']);
    }
  });

  it('denyWrite inside allowWrite is re-bound read-only, with its parents as mount points', () => {
    const p = policy({ allowWrite: [rule('/data/**')], denyWrite: [rule('/data/a/b/secret')] });
    const { args } = buildBwrapPlan(p, facts({ '/data': dir('/data'), '/data/a/b/secret': file('/data/a/b/secret') }), ['true']);
    expect(mounts(args).slice(4)).toEqual(['bind /data', 'bind /w', 'bind /data/a', 'bind /r/tmp', 'bind /data/a/b', 'ro-bind /data/a/b/secret']);
  });

  it('judges writes where symlinks land', () => {
    const p = policy({ allowWrite: [rule('/w/link')] });
    const { args } = buildBwrapPlan(p, facts({ '/w/link': dir('/elsewhere/real') }), ['true']);
    expect(mounts(args)).toContain('bind /elsewhere/real');
    expect(mounts(args)).not.toContain('bind /w/link');
  });

  it('denyRead: tmpfs for dirs (read-only at the end), empty file for files; allowRead re-opens; a more specific denyRead stays', () => {
    const p = policy({
      denyRead: [rule('/h'), rule('/etc/shadow'), rule('/h/proj/keys')],
      allowRead: [rule('/h/proj')],
    });
    const { args } = buildBwrapPlan(p, facts({ '/h': dir('/h'), '/etc/shadow': file('/etc/shadow'), '/h/proj': dir('/h/proj'), '/h/proj/keys': dir('/h/proj/keys') }), ['true']);
    expect(mounts(args).slice(4)).toEqual([
      'tmpfs /h', 'bind /w', 'ro-bind /etc/shadow </r/denied', 'ro-bind /h/proj', 'bind /r/tmp', 'tmpfs /h/proj/keys',
      'remount-ro /h', 'remount-ro /h/proj/keys',
    ]);
  });

  it('cwd inside a denied region stays readable and writable', () => {
    const p = policy({ denyRead: [rule('/h')] }, { cwd: '/h/w' });
    const { args } = buildBwrapPlan(p, facts({ '/h': dir('/h'), '/h/w': dir('/h/w') }), ['true']);
    expect(mounts(args).slice(4)).toEqual(['tmpfs /h', 'bind /h/w', 'bind /r/tmp', 'remount-ro /h']);
  });

  it('expands read globs from facts and drops a trailing /** on writes', () => {
    const p = policy({ denyRead: [rule('/w/**/*.pem')], allowWrite: [rule('/out/**')] });
    const f = facts({ '/out': dir('/out') }, { globMatches: new Map([['/w/**/*.pem', [file('/w/a/k.pem'), file('/w/k2.pem')]]]) });
    const m = mounts(buildBwrapPlan(p, f, ['true']).args);
    expect(m).toContain('ro-bind /w/a/k.pem </r/denied');
    expect(m).toContain('ro-bind /w/k2.pem </r/denied');
    expect(m).toContain('bind /out');
  });

  it('warns about write globs it cannot apply', () => {
    const p = policy({ allowWrite: [rule('/w/*.log')] });
    const plan = buildBwrapPlan(p, facts({}), ['true']);
    expect(plan.warnings.join('\n')).toMatch(/allowWrite: \/w\/\*\.log: globs are not supported/);
  });

  it('missing protected paths get placeholders at their first missing component, only where writable', () => {
    const targets = [
      { path: '/w/.bashrc', kind: 'file' as const },
      { path: '/w/.git/hooks', kind: 'dir' as const },
      { path: '/w/.git/config', kind: 'file' as const },
      { path: '/w/.vscode', kind: 'dir' as const },
      { path: '/h/.srt', kind: 'dir' as const },
    ];
    const f = facts({
      '/w/.bashrc': missing('/w/.bashrc'),
      '/w/.git/hooks': missing('/w/.git/hooks', '/w/.git'),
      '/w/.git/config': missing('/w/.git/config', '/w/.git'),
      '/w/.vscode': dir('/w/.vscode'),
      '/h/.srt': missing('/h/.srt'),
    }, { protectedTargets: targets });
    const plan = buildBwrapPlan(policy(), f, ['true']);
    expect(plan.placeholders).toEqual([{ path: '/w/.bashrc', kind: 'file' }, { path: '/w/.git', kind: 'dir' }]);
    expect(mounts(plan.args).slice(4)).toEqual(['bind /w', 'bind /r/tmp', 'ro-bind /w/.bashrc', 'ro-bind /w/.git', 'ro-bind /w/.vscode']);
  });

  it('a linked worktree makes the main .git writable except hooks and config', () => {
    const targets = [{ path: '/main/.git/hooks', kind: 'dir' as const }, { path: '/main/.git/config', kind: 'file' as const }, { path: '/w/.git', kind: 'file' as const }];
    const f = facts({ '/main/.git': dir('/main/.git'), '/main/.git/hooks': dir('/main/.git/hooks'), '/main/.git/config': file('/main/.git/config'), '/w/.git': file('/w/.git') },
      { protectedTargets: targets, worktree: { commonDir: '/main/.git', gitDir: '/main/.git/worktrees/w' } });
    expect(mounts(buildBwrapPlan(policy(), f, ['true']).args).slice(4)).toEqual([
      'bind /w', 'bind /main/.git', 'bind /r/tmp', 'ro-bind /w/.git', 'ro-bind /main/.git/config', 'ro-bind /main/.git/hooks',
    ]);
  });

  it('filesystem.disabled binds the host root but keeps namespaces', () => {
    const plan = buildBwrapPlan(policy({ disabled: true }), facts({}), ['true']);
    expect(mounts(plan.args)).toEqual(['dev-bind /', 'dev /dev', 'proc /proc', 'ro-bind /proc/sys', 'bind /r/tmp']);
    expect(plan.args).toContain('--unshare-net');
    expect(plan.warnings.join()).toMatch(/disabled/);
  });

  it('enableWeakerNestedSandbox binds the existing /proc with a warning', () => {
    const plan = buildBwrapPlan(policy({}, { enableWeakerNestedSandbox: true }), facts({}), ['true']);
    expect(mounts(plan.args)).toContain('bind /proc');
    expect(mounts(plan.args)).not.toContain('proc /proc');
    expect(plan.warnings.join()).toMatch(/weaker/);
  });
});

describe('globs', () => {
  it('literalOf keeps literals and drops a trailing /**', () => {
    expect(literalOf(rule('/a/b/**'))).toBe('/a/b');
    expect(literalOf(rule('/a/*.pem'))).toBeNull();
    expect(literalOf({ path: '/a/[x]', glob: false })).toBe('/a/[x]');
  });
  it('globToRegExp', () => {
    const re = globToRegExp('/w/**/*.pem');
    expect(re.test('/w/k.pem')).toBe(true);
    expect(re.test('/w/a/b/k.pem')).toBe(true);
    expect(re.test('/w/a/k.pemx')).toBe(false);
    expect(globToRegExp('/w/*.pem').test('/w/a/k.pem')).toBe(false);
    expect(globToRegExp('/w/f?[ab]').test('/w/fxb')).toBe(true);
  });
});

describe('scope trust in read and write rules (SPEC §2.4)', () => {
  const at = (scope: PathRule['source']['scope']) => (path: string): PathRule => ({ path, glob: false, original: path, source: { scope, file: `/${scope}.json` } });
  const [managed, cli, user, project, local] = (['managed', 'cli', 'user', 'project', 'local'] as const).map(at);
  const land = { '/h': dir('/h'), '/h/.ssh': dir('/h/.ssh'), '/h/.ssh/id': file('/h/.ssh/id'), '/h/proj': dir('/h/proj'), '/w/x': dir('/w/x') };
  const view = (fs: Partial<Policy['filesystem']>, extra: Partial<Policy> = {}) => mounts(buildBwrapPlan(policy(fs, extra), facts(land), ['true']).args);

  it('a project or local allowRead never re-opens a user, cli or managed denyRead', () => {
    for (const deny of [user, cli, managed]) {
      for (const allow of [project, local]) {
        expect(view({ denyRead: [deny('/h/.ssh')], allowRead: [allow('/h/.ssh')] })).toContain('tmpfs /h/.ssh');
        expect(view({ denyRead: [deny('/h')], allowRead: [allow('/h/.ssh')] })).not.toContain('ro-bind /h/.ssh');
      }
    }
  });

  it('a project or local allowWrite never re-opens a higher scope denyRead (it stays hidden, not writable)', () => {
    const m = view({ denyRead: [user('/h')], allowWrite: [project('/h/proj')] });
    expect(m).toContain('tmpfs /h');
    expect(m).not.toContain('bind /h/proj');
  });

  it('user settings re-open their own denies, never managed or cli ones; cli re-opens user ones', () => {
    expect(view({ denyRead: [user('/h')], allowRead: [user('/h/proj')] })).toContain('ro-bind /h/proj');
    expect(view({ denyRead: [managed('/h')], allowRead: [user('/h/proj')] })).not.toContain('ro-bind /h/proj');
    expect(view({ denyRead: [cli('/h')], allowRead: [user('/h/proj')] })).not.toContain('ro-bind /h/proj');
    expect(view({ denyRead: [user('/h')], allowRead: [cli('/h/proj')] })).toContain('ro-bind /h/proj');
    expect(view({ denyRead: [managed('/h')], allowRead: [managed('/h/proj')] })).toContain('ro-bind /h/proj');
    // A repository's own deny is re-opened by its own (approved) allow.
    expect(view({ denyRead: [project('/h')], allowRead: [project('/h/proj')] })).toContain('ro-bind /h/proj');
  });

  it("a nested repository's files never re-open a parent directory's project deny; the user's may", () => {
    const parent = (path: string): PathRule => ({ ...project(path), source: { scope: 'project', file: '/h/.srt/settings.json', outsideRoot: true } });
    expect(view({ denyRead: [parent('/h')], allowRead: [project('/h/proj'), local('/h/proj')] })).not.toContain('ro-bind /h/proj');
    expect(view({ denyRead: [parent('/h')], allowRead: [user('/h/proj')] })).toContain('ro-bind /h/proj');
  });

  it('nothing re-opens a credential deny, not even an allowRead of the same path from managed settings', () => {
    const credentials = { deny: [{ ...user('/h/.ssh') }], masked: [] };
    const plan = (fs: Partial<Policy['filesystem']>) => mounts(buildBwrapPlan(policy(fs), facts(land, { credentials }), ['true']).args);
    expect(plan({ allowRead: [managed('/h/.ssh'), user('/h/.ssh/id')] })).toContain('tmpfs /h/.ssh');
    expect(plan({ allowRead: [managed('/h/.ssh'), user('/h/.ssh/id')] })).not.toContain('ro-bind /h/.ssh/id');
  });

  it('masked credential files get their sentinel copy from an fd, bound last, at the path they land on', () => {
    const credentials = { deny: [user('/h/.npmrc')], masked: [{ path: '/h/.netrc', fd: 4, mode: 0o400 }, { path: '/h/gone', fd: 5, mode: 0o400 }, { path: '/h/hidden/tok', fd: 6, mode: 0o400 }] };
    const { args } = buildBwrapPlan(
      policy({ denyRead: [user('/h/hidden')] }),
      facts({ ...land, '/h/.npmrc': file('/h/.npmrc'), '/h/.netrc': file('/h/dotfiles/netrc'), '/h/gone': missing('/h/gone'), '/h/hidden': dir('/h/hidden'), '/h/hidden/tok': file('/h/hidden/tok') }, { credentials }),
      ['true'],
    );
    const joined = args.join(' ');
    expect(joined).toContain('--ro-bind /r/denied /h/.npmrc');
    expect(joined).toContain('--perms 0400 --ro-bind-data 4 /h/dotfiles/netrc');
    // Missing, or hidden by the policy anyway: no copy appears.
    expect(joined).not.toContain('--ro-bind-data 5');
    expect(joined).not.toContain('--ro-bind-data 6');
    // After every other mount of the filesystem.
    expect(args.lastIndexOf('--ro-bind-data')).toBeGreaterThan(args.lastIndexOf('--bind'));
    expect(args.lastIndexOf('--ro-bind-data')).toBeGreaterThan(args.lastIndexOf('--tmpfs'));
  });

  it('the current directory re-opens user denies (denyRead ~ recipe) but not managed ones, and says so', () => {
    const plan = buildBwrapPlan(policy({ denyRead: [managed('/w')] }), facts(land), ['true']);
    expect(mounts(plan.args)).toContain('tmpfs /w');
    expect(plan.warnings.join()).toContain('the current directory /w is inside a denyRead region');
    expect(view({ denyRead: [user('/w')] })).toContain('bind /w');
  });

  it('a project allowWrite that leads out of the project root through a symlink is ignored with a warning', () => {
    const plan = buildBwrapPlan(
      policy({ allowWrite: [project('/w/build'), project('/w/x')] }),
      facts({ ...land, '/w/build': dir('/etc') }),
      ['true'],
    );
    expect(mounts(plan.args)).not.toContain('bind /etc');
    expect(mounts(plan.args)).toContain('bind /w');
    expect(plan.warnings.join('\n')).toContain('/project.json: filesystem.allowWrite: /w/build leads to /etc, outside the project root /w; ignored');
  });
});

describe('settings that do nothing on Linux are said at start', () => {
  it('macOS-only keys and allowWrite paths that do not exist', () => {
    const p = policy({ allowWrite: [rule('/w/later')] }, { allowPty: true, allowAppleEvents: true });
    p.network.allowUnixSockets = ['/var/run/docker.sock'];
    const { warnings } = buildBwrapPlan(p, facts({ '/w/later': missing('/w/later') }), ['true']);
    expect(warnings).toEqual(expect.arrayContaining([
      'filesystem.allowWrite: /w/later does not exist, so it is not writable in this run (srt makes only existing paths writable; create it first)',
      'allowPty only has an effect on macOS; ignored on Linux',
      'allowAppleEvents only has an effect on macOS; ignored on Linux',
      'network.allowUnixSockets only has an effect on macOS; ignored on Linux (Linux has no per-path rule: see network.allowAllUnixSockets)',
    ]));
    expect(buildBwrapPlan(policy(), facts({}), ['true']).warnings).toEqual([]);
  });
});

describe('deny entries that are hard to resolve, and a hidden root', () => {
  it('a denyWrite through a symlink loop is an error; below an existing file the file itself is kept', () => {
    const loop: Landing = { real: '/w/loop', kind: 'impossible', why: 'loop' };
    const plan = buildBwrapPlan(policy({ denyWrite: [rule('/w/loop/x')] }), facts({ '/w/loop/x': loop }), ['true']);
    expect(plan.errors).toEqual(['filesystem.denyWrite: /w/loop/x: srt cannot tell where /w/loop leads (its symlinks loop or nest deeper than 40); fix the path or remove the entry']);
    const notDir: Landing = { real: '/w/f/x', kind: 'impossible', why: 'not-dir', blockedBy: '/w/f' };
    const p2 = buildBwrapPlan(policy({ denyWrite: [rule('/w/f/x')] }), facts({ '/w/f/x': notDir, '/w/f': file('/w/f') }), ['true']);
    expect(p2.errors).toEqual([]);
    expect(mounts(p2.args)).toContain('ro-bind /w/f');
  });

  it('a deny inside a directory srt cannot search covers that directory whole: hidden for reads, read-only for writes, with a warning', () => {
    const blocked = (real: string): Landing => ({ real, kind: 'impossible', why: 'unreadable', blockedBy: '/w/private' });
    const read = buildBwrapPlan(policy({ denyRead: [rule('/w/private/key')] }), facts({ '/w/private/key': blocked('/w/private/key') }), ['true']);
    expect(read.errors).toEqual([]);
    expect(mounts(read.args)).toEqual(expect.arrayContaining(['tmpfs /w/private', 'remount-ro /w/private']));
    expect(read.warnings.join('\n')).toContain('srt cannot search /w/private (permission denied), so it cannot find /w/private/key: all of /w/private is hidden');
    const write = buildBwrapPlan(policy({ denyWrite: [rule('/w/private/key')] }), facts({ '/w/private/key': blocked('/w/private/key') }), ['true']);
    expect(mounts(write.args)).toContain('ro-bind /w/private');
    expect(write.warnings.join('\n')).toContain('all of /w/private is read-only');
    // A credential file there: hidden, and no allowRead re-opens it.
    const cred = policy({ allowRead: [rule('/w/private')] });
    const credFacts = { ...facts({ '/w/private/key': blocked('/w/private/key'), '/w/private': { real: '/w/private', kind: 'impossible', why: 'unreadable', blockedBy: '/w/private' } }), credentials: { deny: [rule('/w/private/key')], masked: [] } };
    const c = buildBwrapPlan(cred, credFacts, ['true']);
    expect(mounts(c.args)).toContain('tmpfs /w/private');
    // Without the directory it could not search, srt stops rather than guess.
    const unknown = buildBwrapPlan(policy({ denyRead: [rule('/w/x')] }), facts({ '/w/x': { real: '/w/x', kind: 'impossible', why: 'unreadable' } }), ['true']);
    expect(unknown.errors).toEqual(['filesystem.denyRead: /w/x: srt cannot look at /w/x; fix its permissions or remove the entry']);
  });

  it('a deny glob covers a directory srt cannot read that may hold matches', () => {
    const plan = buildBwrapPlan(policy({ denyRead: [rule('/w/**/*.pem')] }), facts({}, {
      globMatches: new Map([['/w/**/*.pem', [file('/w/a.pem')]]]),
      globUnreadable: new Map([['/w/**/*.pem', [dir('/w/private')]]]),
    }), ['true']);
    expect(mounts(plan.args)).toEqual(expect.arrayContaining(['ro-bind /w/a.pem </r/denied', 'tmpfs /w/private']));
    expect(plan.warnings.join('\n')).toContain('srt cannot read /w/private (permission denied), which may hold matches; the whole directory is covered');
  });

  it('directories between a write root and a read-denied path are pinned (rename guards)', () => {
    const m = mounts(buildBwrapPlan(policy({ denyRead: [rule('/w/a/b/key')] }), facts({ '/w/a/b/key': file('/w/a/b/key') }), ['true']).args);
    expect(m).toEqual(expect.arrayContaining(['bind /w/a', 'bind /w/a/b', 'ro-bind /w/a/b/key </r/denied']));
  });

  it('denyRead ["/"]: the tmpfs over / comes before /dev, /proc and a read-only /sys; hidden merged-/usr links are recreated', () => {
    const plan = buildBwrapPlan(
      policy({ denyRead: [rule('/')], allowRead: [rule('/usr'), rule('/lib64')] }),
      facts({ '/': dir('/'), '/usr': dir('/usr'), '/lib64': dir('/usr/lib64') }, { symlinks: new Map([['/lib64', 'usr/lib64']]) }),
      ['true'],
    );
    const m = mounts(plan.args);
    expect(m.slice(0, 6)).toEqual(['ro-bind /', 'tmpfs /', 'ro-bind /sys', 'dev /dev', 'proc /proc', 'ro-bind /proc/sys']);
    expect(m).toContain('ro-bind /usr');
    expect(m.at(-1)).toBe('remount-ro /');
    expect(plan.args.join(' ')).toContain('--symlink usr/lib64 /lib64');
  });

  it("every run's directory is hidden but this run's own", () => {
    const m = mounts(buildBwrapPlan(policy(), facts({ '/h/.srt/run': dir('/h/.srt/run') }, { runDir: '/h/.srt/run/1-a', runRoot: '/h/.srt/run', tmpDir: '/h/.srt/run/1-a/tmp' }), ['true']).args);
    expect(m).toEqual(expect.arrayContaining(['tmpfs /h/.srt/run', 'ro-bind /h/.srt/run/1-a', 'bind /h/.srt/run/1-a/tmp']));
  });
});

describe('deny globs with names bwrap cannot be given', () => {
  it('a deny glob covers the whole directory holding an undecodable name; an allow glob never opens it', () => {
    const p = policy({ denyRead: [rule('/h/*.pem')], allowRead: [rule('/w/*.key')] });
    const plan = buildBwrapPlan(p, facts({ '/h': dir('/h') }, {
      globMatches: new Map([['/h/*.pem', [file('/h/a.pem')]], ['/w/*.key', []]]),
      globUndecodable: new Map([['/h/*.pem', [dir('/h/odd')]], ['/w/*.key', [dir('/w/odd')]]]),
    }), ['true']);
    const m = mounts(plan.args);
    expect(m).toEqual(expect.arrayContaining(['ro-bind /h/a.pem </r/denied', 'tmpfs /h/odd']));
    expect(m).not.toContain('ro-bind /w/odd');
    expect(plan.warnings).toEqual([
      'filesystem.denyRead: /h/*.pem: /h/odd holds a name that is not valid UTF-8 and may match; srt cannot name it to bubblewrap, so the whole directory is covered',
      'filesystem.denyRead: /h/*.pem: a deny glob covers only the paths that match when the run starts: a matching file made during the run is readable ' +
        '(srt judges deny globs at each open only with its protected-path supervisor, which this system cannot run: see the warning about protected paths)',
    ]);
  });
});

describe('deny globs with the supervisor: judged at each open', () => {
  const sup = { seccomp: { helperPath: '/h/srt-seccomp', goFd: 9, maxProcs: 8192, filterPath: '/r/f.bpf', relays: [], exposes: [], supervisor: { rulesPath: '/r/protect.rules', reportFd: 6 } } };

  it('nothing is expanded or mounted: each glob goes to the read gate with the paths that re-open inside it', () => {
    const scoped = (path: string, scope: 'user' | 'project'): PathRule => ({ ...rule(path), source: { scope } });
    const p = policy({
      denyRead: [scoped('/w/**/.env', 'user'), rule('/h/**/*.pem')],
      allowRead: [rule('/w/conf/.env'), scoped('/w/low/.env', 'project'), rule('/w')],
    });
    const plan = buildBwrapPlan(p, facts({ '/w': dir('/w'), '/w/conf/.env': file('/w/conf/.env'), '/w/low/.env': file('/w/low/.env'), '/h': dir('/h') }, sup), ['true']);
    expect(globRules(p, undefined, { openTime: true })).toEqual([]);
    expect(globRules(p).map((r) => r.path)).toEqual(['/w/**/.env', '/h/**/*.pem']);
    expect(plan.gated).toEqual([
      // A project entry ranks below the user's deny; /w itself lies above every match.
      { path: '/w/**/.env', glob: true, reopened: ['/w/conf/.env'] },
      { path: '/h/**/*.pem', glob: true, reopened: [] },
    ]);
    // No match is mounted for the globs; the project's allow names a file the model keeps denied,
    // and a path the plan mounts at all is mounted as the model says (masked).
    expect(mounts(plan.args).filter((m) => m.includes('.env') || m.includes('.pem'))).toEqual(['ro-bind /w/low/.env </r/denied']);
    expect(plan.warnings.filter((w) => w.includes('glob'))).toEqual([]);
    expect(encodeRules({ names: [], suffixes: [], gitInternals: [], exempt: [], markers: [] }, [], [], [], plan.gated).toString().split('\0'))
      .toEqual(['h/w/**/.env', 'O/w/conf/.env', 'h/h/**/*.pem', '']);
  });
});

describe('every writable root and the protected-path supervisor', () => {
  const via = (link: string, target: string, system = false) => ({ link, target, system });
  const sup = { seccomp: { helperPath: '/h/srt-init', goFd: 9, maxProcs: 8192, filterPath: '/r/f.bpf', relays: [], exposes: [], supervisor: { rulesPath: '/r/protect.rules', reportFd: 6 } } };

  it('an allowWrite entry through a symlink a sandbox could have planted is refused, naming the link', () => {
    const p = policy({ allowWrite: [rule('/w/build'), rule('/var/run/x'), rule('/h/sys/x')] });
    const f = facts({
      '/w/build': { real: '/etc', kind: 'dir', via: [via('/w/build', '/etc')] },
      // A root-owned link in a root-owned directory (the system's own layout) stays usable…
      '/var/run/x': { real: '/run/x', kind: 'dir', via: [via('/var/run', '/run', true)] },
      // …but not inside the home directory, cwd or another writable root.
      '/h/sys/x': { real: '/opt/x', kind: 'dir', via: [via('/h/sys', '/opt', true)] },
    });
    const plan = buildBwrapPlan(p, f, ['true']);
    expect(plan.warnings).toContain('filesystem.allowWrite: /w/build: runs through the symlink /w/build -> /etc; entry ignored (a sandboxed command could have planted that link; name the directory it points to instead)');
    expect(plan.warnings.some((w) => w.includes('/h/sys -> /opt'))).toBe(true);
    expect(plan.writable).toEqual(['/w', '/r/tmp', '/run/x']);
  });

  it('with the supervisor: no placeholders for missing write-denied paths; their rules list both spellings', () => {
    const targets = [{ path: '/w/.bashrc', kind: 'file' as const }, { path: '/w/.vscode', kind: 'dir' as const }, { path: '/w/.git/hooks', kind: 'dir' as const }];
    const p = policy({ denyWrite: [rule('/w/.env')], allowWrite: [rule('/data')] });
    const f = facts({
      '/w/.bashrc': { real: '/w/dotfiles/bashrc', kind: 'file', via: [via('/w/.bashrc', 'dotfiles/bashrc')] },
      '/w/.vscode': missing('/w/.vscode'), '/w/.git/hooks': missing('/w/.git/hooks', '/w/.git'), '/w/.env': missing('/w/.env'), '/data': dir('/data'),
    }, { ...sup, protectedTargets: targets });
    const plan = buildBwrapPlan(p, f, ['true']);
    expect(plan.placeholders).toEqual([]);
    expect(mounts(plan.args)).toContain('ro-bind-try /w/dotfiles/bashrc');
    expect(plan.protectedRoots).toEqual(['/w', '/data']);
    expect(plan.protectedPaths).toEqual(expect.arrayContaining(['/w/.env', '/w/.bashrc', '/w/dotfiles/bashrc', '/w/.vscode', '/w/.git/hooks']));
    const args = plan.args.slice(plan.args.indexOf('/h/srt-init'));
    expect(args.join(' ')).toContain('--protect /r/protect.rules --report-fd 6 --max-procs 8192 --go-fd 9 --filter /r/f.bpf --');
    // Without it, the same plan needs the placeholders.
    const fallback = buildBwrapPlan(p, { ...f, seccomp: { helperPath: '/h/srt-init', goFd: 9, maxProcs: 8192, filterPath: '/r/f.bpf', relays: [], exposes: [] } }, ['true']);
    expect(fallback.placeholders.map((ph) => ph.path)).toEqual(['/w/.env', '/w/.vscode', '/w/.git']);
  });

  it('warns when a writable root holds the home directory', () => {
    const none = buildBwrapPlan(policy(), facts({}), ['true']);
    expect(none.warnings.join()).not.toMatch(/home directory/);
    const plan = buildBwrapPlan(policy({ allowWrite: [rule('/')] }, { home: '/h' }), facts({ '/': dir('/') }), ['true']);
    expect(plan.warnings).toContain('the whole home directory /h is writable in this sandbox (through /): apart from srt\'s protected paths, the command can change any of your files there, including ones other programs run later');
  });
});

describe('the mount plan the helper checks', () => {
  it('lists every mount but bwrap\'s /dev and /proc, the last one per place, with the working directory', () => {
    const plan = buildBwrapPlan(
      policy({ denyRead: [rule('/h/.ssh'), rule('/w/.env')], allowRead: [rule('/h/.ssh/config')] }),
      facts({ '/h/.ssh': dir('/h/.ssh'), '/h/.ssh/config': file('/h/.ssh/config'), '/w/.env': file('/w/.env') }),
      ['true'],
    );
    expect(plannedMounts(plan.ops)).toEqual([
      { kind: 'bind', dest: '/', source: '/', ro: true },
      { kind: 'bind', dest: '/w', source: '/w', ro: false },
      { kind: 'tmpfs', dest: '/h/.ssh' },
      { kind: 'bind', dest: '/r/tmp', source: '/r/tmp', ro: false },
      { kind: 'bind', dest: '/w/.env', source: '/r/denied', ro: true },
      { kind: 'bind', dest: '/h/.ssh/config', source: '/h/.ssh/config', ro: true },
    ]);
    expect(plan.chdir).toBe('/w');
    const hidden = buildBwrapPlan(policy({ denyRead: [rule('/')], allowRead: [rule('/usr')] }), facts({ '/': dir('/'), '/usr': dir('/usr') }), ['true']);
    expect(plannedMounts(hidden.ops).slice(0, 2)).toEqual([{ kind: 'tmpfs', dest: '/' }, { kind: 'bind', dest: '/sys', source: '/sys', ro: true }]);
  });

  it('is handed to the helper (--verify) and encoded as NUL-terminated records; a source that changed stops the run', () => {
    const seccomp = { helperPath: '/h/srt-init', goFd: 9, maxProcs: 8192, filterPath: '/r/f.bpf', relays: [], exposes: [], mountsPath: '/r/mounts' };
    const plan = buildBwrapPlan(policy(), facts({}, { seccomp }), ['true']);
    expect(plan.args.slice(plan.args.indexOf('/h/srt-init'))).toContain('--verify');
    expect(plan.args[plan.args.indexOf('--verify') + 1]).toBe('/r/mounts');
    const ids = new Map([['/', { dev: '1', ino: '2' }], ['/w', { dev: '1', ino: '7' }]]);
    const enc = encodeMounts([
      { kind: 'bind', dest: '/', source: '/', ro: true },
      { kind: 'bind', dest: '/w', source: '/w', ro: false },
      { kind: 'tmpfs', dest: '/h/.ssh' },
      { kind: 'symlink', dest: '/lib64', target: 'usr/lib64' },
      { kind: 'bind', dest: '/h/gone', source: '/h/gone', ro: true, optional: true },
    ], (p) => ids.get(p) ?? null, { path: '/w', id: { dev: '1', ino: '7' } });
    expect('data' in enc && enc.data.toString().split('\0')).toEqual(['B', '/', '1', '2', 'r', 'B', '/w', '1', '7', 'w', 'T', '/h/.ssh',
      'L', '/lib64', 'usr/lib64', 'B', '/h/gone', '0', '0', 'ro', 'C', '1', '7', '']);
    // A working directory srt mounts a tmpfs on (a snapshot, a masked directory) has no identity
    // before the run: it must be the mount verified at its path.
    const atMount = encodeMounts([{ kind: 'tmpfs', dest: '/h' }], () => null, { path: '/h', id: { dev: '1', ino: '5' } });
    expect('data' in atMount && atMount.data.toString().split('\0')).toEqual(['T', '/h', 'c', '/h', '']);
    expect(encodeMounts([{ kind: 'bind', dest: '/x', source: '/x', ro: true }], () => null, { path: '/cwd' }))
      .toEqual({ error: '/x changed or disappeared while srt was setting up the sandbox; nothing ran, try again' });
  });
});

describe('denies that hold while the command runs (a host program replacing a denied path)', () => {
  const sup = { seccomp: { helperPath: '/h/srt-init', goFd: 9, maxProcs: 8192, filterPath: '/r/f.bpf', relays: [], exposes: [], supervisor: { rulesPath: '/r/rules', reportFd: 9 } } };
  it('outside the writable paths: each replaceable directory on the way becomes a read-only snapshot with its entries bound back', () => {
    const plan = buildBwrapPlan(policy({ denyRead: [rule('/h/.aws/credentials')] }), facts({ '/h/.aws/credentials': file('/h/.aws/credentials') }, {
      replaceable: new Set(['/h/.aws/credentials', '/h/.aws']), // /h itself sits in root's /
      snapshots: new Map([['/h/.aws', [{ name: 'config', kind: 'file' as const }, { name: 'credentials', kind: 'file' as const }]],
        ['/h', [{ name: '.aws', kind: 'dir' as const }, { name: 'link', kind: 'symlink' as const, target: '.aws' }]]]),
    }), ['true']);
    expect(plan.snapshots).toEqual(['/h', '/h/.aws']);
    const m = mounts(plan.args);
    expect(m).toContain('tmpfs /h');
    expect(m).toContain('tmpfs /h/.aws');
    expect(plan.args.join(' ')).toContain('--tmpfs /h/.aws --ro-bind-try /h/.aws/config /h/.aws/config');
    expect(m).toContain('remount-ro /h/.aws');
    expect(plan.args.join(' ')).toContain('--symlink .aws /h/link');
    expect(m.filter((x) => x.includes('/h/.aws/credentials'))).toEqual(['ro-bind /h/.aws/credentials </r/denied']); // masked, not bound back
    expect(plan.gated).toEqual([]);
  });

  it('with the helper\'s mount check the helper binds the entries: bwrap binds each directory once, at a stage in the run directory', () => {
    const seccomp = { ...sup.seccomp, mountsPath: '/r/mounts', stageDir: '/r/stage' };
    const plan = buildBwrapPlan(policy({ denyRead: [rule('/h/.aws/credentials'), rule('/h/.config/gh')] }), facts({
      '/h/.aws/credentials': file('/h/.aws/credentials'), '/h/.config/gh': dir('/h/.config/gh'),
    }, {
      seccomp, replaceable: new Set(['/h/.aws/credentials', '/h/.aws', '/h/.config']), // ~/.config's entries are not the caller's
      snapshots: new Map([['/h/.aws', [{ name: 'config', kind: 'file' as const }, { name: 'credentials', kind: 'file' as const }]],
        ['/h', [{ name: '.aws', kind: 'dir' as const }, { name: '.config', kind: 'dir' as const },
          { name: '.bashrc', kind: 'file' as const }, { name: 'link', kind: 'symlink' as const, target: '.aws' }]]]),
    }), ['true']);
    expect(plan.snapshots).toEqual(['/h', '/h/.aws']);
    const args = plan.args.join(' ');
    // The stages last (the run directory is bound deeper than most snapshots), then the read-only remounts.
    expect(args).toContain('--tmpfs /r/stage --ro-bind /h /r/stage/0 --ro-bind /h/.aws /r/stage/1 --remount-ro');
    expect(args).not.toContain('/h/.aws/config');
    expect(args).not.toContain('/h/.bashrc');
    expect(args).not.toContain('--remount-ro /h ');
    expect(args).not.toContain('--remount-ro /h/.aws');
    // ~/.config holds a mask of its own (gh): bwrap binds it, before that mask.
    expect(args).toContain('--ro-bind-try /h/.config /h/.config');
    expect(args.indexOf('--ro-bind-try /h/.config /h/.config')).toBeLessThan(args.indexOf('--tmpfs /h/.config/gh'));
    expect(args).toContain('--symlink .aws /h/link');
    expect(plannedMounts(plan.ops)).toEqual(expect.arrayContaining([
      { kind: 'tmpfs', dest: '/h' }, { kind: 'stage', dest: '/r/stage/0', dir: '/h' }, { kind: 'cover', dest: '/r/stage' },
      { kind: 'bind', dest: '/h/.bashrc', source: '/h/.bashrc', ro: true, optional: true, byHelper: true },
      { kind: 'bind', dest: '/h/.aws/config', source: '/h/.aws/config', ro: true, optional: true, byHelper: true },
      { kind: 'bind', dest: '/h/.config', source: '/h/.config', ro: true, optional: true },
    ]));
    // The denied file too is the helper's bind (bwrap's cost grows with every mount it makes).
    expect(plannedMounts(plan.ops).filter((m) => m.dest === '/h/.aws/credentials')).toEqual([{ kind: 'bind', dest: '/h/.aws/credentials', source: '/r/denied', ro: true, byHelper: true, deny: true }]);
    expect(args).not.toContain('/h/.aws/credentials');
    const denyIds = new Map([['/r/denied', { dev: '2', ino: '9' }]]);
    const denyEnc = encodeMounts(plannedMounts(plan.ops).filter((m) => m.dest === '/h/.aws/credentials'), (p) => denyIds.get(p) ?? null, { path: '/cwd' });
    expect('data' in denyEnc && denyEnc.data.toString().split('\0')).toEqual(['F', '/r/denied', '2', '9', 'B', '/h/.aws/credentials', '2', '9', 'rd', '']);
    expect(encodeMounts([{ kind: 'bind', dest: '/a', source: '/r/denied', ro: true, byHelper: true, deny: true },
      { kind: 'bind', dest: '/b', source: '/r/other', ro: true, byHelper: true, deny: true }], () => ({ dev: '1', ino: '1' }), { path: '/cwd' }))
      .toEqual({ error: 'more than one denied file' });
    const ids = new Map([['/h', { dev: '1', ino: '5' }], ['/h/.bashrc', { dev: '1', ino: '6' }]]);
    const enc = encodeMounts(plannedMounts(plan.ops).filter((m) => m.dest === '/r/stage/0' || m.dest === '/r/stage' || m.dest === '/h/.bashrc'), (p) => ids.get(p) ?? null, { path: '/cwd' });
    expect('data' in enc && enc.data.toString().split('\0')).toEqual(['B', '/h/.bashrc', '1', '6', 'ros', 'S', '/h', '/r/stage/0', '1', '5', 'K', '/r/stage', '']);
    expect(encodeMounts([{ kind: 'stage', dest: '/h/.s', dir: '/h' }], () => null, { path: '/cwd' }))
      .toEqual({ error: '/h changed or disappeared while srt was setting up the sandbox; nothing ran, try again' });
  });

  it('with the helper: an entry holding a sentinel copy below it is bound by bwrap, before the copy', () => {
    const seccomp = { ...sup.seccomp, mountsPath: '/r/mounts', stageDir: '/r/stage' };
    const plan = buildBwrapPlan(policy(), facts({ '/h/.config/gh/hosts.yml': file('/h/.config/gh/hosts.yml') }, {
      seccomp, replaceable: new Set(['/h/.config']), credentials: { deny: [], masked: [{ path: '/h/.config/gh/hosts.yml', fd: 9, mode: 0o600 }] },
      snapshots: new Map([['/h', [{ name: '.config', kind: 'dir' as const }, { name: '.bashrc', kind: 'file' as const }]]]),
    }), ['true']);
    expect(plan.snapshots).toEqual(['/h']);
    const args = plan.args.join(' ');
    expect(args.indexOf('--ro-bind-try /h/.config /h/.config')).toBeGreaterThan(-1);
    expect(args.indexOf('--ro-bind-try /h/.config /h/.config')).toBeLessThan(args.indexOf('--ro-bind-data 9 /h/.config/gh/hosts.yml'));
    expect(plannedMounts(plan.ops)).toContainEqual({ kind: 'bind', dest: '/h/.bashrc', source: '/h/.bashrc', ro: true, optional: true, byHelper: true });
  });

  it('with the supervisor, a snapshot too large (or past the budget) hands every deny outside to the read gate; a masked copy keeps its snapshot', () => {
    const seccomp = { ...sup.seccomp, mountsPath: '/r/mounts', stageDir: '/r/stage' };
    const l = { '/h/.aws/credentials': file('/h/.aws/credentials'), '/data/big/s1': file('/data/big/s1'), '/h/.config/gh/hosts.yml': file('/h/.config/gh/hosts.yml') };
    const f = (snapshots?: BwrapFacts['snapshots']) => facts(l, {
      seccomp, replaceable: new Set(['/h/.aws/credentials', '/h/.aws', '/data/big/s1', '/h/.config', '/h/.config/gh', '/h/.config/gh/hosts.yml']),
      credentials: { deny: [], masked: [{ path: '/h/.config/gh/hosts.yml', fd: 9, mode: 0o600 }] },
      ...(snapshots ? { snapshots } : {}),
    });
    const p = policy({ denyRead: [rule('/h/.aws/credentials'), rule('/data/big/s1')] });
    // The first plan asks for every directory, those the masked copy needs first.
    expect(buildBwrapPlan(p, f(), ['true']).snapshots).toEqual(['/h', '/h/.config', '/h/.config/gh', '/data/big', '/h/.aws']);
    const listed = (names: string[]) => names.map((name) => ({ name, kind: 'file' as const }));
    const plan = buildBwrapPlan(p, f(new Map<string, SnapshotEntry[] | 'too-large'>([
      ['/h', listed(['.aws', '.config'])], ['/h/.config', listed(['gh'])], ['/h/.config/gh', listed(['hosts.yml'])],
      ['/data/big', 'too-large'], ['/h/.aws', listed(['credentials', 'config'])],
    ])), ['true']);
    expect(plan.gated).toEqual([{ path: '/h/.aws/credentials', reopened: [] }, { path: '/data/big/s1', reopened: [] }]);
    expect(plan.snapshots).toEqual(['/h', '/h/.config', '/h/.config/gh']);
    expect(plan.warnings.join('\n')).not.toContain('too many entries');
    // The masks stay: a rename over the file is what the gate catches, the mount hides the rest.
    expect(plannedMounts(plan.ops)).toEqual(expect.arrayContaining([
      { kind: 'bind', dest: '/h/.aws/credentials', source: '/r/denied', ro: true, byHelper: true, deny: true },
      { kind: 'bind', dest: '/data/big/s1', source: '/r/denied', ro: true, byHelper: true, deny: true },
    ]));
    // One planner for both plans (gatherLinux's): the same plans as planned apart, the second
    // untouched by what the first added to its tree and diagnostics.
    const listings = new Map<string, SnapshotEntry[] | 'too-large'>([['/h', listed(['.aws', '.config'])], ['/h/.config', listed(['gh'])], ['/h/.config/gh', listed(['hosts.yml'])], ['/data/big', listed(['s1', 's2'])], ['/h/.aws', listed(['credentials'])]]);
    const planner = mountPlanner(p, f());
    const first = planner(undefined);
    expect(withCommand(p, f(), first, ['true'])).toEqual(buildBwrapPlan(p, f(), ['true']));
    for (const snapshots of [listings, new Map([...listings, ['/data/big', 'too-large' as const]])]) {
      expect(withCommand(p, f(), planner(snapshots), ['true'])).toEqual(buildBwrapPlan(p, f(snapshots), ['true']));
    }
  });

  it('a read deny the read gate holds in a writable path needs no rename guards; a write deny keeps them', () => {
    const p = policy({ denyRead: [rule('/w/a/b/c/.env')], denyWrite: [rule('/w/x/y/hook')] });
    const l = { '/w/a/b/c/.env': file('/w/a/b/c/.env'), '/w/x/y/hook': file('/w/x/y/hook') };
    const gated = buildBwrapPlan(p, facts(l, sup), ['true']);
    expect(mounts(gated.args).filter((m) => /^(ro-)?bind(-try)? \/w\//.test(m))).toEqual(['bind-try /w/x', 'bind-try /w/x/y', 'ro-bind-try /w/x/y/hook', 'ro-bind /w/a/b/c/.env </r/denied']);
    const mounted = buildBwrapPlan(p, facts(l), ['true']);
    expect(mounts(mounted.args)).toEqual(expect.arrayContaining(['bind /w/a', 'bind /w/a/b', 'bind /w/a/b/c']));
  });

  it('a write-denied path a host program removes before the mounts (a temporary clone deleted): with the supervisor, its bind and rename guards are skipped, never fatal; without it they stay required', () => {
    // The supervisor refuses creating a write-denied path that is missing, so one that vanished
    // after srt looked is no weaker than one that never existed; srt-init then wants nothing there.
    const p = policy({ allowWrite: [rule('/tmp')], denyWrite: [rule('/w/keep')] });
    const l = { '/tmp': dir('/tmp'), '/tmp/clone/app/.git/hooks': dir('/tmp/clone/app/.git/hooks'), '/w/keep': file('/w/keep') };
    const targets = [{ path: '/tmp/clone/app/.git/hooks', kind: 'dir' as const }];
    const binds = (plan: ReturnType<typeof buildBwrapPlan>) => plan.ops.filter((m) => m.kind === 'bind' && m.dest !== '/');
    const supervised = buildBwrapPlan(p, facts(l, { ...sup, protectedTargets: targets }), ['true']);
    expect(mounts(supervised.args)).toEqual(expect.arrayContaining(['bind-try /tmp/clone', 'bind-try /tmp/clone/app', 'bind-try /tmp/clone/app/.git', 'ro-bind-try /tmp/clone/app/.git/hooks', 'ro-bind-try /w/keep']));
    // The write roots themselves stay required: one that vanished is an error, not a skip.
    expect(binds(supervised).filter((m) => m.kind === 'bind' && !m.optional).map((m) => m.dest)).toEqual(['/tmp', '/w', '/r/tmp']);
    const fallback = buildBwrapPlan(p, facts(l, { protectedTargets: targets }), ['true']);
    expect(binds(fallback).filter((m) => m.kind === 'bind' && m.optional)).toEqual([]);
  });

  it('a directory too large to snapshot is left as it is, with a warning; one srt did not list stops the run', () => {
    const f = (snapshots: BwrapFacts['snapshots']) => facts({ '/h/.aws/credentials': file('/h/.aws/credentials') }, { replaceable: new Set(['/h/.aws/credentials']), ...(snapshots ? { snapshots } : {}) });
    const big = buildBwrapPlan(policy({ denyRead: [rule('/h/.aws/credentials')] }), f(new Map([['/h/.aws', 'too-large' as const]])), ['true']);
    expect(big.snapshots).toEqual([]);
    expect(big.warnings.join('\n')).toContain('/h/.aws holds too many entries for srt to snapshot');
    const unlisted = buildBwrapPlan(policy({ denyRead: [rule('/h/.aws/credentials')] }), f(undefined), ['true']);
    expect(unlisted.errors.join('\n')).toContain('srt did not list /h/.aws');
  });

  it('inside a writable path: gated (the supervisor checks opens), with what allowRead re-opens; without the supervisor a warning', () => {
    const p = policy({ denyRead: [rule('/w/secrets'), rule('/w/.env')], allowRead: [rule('/w/secrets/public')] });
    const l = { '/w/secrets': dir('/w/secrets'), '/w/.env': file('/w/.env'), '/w/secrets/public': dir('/w/secrets/public') };
    const plan = buildBwrapPlan(p, facts(l, { ...sup, replaceable: new Set(['/w/secrets', '/w/.env']) }), ['true']);
    expect(plan.warnings.join('\n')).not.toContain('inside a writable directory');
    expect(plan.gated).toEqual(expect.arrayContaining([{ path: '/w/.env', reopened: [] }, { path: '/w/secrets', reopened: ['/w/secrets/public'] }]));
    expect(plan.snapshots).toEqual([]); // a snapshot there would swallow the command's writes
    const unsup = buildBwrapPlan(p, facts(l), ['true']);
    expect(unsup.warnings.join('\n')).toContain('inside a writable directory: if a program outside the sandbox replaces one during the run');
  });

  it('a denied path that does not exist yet is held too: its first missing component decides', () => {
    const plan = buildBwrapPlan(policy({ denyRead: [rule('/w/.env'), rule('/h/.config/gh/hosts.yml')] }), facts({
      '/w/.env': missing('/w/.env'), '/h/.config/gh/hosts.yml': missing('/h/.config/gh/hosts.yml', '/h/.config/gh'),
    }, { ...sup, replaceable: new Set(['/h/.config/gh', '/h/.config']), snapshots: new Map([['/h/.config', []], ['/h', [{ name: '.config', kind: 'dir' as const }]]]) }), ['true']);
    expect(plan.gated.map((g) => g.path)).toEqual(['/w/.env']);
    expect(plan.snapshots).toEqual(['/h', '/h/.config']);
  });

  it('a denied file with other hard links is reported once (its other names show its content)', () => {
    const linked = { ...file('/w/key'), nlink: 2 };
    const plan = buildBwrapPlan(policy({ denyRead: [rule('/w/key'), rule('/w/./key')] }), facts({ '/w/key': linked, '/w/./key': linked }), ['true']);
    expect(plan.warnings.filter((w) => w.includes('hard links'))).toEqual([
      'filesystem.denyRead: /w/key: /w/key has 2 hard links: the command can read it under its other names unless they are denied too (find / -xdev -samefile /w/key)']);
    const single = buildBwrapPlan(policy({ denyRead: [rule('/w/key')] }), facts({ '/w/key': file('/w/key') }), ['true']);
    expect(single.warnings.join('\n')).not.toContain('hard links');
  });

  // srt lists a snapshot's entries after it planned: a denied path missing then but made by a
  // program outside meanwhile (a credential refresh) would be bound back with its real content.
  it('a denied path that appeared after srt looked is not bound back into the snapshot (with and without the helper)', () => {
    const seccomp = { ...sup.seccomp, mountsPath: '/r/mounts', stageDir: '/r/stage' };
    for (const s of [sup.seccomp, seccomp]) {
      const plan = buildBwrapPlan(policy({ denyRead: [rule('/h/.config/gh/hosts.yml'), rule('/h/.env')] }), facts({
        '/h/.config/gh/hosts.yml': missing('/h/.config/gh/hosts.yml', '/h/.config/gh'), '/h/.env': missing('/h/.env'),
      }, {
        seccomp: s, replaceable: new Set(['/h/.config/gh', '/h/.config', '/h/.env']),
        snapshots: new Map([['/h/.config', [{ name: 'gh', kind: 'dir' as const }, { name: 'other', kind: 'file' as const }]],
          ['/h', [{ name: '.config', kind: 'dir' as const }, { name: '.env', kind: 'file' as const }]]]),
      }), ['true']);
      expect(plan.snapshots).toEqual(['/h', '/h/.config']);
      expect(plannedMounts(plan.ops).filter((m) => m.dest === '/h/.config/gh' || m.dest === '/h/.env')).toEqual([]);
      expect(plan.args).not.toContain('/h/.config/gh');
      expect(plan.args).not.toContain('/h/.env');
      expect(plannedMounts(plan.ops).some((m) => m.dest === '/h/.config/other')).toBe(true);
    }
  });
});
