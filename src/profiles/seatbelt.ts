// Policy → Seatbelt profile (SBPL) for `sandbox-exec -p PROFILE -D NAME=VALUE …` (pure).
//
// Precedence. When several rules match one operation, Seatbelt applies the one written LAST
// (profiles are compiled into a per-operation rule list evaluated newest-first; Apple's own
// profiles, Chromium's and the reference srt rely on it). The file rules below do not depend on
// that: reads and writes are each ONE allow rule whose filter is exactly the set the access model
// (access.ts) allows, so no allow and deny ever meet on a file-read*/file-write* path, and only
// `(deny default)` is below them. A few narrowing denies come last and do rely on it: rename
// guards (file-write-unlink), existing `.git` files, hard links and set-id bits.
//
// Specificity and trust (access.ts) become static filters: each deny region minus the allows that
// may re-open it —
//   literal allow in literal deny: re-opens where it lies inside the deny;
//   literal allow, glob deny:      re-opens when the glob already covers the allow's path;
//   glob allow, literal deny:      re-opens unless the glob matches an ancestor of the deny;
//   glob allow, glob deny:         only the same glob re-opens;
// always only when the allow's trust is at least the deny's.
//
// Paths and path regexes are -D parameters, never spliced into the profile text: the text holds
// only srt's own constants (comments are sanitised to one line). Deny-side regexes match ASCII
// letters in either case (macOS volumes are case-insensitive: `.GIT/HOOKS` is `.git/hooks`);
// allow-side filters are exact (a case variant is never re-opened: fail closed).

import { dirname } from 'node:path';
import { isWithin, literalTokens, parseGlob, tokensToEre } from '../glob.js';
import type { Policy } from '../policy.js';
import { forwardedPorts } from '../proxy/local-services.js';
import { accessPaths, buildAccessRules, type AccessRules } from './access.js';
import type { AccessRule } from './access-rule.js';
import { coverDepth, regionTokens, sameRegion, type Region } from './region.js';
import type { Landing } from './landing.js';
import { protectedPatterns } from './protected-patterns.js';

/** -D parameters whose values exist only once the proxy listens (`localhost:PORT`). */
export const HTTP_PROXY_PARAM = 'SRT_HTTP_PROXY';
export const SOCKS_PROXY_PARAM = 'SRT_SOCKS_PROXY';

export interface SeatbeltFacts {
  /** Landing of every path from `seatbeltPaths()` (macOS: real paths in their on-disk case). */
  landings: ReadonlyMap<string, Landing>;
  tmpDir: string;
  runDir: string;
  /** `~/.srt/run`: other runs' directories are hidden. */
  runRoot?: string;
  runtimeFiles?: { path: string }[];
  worktree?: { commonDir: string; gitDir: string };
  cwdIsRepository: boolean;
  cwdGitFile: boolean;
  /** The terminal devices srt's stdin/stdout/stderr are (`/dev/ttys003`): the command keeps them. */
  terminals: string[];
  managedDir: string;
  /** Marks this run's denials in the system log (`srt-<hex>`). */
  logTag: string;
  /** Where existing matches of deny globs lead (symlinks), by rule path (access.ts). */
  globTargets?: ReadonlyMap<string, string[]>;
  /** Directories `core.hooksPath` names (the repository's and the global config's), resolved. */
  hooksDirs?: string[];
  /** A global relative one-component `core.hooksPath`: protected as a name everywhere. */
  hooksName?: string;
}

export interface SeatbeltPlan {
  profile: string;
  /** `-D NAME=VALUE` pairs in order of first use, except the proxy ones (`runtimeParams`). */
  params: [string, string][];
  /** Parameters the runner supplies once the proxy listens. */
  runtimeParams: string[];
  warnings: string[];
  notes: string[];
  /** Why the sandbox must not start (fail closed). */
  errors: string[];
  /** Write roots (real paths), outermost first. */
  writable: string[];
  rules: AccessRules;
}

/** Every literal path whose landing the platform must resolve. */
export function seatbeltPaths(policy: Policy, worktree?: SeatbeltFacts['worktree']): string[] {
  return [...new Set([...accessPaths(policy, worktree), policy.home, policy.root, ...policy.network.allowUnixSockets])];
}

// --- SBPL text

type Sx = string | { items: Sx[]; comment?: string };

