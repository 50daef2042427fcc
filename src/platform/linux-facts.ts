// What a Linux run needs to know before anything is made, gathered read-only: srt-init and
// bubblewrap, whether the supervisor can run, the protected-path search, where every path of the
// policy lands, glob matches, the directories to snapshot and their entries, TLS termination's
// CA, and the run's paths (its directory is made by the run itself). Unless it is only a plan to
// show (`dryRun`), the credential plan's `source` commands run here, and the presets' cache
// directories and srt's key directory are made.

import { accessSync, constants as fsConstants, lstatSync, mkdirSync, readdirSync, readFileSync, readlinkSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { CredentialPlan } from '../credentials/plan.js';
import type { Policy } from '../policy.js';
import { srtSecretRules, srtSecretsDir } from '../profiles/access.js';
import { cwdIsWriteRoot, tooWideForCwd, writeRootsOf } from '../profiles/write-roots.js';
import { mountPlanner, type MountPlan } from '../profiles/bwrap.js';
import { globRules, literalPaths, type BwrapFacts, type CredentialMounts, type SeccompLaunch, type SnapshotEntry } from '../profiles/bwrap-facts.js';
import type { HostListen, RelayListen } from '../profiles/init-args.js';
import type { Landing } from '../profiles/landing.js';
import { MANAGED_DIR, USER_SETTINGS_FILES, type ProtectedTarget } from '../profiles/protected.js';
import type { SupervisorRules } from '../profiles/supervisor.js';
import { buildSeccompFilter, type SeccompArch } from '../profiles/seccomp.js';
import { HTTP_RELAY_PORT, SOCKS_RELAY_PORT, forwardedPorts } from '../proxy/local-services.js';
import type { ForwardListen } from '../proxy/server.js';
import type { Termination } from '../proxy/trust.js';
import { describeSource } from '../settings/report.js';
import { SandboxError, type SandboxOptions } from './backend.js';
import { createCacheDirs } from './cache-dirs.js';
import { DependencyError, findBubblewrap } from './deps.js';
import { findInitHelper, supervisorUnavailable } from './init-helper.js';
import { protectionPlan } from './landed.js';
import { landingResolver, listSnapshot, MAX_SNAPSHOT_ENTRIES, replaceableNames, resolveLanding } from './landing.js';
import { commandMayWrite } from './reach.js';
import { STATUS_FD } from './run.js';
import { prepareTls, runCredentialPlan, runtimeFiles } from './runtime.js';
import { expandGlobPaths, globLandings, listProtected, readGitFile, readProtected, SearchError, type GlobPaths, type ProtectedScan, type RootListing } from './search.js';
import { KeptLandings } from './kept-landings.js';
import { keptPolicy, samePolicy, sameValue, type KeptPlan } from './kept-plan.js';
import { ownFiles } from './self.js';
import { TreeWatch } from './tree-watch.js';
import { repositoriesBefore, type RepositoriesBefore } from './newrepos.js';
import { loadProxyModule } from './session.js';
import { PARENT_STAT_FD, TERMINAL_CHANNEL_FD, terminalStdio } from './terminal.js';

// The helper takes at most 256 listeners (relays.c); the HTTP and SOCKS relays are four of them.
const MAX_LISTENERS = 256;
/** Entries srt binds back in all its snapshots before the read gate holds the denies instead. */
const SNAPSHOT_BUDGET = 1000;

/** The most processes and threads a sandbox may have (its RLIMIT_NPROC at most, init/limits.c): a
 *  quarter of the host's PID space, kernel.pid_max and kernel.threads-max, read here on the host
 *  (inside the sandbox's PID namespace pid_max may read the namespace's own, 4194304), so one fork
 *  loop cannot take every PID of the host. */
export function hostProcessBound(): number {
  const read = (name: string) => {
    const v = Number(readFileSync(`/proc/sys/kernel/${name}`, 'utf8').trim());
    if (!Number.isInteger(v) || v < 1) throw new SandboxError(`cannot read kernel.${name} (/proc/sys/kernel/${name}): srt bounds the sandbox's processes by it`);
    return v;
  };
  return Math.max(1, Math.floor(Math.min(read('pid_max'), read('threads-max')) / 4));
}

export interface LinuxFacts {
  bwrap: string;
  /** srt-init and its architecture; absent when allowed to run without it. */
  helper?: { path: string; arch: SeccompArch };
  facts: BwrapFacts;
  /** The mounts these facts make (each command's plan adds its command line). */
  mounts: MountPlan;
  credentials: CredentialPlan;
  /** Protected paths that did not exist and could not be masked: set aside if the run creates them. */
  watched: string[];
  /** The proxy sockets of the forwarded host loopback ports. */
  forwards: ForwardListen[];
  /** Where the relays lead (none without srt-init: the sandbox has no network). */
  proxySockets?: ProxySockets;
  rules: SupervisorRules;
  /**
   * The repositories found at the start: every git dir (where the supervisor is missing or lost
   * track, one found at the end that is not here is the run's) and their rebase todo lists.
   */
  before: RepositoriesBefore;
  /** TLS termination: its CA and the trust files the run writes into its directory. */
  tls?: { termination: Termination; bundlePath: string; javaTrustStorePath: string };
  /** The seccomp filter srt-init installs. */
  filter?: Buffer;
  /** The tree search these facts came from (reused by the sandbox's next command while current). */
  search: TreeSearch;
  /** The landings kept for the sandbox's next command (a sandbox for many commands). */
  kept?: KeptLandings;
  /** Where the directories of srt's own files land (selfWritableWarnings), resolved with the other landings. */
  ownDirs: Map<string, string>;
  /** The plans made from these facts, for the sandbox's next command (kept-plan.ts). */
  plan?: KeptPlan;
  /** Whether these facts' plans are the last command's (the same policy and facts). */
  planKept: boolean;
  warnings: string[];
}

/**
 * What the protected-path search and the globs' walk listed, and the watch that tells whether
 * it is still current (docs/design-choices.md "Reusing the tree search").
 */
export interface TreeSearch {
  /** What was searched: the roots, the depth, the globs. */
  key: string;
  listings: RootListing[];
  globs: Map<string, GlobPaths>;
  /** Absent: not kept for reuse (a sandbox for one command, or a dry run). */
  watch?: TreeWatch;
  /** How many times this sandbox has searched its trees (the first command's facts: 1). */
  searches: number;
  /** These facts took the search of an earlier command. */
  reused: boolean;
  /** Why the last search could not be reused, when it could not. */
  stale?: string;
  /** The trees hold more directories than srt watches: searched anew for every command. */
  tooLarge?: boolean;
}

/** A run directory's name: the owner's pid first, so leftovers of killed runs can be told apart,
 *  then six random characters against a leftover of an earlier process with the same pid. The
 *  name is no secret (the command sees it as TMPDIR's parent; ~/.srt/run is private and the run
 *  makes its directory exclusively): Math.random, not node:crypto, which a plain run never loads. */
function runDirName(): string {
  const chars = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
  let suffix = '';
  for (let i = 0; i < 6; i++) suffix += chars[Math.floor(Math.random() * chars.length)];
  return `${process.pid}-${suffix}`;
}

/** Files with several hard links in protected directories (two levels down, bounded): another
 *  name of such a file, elsewhere in a writable place, would change it. */
function hardLinksBelow(dirs: string[]): Array<{ path: string; nlink: number }> {
  const out: Array<{ path: string; nlink: number }> = [];
  let budget = 2000;
  const walk = (dir: string, depth: number) => {
    let entries;
    try { entries = readdirSync(dir, { withFileTypes: true }); } catch { return; }
    for (const e of entries) {
      if (--budget < 0) return;
      const path = join(dir, e.name);
      if (e.isDirectory() && depth < 2) walk(path, depth + 1);
      else if (e.isFile()) {
        const nlink = lstatSync(path, { throwIfNoEntry: false })?.nlink ?? 1;
        if (nlink > 1) out.push({ path, nlink });
      }
    }
  };
  for (const d of dirs) walk(d, 1);
  return out;
}

/**
 * The policy's cwd, taken from this process's working directory, still names that directory
 * where srt resolved it: a directory renamed or swapped with a symlink while srt starts (getcwd
 * then names a place that leads elsewhere) must not turn another directory into the writable
 * current directory.
 */
function pinnedCwd(cwd: string, l: Landing): void {
  let here;
  try {
    here = statSync('.', { bigint: true });
  } catch {
    return; // removed meanwhile: the helper's check of bwrap's --chdir stops the run
  }
  if (!l.id || String(here.dev) !== l.id.dev || String(here.ino) !== l.id.ino) {
    throw new SandboxError(`the current directory ${cwd} was moved or replaced while srt was starting; nothing ran, run srt again from the directory you mean`);
  }
}

/** Every git dir a search found, whatever its name (a `.git`, a submodule's, a bare repository). */
export function gitDirsOf(scan: ProtectedScan): string[] {
  return scan.roots.flatMap((r) => r.gitDirs.map((g) => join(r.root, g)));
}

/**
 * The relay listeners of a run: inside, the HTTP and SOCKS proxies and every forwarded host
 * loopback port (one proxy socket per forward, shared by its 127.0.0.1 and ::1 listeners); on the
 * host, every exposed port, on descriptors from 6 up (0-2 stdio, 3 bwrap's status, 4-5 the pty's).
 */
function relayPlan(policy: Policy, runDir: string, warnings: string[]):
  { relays: RelayListen[]; exposes: HostListen[]; forwards: ForwardListen[]; proxySockets: ProxySockets } {
  // The proxies on both loopbacks: `localhost:3128` reaches them too, and the command cannot
  // put a listener of its own on [::1]:3128.
  const proxySockets = { http: join(runDir, 'http.sock'), socks: join(runDir, 'socks.sock') };
  const relays: RelayListen[] = ['127.0.0.1', '::1'].flatMap((address) => [
    { address, port: HTTP_RELAY_PORT, socketPath: proxySockets.http },
    { address, port: SOCKS_RELAY_PORT, socketPath: proxySockets.socks },
  ]);
  // For a caller other than root, bubblewrap runs the sandbox in a second user namespace (its
  // first one owns the network namespace): nothing inside may listen below 1024 there.
  const lowPortsBindable = process.getuid?.() === 0;
  const forwarded = forwardedPorts(policy.network).filter((f) => {
    if (f.port >= 1024 || lowPortsBindable) return true;
    warnings.push(`network.allowedDomains "${f.rule}" (${describeSource(f.source, policy)}) is not forwarded into the sandbox: ports below 1024 can be listened on inside only when srt runs as root; clients that use the proxy still reach it`);
    return false;
  });
  const forwards: ForwardListen[] = forwarded.map((f, i) => {
    const socketPath = join(runDir, `fwd-${i}.sock`);
    for (const address of f.listen) relays.push({ address, port: f.port, socketPath });
    return { socketPath, host: f.host, port: f.port };
  });
  const exposes: HostListen[] = hostExposes(policy).map((e, i) => ({
    fd: PARENT_STAT_FD + 1 + i, hostAddress: e.hostAddress, hostPort: e.hostPort, sandboxPort: e.sandboxPort,
  }));
  if (relays.length + exposes.length > MAX_LISTENERS) {
    throw new SandboxError(`too many local services: ${relays.length - 4} forwarded and ${exposes.length} exposed port listeners; srt supports ${MAX_LISTENERS - 4} in all`);
  }
  return { relays, exposes, forwards, proxySockets };
}

/** The exposed ports bound on this host: the ::1 of an entry without an address only where lo has it. */
function hostExposes(policy: Policy): Policy['network']['exposePorts'] {
  const all = policy.network.exposePorts;
  return all.some((e) => e.ifAvailable) && !hostHasIpv6Loopback() ? all.filter((e) => !e.ifAvailable) : all;
}

function hostHasIpv6Loopback(): boolean {
  try {
    return /^0{31}1 .* lo$/m.test(readFileSync('/proc/net/if_inet6', 'utf8'));
  } catch {
    return false; // no IPv6 in this kernel
  }
}

/** The Unix sockets of srt's HTTP and SOCKS proxies, where the relays lead. */
export interface ProxySockets { http: string; socks: string }

/**
 * The tree search for `key`: the earlier one while its watch (checked by gatherLinux) shows
 * nothing changed, else a new one (watched when `keep`, for the commands after this one).
 */
async function treeSearch(key: string, previous: TreeSearch | undefined, keep: boolean, runRoot: string,
  search: (watch?: TreeWatch) => Promise<[RootListing[], Map<string, GlobPaths>]>): Promise<TreeSearch> {
  let stale: string | undefined;
  if (previous?.watch) {
    stale = previous.key === key ? previous.watch.stale : 'the policy searches other places now';
    if (stale === undefined) {
      const { stale: _, ...same } = previous;
      return { ...same, reused: true };
    }
    previous.watch.close();
  }
  // Trees too large to watch once are not watched again.
  const tooLarge = previous?.tooLarge === true || previous?.watch?.exhausted === true;
  const watch = keep && !tooLarge ? new TreeWatch(runRoot) : undefined;
  try {
    const [listings, globs] = await search(watch);
    return {
      key, listings, globs, ...(watch ? { watch } : {}), searches: (previous?.searches ?? 0) + 1, reused: false,
      ...(stale ? { stale } : {}), ...(tooLarge ? { tooLarge } : {}),
    };
  } catch (e) {
    watch?.close();
    throw e;
  }
}

/**
 * Everything a Linux run needs to know, gathered without making anything (see the header).
 * `previous`: the search of this sandbox's last command, reused if still current, and the run
 * directory it keeps for its commands (a library sandbox's).
 */
export async function gatherLinux(opts: SandboxOptions, previous?: { search: TreeSearch; runDir?: string; kept?: KeptLandings; plan?: KeptPlan }): Promise<LinuxFacts> {
  const runRoot = resolveLanding(join(opts.policy.home, '.srt', 'run')).real;
  const keep = opts.oneCommand !== true && !opts.dryRun;
  // Both watches of the last command (the search's, the landings') checked with one fence.
  await TreeWatch.checkAll([previous?.kept?.watch, previous?.search.watch].filter((w) => w !== undefined));
  const kept = keep ? KeptLandings.next(previous?.kept, runRoot) : undefined;
  try {
    return await gather(opts, runRoot, keep, kept, previous);
  } catch (e) {
    if (kept !== previous?.kept) kept?.close();
    throw e;
  }
}

async function gather(opts: SandboxOptions, runRoot: string, keep: boolean, kept: KeptLandings | undefined,
  previous: { search: TreeSearch; runDir?: string; plan?: KeptPlan } | undefined): Promise<LinuxFacts> {
  const { policy } = opts;
  const warnings: string[] = opts.dryRun ? [] : createCacheDirs(policy);
  // The directory srt's secrets live in is hidden in every run: it must exist to be covered.
  if (!opts.dryRun) try { mkdirSync(srtSecretsDir(policy.home), { recursive: true, mode: 0o700 }); } catch { /* no key then (sentinel-key.ts says why) */ }

  const credentials = await runCredentialPlan(policy, { ...(opts.dryRun ? { dryRun: true } : {}), bindFiles: true });
  const credentialMounts: CredentialMounts = {
    deny: [...credentials.denyFiles.map((d) => d.rule), ...srtSecretRules(policy.home)],
    // bwrap reads each sentinel copy from a pipe, on the descriptors after the exposed ports'
    // and the supervisor's report descriptor.
    masked: credentials.maskFiles.map((m, i) => ({ path: m.path, fd: PARENT_STAT_FD + 2 + hostExposes(policy).length + i, mode: m.mode })),
  };

  const helper = findInitHelper();
  let seccompHelper: { path: string; arch: SeccompArch } | undefined;
  if ('path' in helper) seccompHelper = helper;
  else if (policy.network.allowAllUnixSockets || policy.allowNestedUserNamespaces) {
    warnings.push(`srt-init is unavailable (${helper.error}); running without the seccomp filter, and without the check ` +
      `that the sandbox's mounts are the planned ones (a path swapped meanwhile goes unnoticed), because ` +
      `${policy.network.allowAllUnixSockets ? 'network.allowAllUnixSockets' : 'allowNestedUserNamespaces'} is set`);
  } else {
    throw new SandboxError(`${helper.error}; srt will not run a command without its seccomp filter`);
  }

  // The protected-path supervisor refuses protected names at any depth with no placeholder on
  // the host; without it (old kernel, or no Landlock-compatible setup) placeholders are the fallback.
  let supervise = false;
  if (seccompHelper && !policy.filesystem.disabled && policy.allowNestedUserNamespaces) {
    warnings.push('allowNestedUserNamespaces turns Landlock and the protected-path supervisor off (a sandbox inside needs mount(2)): writes are confined by the mounts alone, ' +
      'so the command can open a host FIFO or device on a read-only path for writing, and protected paths are kept with placeholder files, ' +
      `only as deep as mandatoryDenySearchDepth (${policy.mandatoryDenySearchDepth}) finds them`);
  }
  if (seccompHelper && !policy.filesystem.disabled && !policy.allowNestedUserNamespaces) {
    const why = supervisorUnavailable();
    if (why === null) supervise = true;
    else warnings.push(`protected paths are kept with placeholder files during the run, not by the seccomp supervisor (${why}): ` +
      `only protected paths found within ${policy.mandatoryDenySearchDepth} levels are covered, and git is told to ignore the placeholders`);
  }

  // The writable roots (as the mounts plan will have them), each searched for protected paths.
  const cwdGit = readGitFile(join(policy.cwd, '.git'));
  const worktree = cwdGit && cwdGit.commonDir !== cwdGit.gitDir ? { commonDir: cwdGit.commonDir, gitDir: cwdGit.gitDir } : undefined;
  // Paths resolved together share the directories on their way (a policy can name thousands).
  const newResolver = () => kept?.resolver() ?? landingResolver();
  let resolver = newResolver();
  const landings = new Map<string, Landing>();
  const landing = (p: string): Landing => {
    let l = landings.get(p);
    if (!l) landings.set(p, (l = resolver.resolve(p)));
    return l;
  };
  let roots: string[], searchRoots: { root: string; isGitDir?: true }[];
  try {
    roots = writeRootsOf(policy, landing, worktree).roots.map((r) => r.region.base);
    searchRoots = roots.map((root) => ({ root, ...(worktree && root === landing(worktree.commonDir).real ? { isGitDir: true as const } : {}) }));
  } finally {
    resolver.close();
  }
  const globPaths = globRules(policy, credentialMounts, { openTime: supervise }).map((r) => r.path);
  let search: TreeSearch, bwrap: string;
  let termination: Termination | undefined;
  try {
    bwrap = findBubblewrap();
    const searching = treeSearch(JSON.stringify([searchRoots, policy.mandatoryDenySearchDepth, globPaths]), previous?.search, keep, runRoot,
      (watch) => Promise.all([listProtected(searchRoots, policy.mandatoryDenySearchDepth, watch, policy.home), Promise.resolve(expandGlobPaths(globPaths, watch))]));
    // Compile the proxy (and make the TLS CA) while ripgrep runs on the other core; a proxy
    // load failure surfaces in run().
    if (seccompHelper) loadProxyModule().catch(() => {});
    const tlsReady = seccompHelper ? prepareTls(policy) : Promise.resolve(undefined);
    tlsReady.catch(() => {}); // awaited below, after the scan
    search = await searching;
    termination = await tlsReady;
  } catch (e) {
    if (e instanceof DependencyError || e instanceof SearchError) throw new SandboxError(e.message);
    throw e;
  }
  // What was found, read as it is now (contents change without a name changing).
  const scanned = readProtected(search.listings, policy.home);
  const globs = [...globLandings(search.globs)];
  if (termination && policy.network.httpProxyPort !== undefined && policy.network.socksProxyPort !== undefined) {
    warnings.push('network.tlsTerminate has no effect: network.httpProxyPort and socksProxyPort send all traffic to your own proxies');
  }

  // The protection plan looks at the home's files the literal paths name again: each path once.
  resolver = newResolver();
  const resolved = new Map<string, Landing>();
  const resolveOnce = (p: string): Landing => {
    let l = resolved.get(p);
    if (!l) resolved.set(p, (l = resolver.resolve(p)));
    return l;
  };
  let plan;
  const ownDirs = new Map<string, string>();
  try {
    // Names, repositories, and what is protected where it lands (links out of protected
    // directories, home configuration linked into a writable root, git's include chains).
    const protection = protectionPlan(policy, scanned, roots, MANAGED_DIR, worktree ? landing(worktree.gitDir).real : undefined, resolveOnce);
    plan = protection.plan;
    warnings.push(...protection.warnings);
    for (const p of literalPaths(policy, plan.targets, worktree, credentialMounts)) if (!landings.has(p)) landings.set(p, resolveOnce(p));
    for (const f of ownFiles()) ownDirs.set(dirname(f.path), resolveOnce(dirname(f.path)).real);
  } finally {
    resolver.close();
  }
  if (opts.pinCwd) pinnedCwd(policy.cwd, landing(policy.cwd));
  const symlinks = new Map<string, string>();
  for (const r of policy.filesystem.allowRead) {
    if (r.glob) continue;
    try {
      if (lstatSync(r.path).isSymbolicLink()) symlinks.set(r.path, readlinkSync(r.path));
    } catch { /* missing: nothing to recreate */ }
  }
  const missing = (t: ProtectedTarget) => landings.get(t.path)?.kind === 'missing';
  // Without the supervisor, what no placeholder may stand in for (an empty `commondir` breaks
  // git; an empty settings file is an error for every other srt run) is watched instead.
  const watchedFallback = (t: ProtectedTarget) => !supervise && missing(t) &&
    (t.ifExists || (USER_SETTINGS_FILES as readonly string[]).some((f) => t.path === join(policy.home, f)));
  // The supervisor judges a new repository by provenance (reviewed at the end), not by name;
  // what must only stay uncreatable is left alone where it exists.
  const applies = (t: ProtectedTarget) => !(t.fallbackOnly && supervise) && !(t.ifMissing && !missing(t));
  const targets = plan.targets.filter((t) => applies(t) && !watchedFallback(t));
  const watched = plan.targets.filter((t) => applies(t) && watchedFallback(t)).map((t) => t.path);
  const hardLinked = hardLinksBelow(targets.map((t) => landings.get(t.path)).filter((l) => l?.kind === 'dir').map((l) => l!.real));
  // Where srt cannot write, the command (same user, no capabilities) cannot create anything either.
  const readOnlyDirs = new Set<string>();
  if (cwdIsWriteRoot(policy) && !tooWideForCwd(policy.cwd, policy.home) && !commandMayWrite(policy.cwd)) {
    warnings.push(`the current directory ${policy.cwd} is not writable by you, so it is read-only inside the sandbox too`);
  }
  for (const t of targets) {
    const at = landings.get(t.path);
    if (at?.kind !== 'missing' || !at.firstMissing) continue;
    const parent = dirname(at.firstMissing);
    try { accessSync(parent, fsConstants.W_OK); } catch { readOnlyDirs.add(parent); }
  }

  // Under ~/.srt, which every sandbox sees read-only: no sandboxed command (of this run or a
  // concurrent one with /tmp writable) can swap the filter, the proxy sockets or TMPDIR's
  // parent. Planned here, made by the run (materialise): real paths, as every path srt plans
  // must reach its file without a symlink (the helper checks), the hidden run root too (a HOME
  // that is a symlink, or below one).
  // A library sandbox keeps its directory (and the proxy's sockets in it) for all its commands,
  // while it is where the run root still lands.
  const runDir = previous?.runDir && dirname(previous.runDir) === runRoot ? previous.runDir : join(runRoot, runDirName());
  let facts: BwrapFacts;
  let mounts: MountPlan;
  let forwards: ForwardListen[] = [];
  let proxySockets: ProxySockets | undefined;
  let tls: LinuxFacts['tls'];
  let filter: Buffer | undefined;
  let keptPlan: KeptPlan | undefined;
  let planKept = false;
  {
    // Certificates only (the CA key stays in srt's memory or its own, denied file): the run
    // directory is readable inside the sandbox.
    if (termination) tls = { termination, bundlePath: join(runDir, 'trust.pem'), javaTrustStorePath: join(runDir, 'trust.p12') };
    const tmpDir = join(runDir, 'tmp');
    const deniedFile = join(runDir, 'denied');
    const { relays, exposes, forwards: planned, proxySockets: sockets } = relayPlan(policy, runDir, warnings);
    let seccomp: SeccompLaunch | undefined;
    const filterPath = join(runDir, 'filter.bpf');
    if (seccompHelper) {
      // A terminal on any of stdio: the command gets its own pty inside, never the user's terminal.
      const stdio = terminalStdio();
      seccomp = {
        helperPath: seccompHelper.path, filterPath, relays, exposes, maxProcs: hostProcessBound(),
        ...(stdio ? { terminal: { channelFd: TERMINAL_CHANNEL_FD, parentStatFd: PARENT_STAT_FD, stdio } } : {}),
        // The report descriptor comes after the exposed ports' (from 6 up, see relayPlan).
        ...(supervise ? { supervisor: { rulesPath: join(runDir, 'protect.rules'), reportFd: PARENT_STAT_FD + 1 + exposes.length } } : {}),
        // After the sentinel copies' descriptors.
        goFd: PARENT_STAT_FD + 2 + exposes.length + credentialMounts.masked.length,
        mountsPath: join(runDir, 'mounts'),
        stageDir: join(runDir, 'stage'),
      };
      forwards = planned;
      proxySockets = sockets;
    } else {
      warnings.push('without srt-init the command gets no network at all, and no forwarded or exposed ports (the helper runs the relays)');
      if (terminalStdio()) warnings.push('without srt-init the command gets no terminal: srt relays your terminal through pipes (the helper makes the pty)');
    }
    const globMatches = new Map(globs.map(([path, g]) => [path, g.matches]));
    facts = {
      landings,
      globMatches,
      globUndecodable: new Map(globs.filter(([, g]) => g.undecodable.length).map(([path, g]) => [path, g.undecodable])),
      globUnreadable: new Map(globs.filter(([, g]) => g.unreadable.length).map(([path, g]) => [path, g.unreadable])),
      protectedTargets: targets, runDir, runRoot, tmpDir, deniedFile, jsonStatusFd: STATUS_FD, readOnlyDirs, symlinks, hardLinked,
      credentials: credentialMounts,
      runtimeFiles: seccompHelper ? runtimeFiles(seccompHelper.path) : [],
      ...(worktree ? { worktree } : {}),
      ...(seccomp ? { seccomp } : {}),
      replaceable: replaceableNames([...landings.values(), ...globs.flatMap(([, g]) => [...g.matches, ...g.undecodable, ...g.unreadable])], kept?.replaceable),
    };
    // A first plan says which directories must be snapshots (listed now, or kept with the
    // landings) and whether opens must be checked (the filter then sends every open to the
    // supervisor). The last command's plans, if made from the same policy and facts
    // (kept-plan.ts).
    const same = previous?.plan && samePolicy(previous.plan, policy) && sameValue(previous.plan.facts, facts) ? previous.plan : undefined;
    const planner = same?.planner ?? mountPlanner(policy, facts);
    const first = same?.first ?? planner(undefined);
    planKept = same !== undefined;
    const planFacts = facts;
    const snapshots = new Map<string, SnapshotEntry[] | 'too-large'>();
    // With the supervisor, snapshots past a budget of entries in all are not worth their binds at
    // every start: the read gate holds those denies instead (the plan decides on 'too-large').
    let budget = supervise ? SNAPSHOT_BUDGET : Infinity;
    for (const d of first.snapshots) {
      let listed: ReturnType<typeof listSnapshot>;
      try { listed = budget < 0 ? 'too-large' : (kept?.listing.bind(kept) ?? listSnapshot)(d, Math.min(MAX_SNAPSHOT_ENTRIES, budget)); } catch {
        throw new SandboxError(`${d} changed or disappeared while srt was setting up the sandbox; nothing ran, try again`);
      }
      budget -= listed === 'too-large' ? Infinity : listed.entries.length;
      if (listed !== 'too-large' && listed.skipped.length) {
        warnings.push(`${d}: ${listed.skipped.length} name(s) that are not valid UTF-8 are not seen inside (srt cannot name them to bubblewrap)`);
      }
      snapshots.set(d, listed === 'too-large' ? listed : listed.entries);
    }
    facts = { ...facts, snapshots };
    const again = same && sameValue(same.snapshots, snapshots) && same.arch === seccompHelper?.arch ? same : undefined;
    // Without snapshots the listings change nothing: the first plan is the plan.
    mounts = again?.mounts ?? (snapshots.size ? planner(snapshots) : first);
    filter = again?.filter;
    if (seccompHelper && !again) {
      filter = buildSeccompFilter({
        arch: seccompHelper.arch,
        allowUnixSockets: policy.network.allowAllUnixSockets,
        allowNamespaces: policy.allowNestedUserNamespaces,
        supervise,
        // A snapshot too large: the second plan may hold denies with the read gate.
        gateReads: supervise && (first.gated.length > 0 || [...snapshots.values()].includes('too-large')),
      });
    }
    // The copy of the policy only when the plan is new: a kept one was made from this value.
    const planPolicy = !keep ? undefined : same ? same.policy : keptPolicy(policy);
    if (planPolicy) keptPlan = { policy: planPolicy, facts: planFacts, planner, first, snapshots, mounts, filter, arch: seccompHelper?.arch };
  }
  return {
    bwrap, ...(seccompHelper ? { helper: seccompHelper } : {}), facts, mounts, credentials, ...(kept ? { kept } : {}), ...(keptPlan ? { plan: keptPlan } : {}), planKept, ownDirs, watched, forwards,
    ...(proxySockets ? { proxySockets } : {}), rules: plan.rules,
    before: repositoriesBefore([...gitDirsOf(scanned), ...scanned.roots.flatMap((r) => r.gitFiles.map((f) => f.gitDir)), ...(worktree ? [worktree.gitDir] : [])]),
    ...(tls ? { tls } : {}), ...(filter ? { filter } : {}), search, warnings,
  };
}