const sx = (...items: Sx[]): Sx => ({ items });
const commented = (comment: string, node: Sx): Sx => (typeof node === 'string' ? { items: [node], comment } : { ...node, comment });

/** An SBPL string literal (backslash and double quote escaped). */
export function sbplString(s: string): string {
  return `"${s.replace(/[\\"]/g, (c) => `\\${c}`)}"`;
}

/** One comment line: control characters (a newline would end the comment) become `?`. */
function commentText(s: string): string {
  return s.replace(/[\u0000-\u001f\u007f\u2028\u2029]/g, '?');
}

function flat(node: Sx): string | null {
  if (typeof node === 'string') return node;
  if (node.comment !== undefined) return null;
  const parts = node.items.map(flat);
  if (parts.some((p) => p === null)) return null;
  return `(${parts.join(' ')})`;
}

function render(node: Sx, indent = ''): string {
  const lead = typeof node !== 'string' && node.comment !== undefined ? `${indent}; ${commentText(node.comment)}\n` : '';
  const line = flat(typeof node === 'string' ? node : { items: node.items });
  if (line !== null && indent.length + line.length <= 110) return `${lead}${indent}${line}`;
  const items = (node as { items: Sx[] }).items;
  // Keep the operation (and its name arguments) on the first line, one filter per line after.
  let head = 0;
  while (head < items.length && typeof items[head] === 'string') head++;
  const first = items.slice(0, Math.max(head, 1)).map((i) => flat(i) ?? '').join(' ');
  const rest = items.slice(Math.max(head, 1)).map((i) => render(i, `${indent}  `));
  return `${lead}${indent}(${first}\n${rest.join('\n')})`;
}

class Params {
  readonly list: [string, string][] = [];
  private readonly byValue = new Map<string, string>();
  private n = { P: 0, R: 0 };
  private name(kind: 'P' | 'R', value: string): string {
    const key = `${kind}\0${value}`;
    let name = this.byValue.get(key);
    if (!name) {
      name = `${kind}${++this.n[kind]}`;
      this.byValue.set(key, name);
      this.list.push([name, value]);
    }
    return name;
  }
  path(value: string): Sx { return sx('param', sbplString(this.name('P', value))); }
  regex(value: string): Sx { return sx('param', sbplString(this.name('R', value))); }
}

const any = (filters: Sx[]): Sx => (filters.length === 1 ? filters[0]! : sx('require-any', ...filters));
const all = (filters: Sx[]): Sx => (filters.length === 1 ? filters[0]! : sx('require-all', ...filters));
const not = (filter: Sx): Sx => sx('require-not', filter);
const literal = (p: string): Sx => sx('literal', sbplString(p));
const subpathConst = (p: string): Sx => sx('subpath', sbplString(p));
const msg = (tag: string): Sx => sx('with', 'message', sbplString(tag));

// --- regions as filters

/** ERE for "this region": the paths it names and everything below them. */
export function regionEre(region: Region, foldCase: boolean): string {
  if (region.tail === undefined && region.base === '/') return '^/.*$';
  return `^${tokensToEre(regionTokens(region), { foldCase })}(/.*)?$`;
}

/** ERE for exactly the paths a region's pattern names (not below them). */
function exactEre(region: Region): string {
  return `^${tokensToEre(regionTokens(region), { foldCase: true })}$`;
}

/** Deny side: case-insensitive regex. */
function denyFilter(params: Params, rule: AccessRule): Sx {
  return sx('regex', params.regex(regionEre(rule.region, true)));
}

/** Allow side: exact; a literal region is a subpath. */
function allowFilter(params: Params, rule: AccessRule): Sx {
  if (rule.region.tail === undefined) return sx('subpath', params.path(rule.region.base));
  return sx('regex', params.regex(regionEre(rule.region, false)));
}

/** denyWrite and protected paths; the protected names below one root become one alternation. */
function writeDenyFilters(params: Params, denies: AccessRule[]): Sx[] {
  const byRoot = new Map<string, string[]>();
  const single: AccessRule[] = [];
  for (const d of denies) {
    const { base, tail } = d.region;
    if (d.kind === 'protected' && tail?.startsWith('**/')) byRoot.set(base, [...(byRoot.get(base) ?? []), tail.slice(3)]);
    else single.push(d);
  }
  const grouped = [...byRoot].map(([base, names]) => {
    const alts = names.map((n) => tokensToEre(parseGlob(n), { foldCase: true }));
    const ere = `^${tokensToEre(literalTokens(base === '/' ? '/' : `${base}/`), { foldCase: true })}(.*/)?(${alts.join('|')})(/.*)?$`;
    return commented(`protected at any depth below ${base}: ${names.join(' ')}`, sx('regex', params.regex(ere)));
  });
  return [...grouped, ...single.map((d) => commented(d.origin, denyFilter(params, d)))];
}

/** May `allow` re-open `deny` anywhere (see the header)? */
function mayReopen(allow: AccessRule, deny: AccessRule): boolean {
  if (allow.trust < deny.trust) return false;
  const a = allow.region;
  const d = deny.region;
  if (a.tail === undefined && d.tail === undefined) return isWithin(a.base, d.base);
  if (a.tail === undefined) return coverDepth(d, a.base) !== null;
  if (d.tail === undefined) return d.base === '/' || coverDepth(a, dirname(d.base)) === null;
  return sameRegion(a, d);
}

/** Could the region contain a path under `dir` (or be inside it)? */
function touches(region: Region, dir: string): boolean {
  return isWithin(region.base, dir) || isWithin(dir, region.base);
}

// --- fixed groups (each documented: what ordinary tools need and why)

/** sysctl reads: hardware and OS facts that runtimes (Node/V8, Python, Go, Rust) query at start.
 *  Not kern.proc.all or kern.procargs2 (the host's process list and other processes' argv and
 *  environment), which the sandbox on Linux cannot see either. */
const SYSCTL_NAMES = [
  'kern.argmax', 'kern.bootargs', 'kern.boottime', 'kern.hostname', 'kern.maxfiles', 'kern.maxfilesperproc',
  'kern.maxproc', 'kern.ngroups', 'kern.osproductversion', 'kern.osproductversioncompat', 'kern.osrelease',
  'kern.ostype', 'kern.osvariant_status', 'kern.osversion', 'kern.secure_kernel', 'kern.tcsm_available',
  'kern.tcsm_enable', 'kern.usrstack64', 'kern.version', 'kern.willshutdown', 'security.mac.lockdown_mode_state',
  'sysctl.proc_cputype', 'sysctl.proc_translated', 'vm.loadavg', 'vm.swapusage',
];
const SYSCTL_PREFIXES = ['hw.', 'machdep.cpu.', 'machdep.ptrauth_enabled', 'kern.proc.pid.', 'net.routetable.'];

/** Mach services (XPC/MIG servers in launchd's namespace) ordinary command-line tools talk to.
 *  Left out on purpose: com.apple.SecurityServer/securityd (the keychain holds real secrets),
 *  launchservicesd and lsd (`open` would start applications outside the sandbox), mDNSResponder
 *  (DNS is a way out past the proxy), launchd domains (launchctl submit runs jobs outside), the
 *  window server and pasteboard. */
const MACH_SERVICES: [string, string][] = [
  ['com.apple.system.opendirectoryd.libinfo', 'user and group names (getpwuid: id, whoami, ssh, git, Python pwd)'],
  ['com.apple.system.opendirectoryd.membership', 'group membership checks'],
  ['com.apple.system.logger', 'syslog(3): without it every Apple library call that logs waits or fails'],
  ['com.apple.logd', 'os_log, used by libSystem and every framework'],
  ['com.apple.system.notification_center', 'notify(3): libSystem follows time zone and configuration changes'],
  ['com.apple.bsd.dirhelper', 'confstr(_CS_DARWIN_USER_TEMP_DIR) and per-user cache directories'],
  ['com.apple.cfprefsd.daemon', 'CFPreferences reads (cfprefsd applies the sandbox: reads only, see user-preference-read)'],
  ['com.apple.cfprefsd.agent', 'CFPreferences reads of the user domain'],
];

/** Devices every process may read (and the terminal it was given). */
const DEV_READ = ['/dev', '/dev/null', '/dev/zero', '/dev/random', '/dev/urandom', '/dev/tty', '/dev/dtracehelper', '/dev/stdin', '/dev/stdout', '/dev/stderr'];
const DEV_WRITE = ['/dev/null', '/dev/zero', '/dev/tty', '/dev/dtracehelper'];
const PTY_DEVICES = '^/dev/ttys[0-9]+$';
/** The terminal controls ordinary programs use (tcgetattr, tcsetattr, window size). */
const TERMINAL_IOCTLS = ['TIOCGETA', 'TIOCSETA', 'TIOCSETAW', 'TIOCSETAF', 'TIOCGWINSZ'];

export function buildSeatbeltProfile(policy: Policy, facts: SeatbeltFacts): SeatbeltPlan {
  const params = new Params();
  const warnings: string[] = [];
  const landing = (p: string): Landing => facts.landings.get(p) ?? { real: p, kind: 'missing', firstMissing: p };
  const rules = buildAccessRules(policy, {
    landings: facts.landings, tmpDir: facts.tmpDir, runDir: facts.runDir,
    ...(facts.runRoot ? { runRoot: facts.runRoot } : {}),
    ...(facts.runtimeFiles ? { runtimeFiles: facts.runtimeFiles } : {}),
    ...(facts.worktree ? { worktree: facts.worktree } : {}),
    ...(facts.globTargets ? { globTargets: facts.globTargets } : {}),
    protect: (roots) => protectedPatterns({
      roots, cwd: landing(policy.cwd).real, home: landing(policy.home).real, root: landing(policy.root).real,
      managedDir: facts.managedDir, cwdIsRepository: facts.cwdIsRepository, cwdGitFile: facts.cwdGitFile,
      ...(facts.worktree ? { worktree: facts.worktree } : {}),
      ...(facts.hooksDirs ? { hooksDirs: facts.hooksDirs } : {}),
      ...(facts.hooksName ? { hooksName: facts.hooksName } : {}),
      homeEntries: ['Library/LaunchAgents'],
    }),
  });
  warnings.push(...rules.warnings);
  const roots = rules.writeRoots.map((r) => r.region.base);
  const home = landing(policy.home).real;
  if (!policy.filesystem.disabled && roots.some((r) => isWithin(home, r))) {
    warnings.push(`the whole home directory ${home} is writable; its startup files, ~/.ssh, ~/.config/git, ~/Library/LaunchAgents and the other protected paths stay read-only`);
  }
  if (policy.filesystem.disabled) warnings.push('filesystem isolation is disabled (filesystem.disabled): the command can read and write every file you can');
  for (const [key, set] of [['enableWeakerNestedSandbox', policy.enableWeakerNestedSandbox], ['allowNestedUserNamespaces', policy.allowNestedUserNamespaces]] as const) {
    if (set) warnings.push(`${key} only has an effect on Linux; ignored on macOS`);
  }
  if (policy.allowAppleEvents) warnings.push('allowAppleEvents: the command may send Apple events, so it can script other applications (e.g. ask Terminal to run a command outside the sandbox)');
  if (policy.allowPty) warnings.push('allowPty: the command may open terminal devices, every /dev/ttys* of yours included (other terminal windows)');
  if (policy.network.allowLocalBinding) warnings.push('network.allowLocalBinding on macOS also lets the command connect to every service listening on this Mac\'s loopback (there is no private loopback)');

  const tag = facts.logTag;
  const terminals = facts.terminals.map((t) => sx('literal', params.path(t)));

  // Devices: /dev is readable only for the harmless entries and the command's own terminal; not
  // other terminals (keystrokes of other windows), raw disks or bpf (a root caller's way around
  // every file rule and the proxy).
  const devReadable: Sx[] = [...DEV_READ.map(literal), subpathConst('/dev/fd'), ...terminals];
  if (policy.allowPty) devReadable.push(literal('/dev/ptmx'), sx('regex', sbplString(PTY_DEVICES)));
  const devPrivate = commented('devices other than these', all([subpathConst('/dev'), not(any(devReadable))]));

  const hidden = (d: AccessRule): Sx => {
    const openers = rules.readAllows.filter((a) => mayReopen(a, d));
    const cover = denyFilter(params, d);
    const node = openers.length ? all([cover, not(any(openers.map((a) => allowFilter(params, a))))]) : cover;
    const by = openers.length ? `, re-opened by ${openers.map((a) => a.origin).join('; ')}` : '';
    return commented(`${d.origin}${by}`, node);
  };
  const readable = (denies: AccessRule[], withDevices: boolean): Sx | null => {
    const parts = denies.map(hidden);
    if (withDevices) parts.push(devPrivate);
    return parts.length ? not(any(parts)) : null;
  };

  const out: Sx[] = [];
  const section = (title: string) => out.push(`\n;; ${title}`);
  const rule = (comment: string | undefined, ...items: Sx[]) => out.push(comment ? commented(comment, sx(...items)) : sx(...items));

  section('Processes');
  rule('run programs and fork; exec is also limited to readable files, below', 'allow', 'process-fork');
  rule('signal and inspect its own processes only, never srt or other programs', 'allow', 'signal', sx('target', 'same-sandbox'));
  rule(undefined, 'allow', 'process-info*', sx('target', 'same-sandbox'));

  section('System information (sysctl), read only');
  rule('hardware and OS facts runtimes query at start; not kern.proc.all or kern.procargs2 (other processes and their environment)',
    'allow', 'sysctl-read', ...SYSCTL_NAMES.map((n) => sx('sysctl-name', sbplString(n))), ...SYSCTL_PREFIXES.map((n) => sx('sysctl-name-prefix', sbplString(n))));
  rule('V8 (Node) toggles the per-thread Apple silicon store-ordering mode', 'allow', 'sysctl-write', sx('sysctl-name', sbplString('kern.tcsm_enable')));

  section('System services (mach-lookup); not the keychain, LaunchServices, DNS, launchd or the window server');
  out.push(sx('allow', 'mach-lookup', ...MACH_SERVICES.map(([name, why]) => commented(why, sx('global-name', sbplString(name))))));
  rule('preferences: read, never write (writes would change how other programs behave later)', 'allow', 'user-preference-read');

  section('POSIX shared memory and semaphores (Python multiprocessing, build tools); macOS cannot isolate their names');
  rule(undefined, 'allow', 'ipc-posix-shm');
  rule(undefined, 'allow', 'ipc-posix-sem');

  section('Files: read (and exec) everything except what is hidden');
  const readFilter = readable(rules.readDenies, true);
  rule('denyRead and credential files, each minus what may re-open it (access.ts)', 'allow', 'file-read*', 'process-exec', ...(readFilter ? [readFilter] : []));
  rule('stat of any directory, so realpath() and getcwd() work through hidden parents (not their listing or files)',
    'allow', 'file-read-metadata', sx('vnode-type', 'DIRECTORY'));

  section('Files: write only under write roots, minus denyWrite and protected paths');
  const tmp = sx('subpath', params.path(facts.tmpDir));
  const writeRootFilters = rules.writeRoots.map((r) => commented(r.origin, allowFilter(params, r)));
  const writeDenies = writeDenyFilters(params, rules.writeDenies);
  const scope = [...roots, facts.tmpDir];
  const relevantDenies = rules.readDenies.filter((d) => scope.some((r) => touches(d.region, r)));
  const writeReadable = readable(relevantDenies, roots.some((r) => isWithin('/dev', r)));
  const underRoots = writeDenies.length
    ? all([commented('write roots', any(writeRootFilters)), commented('never these', not(any(writeDenies)))])
    : any(writeRootFilters);
  const writable = any([commented('srt\'s TMPDIR (removed after the run)', tmp), underRoots]);
  rule(undefined, 'allow', 'file-write*', writeReadable ? all([commented('only what is readable', writeReadable), writable]) : writable);
  rule('devices: data only, never their node', 'allow', 'file-write-data', ...DEV_WRITE.map(literal), subpathConst('/dev/fd'), ...terminals);
  rule('device controls on the devices above that are no terminal', 'allow', 'file-ioctl', ...DEV_WRITE.filter((d) => d !== '/dev/tty').map(literal));
  rule('the terminal: get and set its modes and read its size (isatty, raw mode); never TIOCSTI (typing into your shell)',
    'allow', 'file-ioctl', all([any([literal('/dev/tty'), ...terminals]), any(TERMINAL_IOCTLS.map((c) => sx('ioctl-command', c)))]));

  // Narrowing denies: written last, so they win over the allows above.
  section('Narrowing denies (last match wins)');
  const guards = renameGuards(rules, roots);
  if (guards.literals.length || guards.patterns.length) {
    const byBase = new Map<string, string[]>();
    for (const p of guards.patterns) byBase.set(p.region.base, [...(byBase.get(p.region.base) ?? []), p.region.tail!]);
    const filters: Sx[] = [
      ...guards.literals.map((p) => commented(p.why, sx('literal', params.path(p.path)))),
      ...[...byBase].map(([base, tails]) => {
        const alts = tails.map((t) => tokensToEre(parseGlob(t), { foldCase: true }));
        const ere = `^${tokensToEre(literalTokens(base === '/' ? '/' : `${base}/`), { foldCase: true })}(${alts.join('|')})$`;
        return commented(`directories below ${base}: ${tails.join(' ')}`, all([sx('vnode-type', 'DIRECTORY'), sx('regex', params.regex(ere))]));
      }),
    ];
    rule('no rename or removal of the directories a protected or denied path hangs from (moving one would carry the path out of its rule)',
      'deny', 'file-write-unlink', all([any(filters), not(tmp)]), msg(tag));
  }
  if (!policy.filesystem.disabled && roots.length) {
    const gitFiles = roots.map((r) => sx('regex', params.regex(exactEre({ base: r, tail: '**/.git' }))));
    rule('an existing .git file redirects git to another git dir (hooks, config): read-only',
      'deny', 'file-write*', all([sx('vnode-type', 'REGULAR-FILE'), any(gitFiles), not(tmp)]), msg(tag));
  }
  rule('no hard links: a second name for a protected or hidden file would escape its rule', 'deny', 'file-link', msg(tag));
  rule('no set-user-id or set-group-id files', 'deny', 'file-write-setugid', msg(tag));

  section('Network: only srt\'s proxy on loopback, and what the settings add');
  rule('Unix socket creation (socketpair, child stdio); connecting and binding are decided below', 'allow', 'system-socket', sx('socket-domain', 'AF_UNIX'));
  rule('srt\'s HTTP and SOCKS5 proxies (they decide every destination)', 'allow', 'network-outbound',
    sx('remote', 'ip', sx('param', sbplString(HTTP_PROXY_PARAM))), sx('remote', 'ip', sx('param', sbplString(SOCKS_PROXY_PARAM))));
  const ports = [...new Set(forwardedPorts(policy.network).map((f) => f.port))].sort((a, b) => a - b);
  if (ports.length) {
    rule('local services named in network.allowedDomains (localhost:PORT), reached directly', 'allow', 'network-outbound',
      ...ports.map((p) => sx('remote', 'ip', sbplString(`localhost:${p}`))));
  }
  const exposed = [...new Set(policy.network.exposePorts.map((e) => e.sandboxPort))].sort((a, b) => a - b);
  for (const e of policy.network.exposePorts.filter((x) => !x.ifAvailable)) {
    if (e.hostPort !== e.sandboxPort) warnings.push(`network.exposePorts ${e.hostPort}:${e.sandboxPort}: macOS has no private loopback, so the host reaches the command's server at localhost:${e.sandboxPort} itself (no remapping)`);
  }
  if (exposed.length) {
    rule('network.exposePorts: servers the command starts on these loopback ports (the host reaches them directly)', 'allow', 'network-bind', 'network-inbound',
      ...exposed.map((p) => sx('local', 'ip', sbplString(`localhost:${p}`))));
  }
  if (policy.network.allowLocalBinding) {
    rule('network.allowLocalBinding: listen on loopback and connect to loopback servers', 'allow', 'network-bind', 'network-inbound', sx('local', 'ip', sbplString('localhost:*')));
    rule(undefined, 'allow', 'network-outbound', sx('remote', 'ip', sbplString('localhost:*')));
  }
  if (policy.network.allowAllUnixSockets) {
    rule('network.allowAllUnixSockets', 'allow', 'network-outbound', sx('remote', 'unix-socket', sx('path-regex', sbplString('^/'))));
    rule(undefined, 'allow', 'network-bind', sx('local', 'unix-socket', sx('path-regex', sbplString('^/'))));
  } else if (policy.network.allowUnixSockets.length) {
    const paths = [...new Set(policy.network.allowUnixSockets.flatMap((p) => [p, landing(p).real]))];
    rule('network.allowUnixSockets (as written and where they lead)', 'allow', 'network-outbound', ...paths.map((p) => sx('remote', 'unix-socket', sx('subpath', params.path(p)))));
    rule(undefined, 'allow', 'network-bind', ...paths.map((p) => sx('local', 'unix-socket', sx('subpath', params.path(p)))));
  }

  if (policy.allowPty) {
    section('allowPty: new pseudo-terminals');
    rule(undefined, 'allow', 'pseudo-tty');
    rule(undefined, 'allow', 'file-write-data', 'file-ioctl', literal('/dev/ptmx'), sx('regex', sbplString(PTY_DEVICES)));
  }
  if (policy.allowAppleEvents) {
    section('allowAppleEvents: scripting other applications');
    rule(undefined, 'allow', 'appleevent-send');
    rule(undefined, 'allow', 'mach-lookup', sx('global-name', sbplString('com.apple.coreservices.appleevents')));
  }
  if (policy.enableWeakerNetworkIsolation) {
    section('enableWeakerNetworkIsolation: certificate checks through trustd (Go, Swift), which may fetch OCSP/CRL data itself');
    rule(undefined, 'allow', 'mach-lookup', sx('global-name', sbplString('com.apple.trustd.agent')));
  }

  const head = [
    '(version 1)',
    ';; srt: Seatbelt profile generated from the merged settings (srt --dry-run shows it with its -D values).',
    ';; Paths and regexes are parameters: (param "P1") is a path, (param "R1") a POSIX extended regex.',
    `(deny default ${flat(msg(tag))})`,
  ];
  const profile = `${head.join('\n')}\n${out.map((n) => (typeof n === 'string' ? n : render(n))).join('\n')}\n`;
  return {
    profile, params: params.list, runtimeParams: [HTTP_PROXY_PARAM, SOCKS_PROXY_PARAM], warnings, notes: rules.notes, errors: rules.errors,
    writable: [...roots].sort((a, b) => a.length - b.length), rules,
  };
}

interface Guards {
  literals: { path: string; why: string }[];
  patterns: { region: Region; why: string }[];
}

/**
 * Directories whose rename would move a denied or protected path out of its rule. Seatbelt judges
 * paths, not files: renaming `a` in `a/b/secret` leaves `secret` unprotected at its new name. So:
 * every directory between the outermost write root and a literal rule; a glob's base (and the
 * directories above it inside the root); and every directory matching a leading part of a glob,
 * except a leading `**` at or above the root (any directory under it still matches).
 */
function renameGuards(rules: AccessRules, roots: string[]): Guards {
  const literals = new Map<string, string>();
  const patterns = new Map<string, { region: Region; why: string }>();
  const outermost = (p: string) => roots.filter((r) => isWithin(p, r) && r !== p).sort((a, b) => a.length - b.length)[0];
  for (const d of [...rules.writeDenies, ...rules.readDenies]) {
    const { base, tail } = d.region;
    const root = outermost(base);
    // Every write root has the same protected patterns: a root moved into another stays covered.
    const perRoot = d.kind === 'protected' && tail !== undefined && roots.includes(base);
    if (root && !perRoot) {
      const stop = tail === undefined ? dirname(base) : base;
      for (let a = stop; a !== root && isWithin(a, root); a = dirname(a)) if (!literals.has(a)) literals.set(a, `holds ${d.origin}`);
    }
    if (tail === undefined) continue;
    const segs = tail.split('/');
    // A directory moved within the region's base still matches a leading `**`. Protected patterns
    // exist for every write root alike, so moving one between roots keeps it matched too.
    const starIsSafe = d.kind === 'protected' ? roots.includes(base) : !root;
    for (let i = 1; i < segs.length; i++) {
      const prefix = segs.slice(0, i).join('/');
      if (prefix === '**' && starIsSafe) continue;
      if (!parseGlob(prefix).some((t) => t.kind !== 'text')) {
        // A literal directory: guarded like an ancestor, where a root makes it renamable.
        const dir = base === '/' ? `/${prefix}` : `${base}/${prefix}`;
        if (roots.some((r) => isWithin(dir, r) && r !== dir) && !literals.has(dir)) literals.set(dir, `holds ${d.origin}`);
        continue;
      }
      const region = { base, tail: prefix };
      const key = `${base}\0${prefix}`;
      if (!patterns.has(key)) patterns.set(key, { region, why: `holds ${d.origin}` });
    }
  }
  return { literals: [...literals].map(([path, why]) => ({ path, why })), patterns: [...patterns.values()] };
}
