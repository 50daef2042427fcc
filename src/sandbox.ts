// The library API and the one place a run is put together (Linux): validate dependencies,
// gather filesystem facts, build the bwrap argv, create placeholders, run, clean up.
// Cleanup is synchronous and idempotent so it also runs from signal and exit handlers.

import { closeSync, lstatSync, mkdirSync, mkdtempSync, openSync, readdirSync, readFileSync, readlinkSync, realpathSync, statSync, accessSync, constants as fsConstants, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, isAbsolute, join, relative, resolve } from 'node:path';
import type { AuditSink } from './audit.js';
import type { Policy } from './policy.js';
import { buildBwrapPlan, encodeMounts, globRules, literalPaths, plannedMounts, type BwrapFacts, type SnapshotEntry, type BwrapPlan, type CredentialMounts, type HostListen, type Landing, type RelayListen, type SeccompLaunch } from './profiles/bwrap.js';
import { gitConfigValue, parseGitConfig } from './profiles/gitconfig.js';
import { encodeRules, hooksPathDir, landedLines, MANAGED_DIR, parseReport, refusalLines, USER_SETTINGS_FILES, type ProtectedTarget, type SupervisorRules } from './profiles/protected.js';
import type { CredentialPlan } from './credentials/plan.js';
import { srtSecretRules, srtSecretsDir, writeRootsOf } from './profiles/access.js';
import { credentialEnv, emptyCredentialPlan, hasCredentials } from './credentials/env.js';
import { describeCredentialPlan } from './credentials/describe.js';
import { buildSeccompFilter, type SeccompArch } from './profiles/seccomp.js';
import { diagnoseBubblewrap, DependencyError, findBubblewrap, findOnPath } from './platform/deps.js';
import { landingResolver, listSnapshot, realIdentifier, replaceableNames, resolveLanding } from './platform/landing.js';
import { disableNewRepositories, newGitDirs } from './platform/newrepos.js';
import { FORWARDED_SIGNALS, launch, signalExit, STATUS_FD } from './platform/run.js';
import { PARENT_STAT_FD, Terminal, TERMINAL_CHANNEL_FD, terminalStdio } from './platform/terminal.js';
import { expandGlobs, readGitFile, scanProtected, SearchError } from './platform/search.js';
import { findInitHelper, supervisorUnavailable } from './platform/init-helper.js';
import { createCacheDirs } from './platform/cache-dirs.js';
import { protectionPlan } from './platform/landed.js';
import { removeTree } from './platform/remove.js';
import { ownFiles } from './platform/self.js';
import { sandboxMayChange } from './platform/writable.js';
import { PlaceholderSet, reapStale, setAside } from './platform/state.js';
import { cwdIsWriteRoot } from './profiles/access.js';
import { describeSource } from './settings/report.js';
import { shellQuote } from './shell.js';
import { gitProxyScript, NODE_PRELOAD_PATH, sandboxProxyEnv } from './proxy/env.js';
import { describeExpose, describeForward, forwardedPorts, HTTP_RELAY_PORT, SOCKS_RELAY_PORT } from './proxy/local-services.js';
import type { ForwardListen, ProxyHandle } from './proxy/server.js';
import { hostPlatform, Messages, type PlatformBackend, type PlatformName } from './platform/backend.js';
import type { Termination } from './proxy/trust.js';

export type CommandSpec = { argv: string[] } | { shell: string };

/** srt could not build the sandbox: print `srt: ${message}`, exit 125, nothing ran. */
export class SandboxError extends Error {}

// The helper takes at most 256 listeners (relays.c); the HTTP and SOCKS relays are four of them.
const MAX_LISTENERS = 256;

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

/** A repository's HEAD in a search's output (`.git/HEAD` at any depth). */
function isRepositoryHead(rel: string): boolean {
  return rel === '.git/HEAD' || (rel.endsWith('/.git/HEAD') && !rel.includes('/modules/'));
}

/** What the sandbox runs or loads of srt itself: the helper, the Node preload and undici. */
export function runtimeFiles(helperPath?: string): { path: string; kind: 'file' | 'dir' }[] {
  const files: { path: string; kind: 'file' | 'dir' }[] = helperPath ? [{ path: realpathSync(helperPath), kind: 'file' }] : [];
  try {
    files.push({ path: realpathSync(NODE_PRELOAD_PATH), kind: 'file' });
    files.push({ path: dirname(realpathSync(createRequire(NODE_PRELOAD_PATH).resolve('undici/package.json'))), kind: 'dir' });
  } catch { /* not built or not installed: node inside simply goes without the preload */ }
  return files;
}

/**
 * srt itself inside a path the command may write (e.g. `node_modules/srt` of the project being
 * sandboxed, a node under ~/.nvm): the next run would execute whatever the command put there,
 * outside any sandbox (SPEC §8 lists this among doctor's checks; srt says it at start).
 * `kept`: what this backend keeps read-only for the run (Linux: all of it with the supervisor;
 * with the mounts alone not a symlink, such as ~/bin/srt -> the launcher, see self.ts).
 */
export function selfWritableWarnings(writable: string[], kept: 'all' | 'not-links' | 'none' = 'none'): string[] {
  const isLink = (p: string) => { try { return lstatSync(p).isSymbolicLink(); } catch { return false; } };
  const exposed = ownFiles().filter((f) => sandboxMayChange(f.path, writable));
  const open = (f: { path: string }) => kept === 'none' || (kept === 'not-links' && isLink(f.path));
  const paths = (fs: { path: string }[]) => [...new Set(fs.map((f) => f.path))];
  const node = (f: { what: string }) => f.what === 'the node srt runs with';
  const srt = paths(exposed.filter((f) => !node(f) && !open(f)));
  const nodes = paths(exposed.filter((f) => node(f) && !open(f)));
  const replaceable = paths(exposed.filter(open));
  const list = (ps: string[]) => `${ps.slice(0, 3).join(', ')}${ps.length > 3 ? ` and ${ps.length - 3} more` : ''}`;
  const them = (ps: string[]) => ps.length === 1 ? 'it' : 'them';
  const keeps = (ps: string[]) => `srt keeps ${them(ps)} read-only inside the sandbox, so the command cannot replace ${them(ps)}; still, `;
  const out: string[] = [];
  if (srt.length) out.push(`srt is installed inside a path this sandbox may write (${list(srt)}): ${keeps(srt)}install srt outside the project (e.g. npm install -g)`);
  if (nodes.length) out.push(`the node srt runs with (${list(nodes)}) lies inside a path this sandbox may write: ${keeps(nodes)}run srt with a node installed elsewhere`);
  if (replaceable.length) {
    const why = kept === 'not-links' ? ' (without the protected-path supervisor srt cannot keep a symlink)' : '';
    out.push(`srt's own files (${list(replaceable)}) lie inside a path this sandbox may write${why}: the command could replace ${them(replaceable)}, and the next srt would run that; ` +
      'install srt and node outside the project (e.g. npm install -g)');
  }
  return out;
}

/**
 * The credential plan of a run (credentials/plan.ts), its `source` commands run unless
 * `dryRun`: a failing command, or a plan error, stops the run before anything starts.
 */
export async function runCredentialPlan(policy: Policy, opts: { dryRun?: boolean; bindFiles: boolean }): Promise<CredentialPlan> {
  // Without credential entries there is nothing to build: the builder is not even loaded.
  if (!hasCredentials(policy)) return emptyCredentialPlan();
  const [{ credentialPlanFor }, { SourceCommandError }] = await Promise.all([import('./platform/credentials.js'), import('./credentials/source.js')]);
  let plan: CredentialPlan;
  try {
    plan = await credentialPlanFor(policy, { runSources: !opts.dryRun, env: process.env, bindFiles: opts.bindFiles });
  } catch (e) {
    if (e instanceof SourceCommandError) throw new SandboxError(`${e.message}; the command did not run`);
    throw e;
  }
  if (plan.errors.length > 0) throw new SandboxError(plan.errors.join('\n'));
  return plan;
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
  const exposes: HostListen[] = policy.network.exposePorts.map((e, i) => ({
    fd: PARENT_STAT_FD + 1 + i, hostAddress: e.hostAddress, hostPort: e.hostPort, sandboxPort: e.sandboxPort,
  }));
  if (relays.length + exposes.length > MAX_LISTENERS) {
    throw new SandboxError(`too many local services: ${relays.length - 4} forwarded and ${exposes.length} exposed port listeners; srt supports ${MAX_LISTENERS - 4} in all`);
  }
  return { relays, exposes, forwards, proxySockets };
}

/** The Unix sockets of srt's HTTP and SOCKS proxies, where the relays lead. */
interface ProxySockets { http: string; socks: string }

/** The argv a command spec runs: a string goes to bash -c (sh -c where there is no bash). */
export function commandArgv(cmd: CommandSpec): string[] {
  if ('argv' in cmd) return cmd.argv;
  return [findOnPath('bash') ? 'bash' : 'sh', '-c', cmd.shell];
}

/** Like execvp: 127 when not found, 126 when not executable; null when it can be started. */
export function checkCommand(cmd: string, pathEnv: string, cwd: string): { status: number; message: string } | null {
  const candidates = cmd.includes('/')
    ? [isAbsolute(cmd) ? cmd : resolve(cwd, cmd)]
    : pathEnv.split(':').filter(Boolean).map((d) => join(resolve(cwd, d), cmd));
  let sawNonExec = false;
  // A path that names a directory (`srt -- /tmp`) says so, as a shell does.
  if (cmd.includes('/')) {
    try {
      if (statSync(candidates[0]!).isDirectory()) return { status: 126, message: 'is a directory' };
    } catch { /* missing or unreachable: judged below */ }
  }
  // Like a shell's PATH search: unreadable PATH entries count as "not there".
  for (const c of candidates) {
    try {
      if (statSync(c).isDirectory()) { sawNonExec = true; continue; }
    } catch {
      continue;
    }
    try {
      accessSync(c, fsConstants.X_OK);
      return null;
    } catch {
      sawNonExec = true;
    }
  }
  return sawNonExec ? { status: 126, message: 'permission denied (not executable)' } : { status: 127, message: 'command not found' };
}

/**
 * TLS termination's CA and trust, made before the command starts (CA problems stop the run).
 * node-forge and the rest of TLS are loaded only for runs that terminate TLS.
 */
async function prepareTls(policy: Policy): Promise<Termination | undefined> {
  const tls = policy.network.tlsTerminate;
  if (!tls) return undefined;
  const { prepareTermination } = await import('./proxy/trust.js');
  try {
    return prepareTermination(tls, { home: policy.home });
  } catch (e) {
    throw new SandboxError((e as Error).message);
  }
}

let proxyModuleLoad: Promise<typeof import('./proxy/server.js')> | undefined;
/** The proxy is loaded only for runs that need it, so startup does not pay for it otherwise. */
export function loadProxyModule(): Promise<typeof import('./proxy/server.js')> {
  return (proxyModuleLoad ??= import('./proxy/server.js'));
}

export interface SandboxOptions {
  policy: Policy;
  /** `policy.cwd` is this process's working directory (the CLI): stop if, by the time srt
   *  resolves it, that path leads to another directory (renamed or swapped meanwhile). */
  pinCwd?: boolean;
  debug?: boolean;
  /** Default: this host's. `macos` also works on Linux for dryRun (to review the Seatbelt profile). */
  platform?: PlatformName;
  /** `--log FILE`: network decisions, connections and refused protected writes as data. */
  audit?: AuditSink;
  /** Only for `dryRun()`: credentials' `source` commands are not run. */
  dryRun?: boolean;
  /** srt's own lines as they happen (`srt: warning: …`, `srt: …` errors, `srt[debug]: …`), not yet
   *  made printable. The library prints nothing: without a sink they are kept for `messages()`.
   *  The CLI passes one that prints them. */
  onMessage?: (line: string) => void;
}

export class Sandbox implements PlatformBackend {
  readonly platform = 'linux' as const;
  private readonly warnings: string[] = [];
  /** Lines for the end of the run: refused protected writes, repositories disabled, paths set aside. */
  private readonly endNotes: string[] = [];
  private audit: AuditSink | undefined;
  private out = new Messages();
  private readonly placeholders: PlaceholderSet;
  private disposed = false;
  private cleanupReported = false;
  private running = false;
  private ran = false;
  private proxy: ProxyHandle | undefined;
  /** Where the relays lead (none without srt-init: the sandbox has no network). */
  private proxySockets: ProxySockets | undefined;
  /** Injects, re-masks and guards credentials in the proxy (only when something is masked). */
  private stage: import('./credentials/stage.js').CredentialStage | undefined;
  private proxyModule: typeof import('./proxy/server.js') | undefined;
  private readonly onExit = () => this.cleanupSync();
  private readonly onSignal = (sig: NodeJS.Signals) => {
    if (this.running) return; // launch() forwards it to the command
    this.cleanupSync();
    process.exit(signalExit(sig));
  };

  private constructor(
    readonly policy: Policy,
    private readonly debug: boolean,
    private readonly bwrap: string,
    private readonly runDir: string,
    private readonly facts: BwrapFacts,
    /** Protected paths that did not exist and could not be masked: set aside if the run creates them. */
    private readonly watched: string[],
    /** The proxy sockets of the forwarded host loopback ports. */
    private readonly forwards: ForwardListen[],
    private readonly rules: SupervisorRules,
    /** Without the supervisor: the repositories' HEAD files found at the start (new ones are the run's). */
    private readonly headsBefore: string[],
    /** TLS termination: its CA and the trust files written into the run directory. */
    private readonly tls: { termination: Termination; bundlePath: string; javaTrustStorePath: string } | undefined,
    /** What the command's environment and files show of credentials, and what the proxy swaps. */
    private readonly credentials: CredentialPlan,
  ) {
    this.placeholders = new PlaceholderSet(policy.home);
  }

  /**
   * Validate dependencies and gather everything the run needs, for this host's backend or the
   * one `opts.platform` names. Throws SandboxError. Runs the credentials' `source` commands,
   * unless `dryRun` (then their variables are only described).
   */
  static async create(opts: SandboxOptions): Promise<PlatformBackend> {
    const { policy } = opts;
    const platform = opts.platform ?? hostPlatform();
    if (platform === 'macos') return (await import('./platform/macos.js')).MacosSandbox.create(opts);
    if (process.platform !== 'linux') throw new SandboxError(`sandboxing on ${process.platform} is not supported by this build`);
    const warnings: string[] = opts.dryRun ? [] : createCacheDirs(policy);
    // The directory srt's secrets live in is hidden in every run: it must exist to be covered.
    if (!opts.dryRun) try { mkdirSync(srtSecretsDir(policy.home), { recursive: true, mode: 0o700 }); } catch { /* no key then (sentinel-key.ts says why) */ }

    const credentials = await runCredentialPlan(policy, { ...(opts.dryRun ? { dryRun: true } : {}), bindFiles: true });
    const credentialMounts: CredentialMounts = {
      deny: [...credentials.denyFiles.map((d) => d.rule), ...srtSecretRules(policy.home)],
      // bwrap reads each sentinel copy from a pipe, on the descriptors after the exposed ports'
      // and the supervisor's report descriptor.
      masked: credentials.maskFiles.map((m, i) => ({ path: m.path, fd: PARENT_STAT_FD + 2 + policy.network.exposePorts.length + i, mode: m.mode })),
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
    const landings = new Map<string, Landing>();
    const landing = (p: string): Landing => {
      let l = landings.get(p);
      if (!l) landings.set(p, (l = resolveLanding(p)));
      return l;
    };
    const roots = writeRootsOf(policy, landing, worktree).roots.map((r) => r.region.base);
    let scanned, globs, bwrap: string;
    let termination: Termination | undefined;
    try {
      bwrap = findBubblewrap();
      const scanning = Promise.all([
        scanProtected(roots.map((root) => ({ root, ...(worktree && root === landing(worktree.commonDir).real ? { isGitDir: true } : {}) })),
          policy.mandatoryDenySearchDepth, policy.home),
        Promise.resolve([...expandGlobs(globRules(policy, credentialMounts, { openTime: supervise }).map((r) => r.path))]),
      ]);
      // Compile the proxy (and make the TLS CA) while ripgrep runs on the other core; a proxy
      // load failure surfaces in run().
      if (seccompHelper) loadProxyModule().catch(() => {});
      const tlsReady = seccompHelper ? prepareTls(policy) : Promise.resolve(undefined);
      tlsReady.catch(() => {}); // awaited below, after the scan
      [scanned, globs] = await scanning;
      termination = await tlsReady;
    } catch (e) {
      if (e instanceof DependencyError || e instanceof SearchError) throw new SandboxError(e.message);
      throw e;
    }
    if (termination && policy.network.httpProxyPort !== undefined && policy.network.socksProxyPort !== undefined) {
      warnings.push('network.tlsTerminate has no effect: network.httpProxyPort and socksProxyPort send all traffic to your own proxies');
    }

    // Names, repositories, and what is protected where it lands (links out of protected
    // directories, home configuration linked into a writable root, git's include chains).
    const protection = protectionPlan(policy, scanned, roots, MANAGED_DIR, worktree ? landing(worktree.gitDir).real : undefined);
    const plan = protection.plan;
    warnings.push(...protection.warnings);
    // Resolved together: a policy can name thousands (they share their directories).
    const resolver = landingResolver();
    try {
      for (const p of literalPaths(policy, plan.targets, worktree, credentialMounts)) if (!landings.has(p)) landings.set(p, resolver.resolve(p));
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
    if (cwdIsWriteRoot(policy)) try { accessSync(policy.cwd, fsConstants.W_OK); } catch {
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
    // parent. The name starts with the owner pid so leftovers of killed runs can be told apart.
    let runRoot = join(policy.home, '.srt', 'run');
    let runDir: string;
    try {
      mkdirSync(runRoot, { recursive: true, mode: 0o700 });
      // Real: every path srt plans must reach its file without a symlink (the helper checks), the
      // hidden run root too (a HOME that is a symlink, or below one).
      runRoot = realpathSync(runRoot);
      runDir = realpathSync(mkdtempSync(join(runRoot, `${process.pid}-`)));
    } catch (e) {
      throw new SandboxError(`cannot create the run directory under ${runRoot}: ${(e as Error).message}`);
    }
    let facts: BwrapFacts;
    let forwards: ForwardListen[] = [];
    let proxySockets: ProxySockets | undefined;
    let tls: { termination: Termination; bundlePath: string; javaTrustStorePath: string } | undefined;
    try {
      if (termination) {
        // Certificates only (the CA key stays in srt's memory or its own, denied file): the run
        // directory is readable inside the sandbox.
        const bundlePath = join(runDir, 'trust.pem');
        const javaTrustStorePath = join(runDir, 'trust.p12');
        writeFileSync(bundlePath, termination.bundle(), { mode: 0o444 });
        writeFileSync(javaTrustStorePath, termination.javaTrustStore(), { mode: 0o444 });
        tls = { termination, bundlePath, javaTrustStorePath };
      }
      const tmpDir = join(runDir, 'tmp');
      mkdirSync(tmpDir, { mode: 0o700 });
      // Bound over denied files: mode 000, so reading one fails with EACCES (Permission denied)
      // rather than looking like an empty file. uid 0 inside has no capabilities to override it.
      const deniedFile = join(runDir, 'denied');
      writeFileSync(deniedFile, '', { mode: 0o000 });
      if (seccompHelper) writeFileSync(join(runDir, 'git-proxy'), gitProxyScript(seccompHelper.path, HTTP_RELAY_PORT), { mode: 0o500 });
      const { relays, exposes, forwards: planned, proxySockets: sockets } = relayPlan(policy, runDir, warnings);
      let seccomp: SeccompLaunch | undefined;
      const filterPath = join(runDir, 'filter.bpf');
      if (seccompHelper) {
        // A terminal on any of stdio: the command gets its own pty inside, never the user's terminal.
        const stdio = terminalStdio();
        seccomp = {
          helperPath: seccompHelper.path, filterPath, relays, exposes,
          ...(stdio ? { terminal: { channelFd: TERMINAL_CHANNEL_FD, parentStatFd: PARENT_STAT_FD, stdio } } : {}),
          // The report descriptor comes after the exposed ports' (from 6 up, see relayPlan).
          ...(supervise ? { supervisor: { rulesPath: join(runDir, 'protect.rules'), reportFd: PARENT_STAT_FD + 1 + exposes.length } } : {}),
          mountsPath: join(runDir, 'mounts'),
          stageDir: join(runDir, 'stage'),
        };
        mkdirSync(seccomp.stageDir!, { mode: 0o700 });
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
        replaceable: replaceableNames([...landings.values(), ...globs.flatMap(([, g]) => [...g.matches, ...g.undecodable, ...g.unreadable])]),
      };
      // A first plan says which directories must be snapshots (listed now) and whether opens
      // must be checked (the filter then sends every open to the supervisor).
      const first = buildBwrapPlan(policy, facts, ['true']);
      const snapshots = new Map<string, SnapshotEntry[] | 'too-large'>();
      for (const d of first.snapshots) {
        let listed: ReturnType<typeof listSnapshot>;
        try { listed = listSnapshot(d); } catch {
          throw new SandboxError(`${d} changed or disappeared while srt was setting up the sandbox; nothing ran, try again`);
        }
        if (listed !== 'too-large' && listed.skipped.length) {
          warnings.push(`${d}: ${listed.skipped.length} name(s) that are not valid UTF-8 are not seen inside (srt cannot name them to bubblewrap)`);
        }
        snapshots.set(d, listed === 'too-large' ? listed : listed.entries);
      }
      facts = { ...facts, snapshots };
      if (seccompHelper) {
        writeFileSync(filterPath, buildSeccompFilter({
          arch: seccompHelper.arch,
          allowUnixSockets: policy.network.allowAllUnixSockets,
          allowNamespaces: policy.allowNestedUserNamespaces,
          supervise,
          gateReads: supervise && first.gated.length > 0,
        }), { mode: 0o400 });
      }
    } catch (e) {
      removeTree(runDir);
      throw e;
    }
    const sb = new Sandbox(policy, opts.debug ?? false, bwrap, runDir, facts, watched, forwards, plan.rules,
      supervise ? [] : scanned.roots.flatMap((r) => r.found.filter(isRepositoryHead).map((f) => join(r.root, f))), tls, credentials);
    sb.warnings.push(...warnings);
    sb.audit = opts.audit;
    sb.proxySockets = proxySockets;
    sb.out = new Messages(opts.onMessage);
    process.on('exit', sb.onExit);
    for (const s of FORWARDED_SIGNALS) process.on(s, sb.onSignal);
    return sb;
  }

  private argvOf(cmd: CommandSpec): string[] {
    return commandArgv(cmd);
  }

  /** The bwrap plan; a SandboxError when srt cannot build a sandbox that keeps every deny. */
  private plan(cmd: CommandSpec): BwrapPlan {
    const plan = buildBwrapPlan(this.policy, this.facts, this.argvOf(cmd));
    if (plan.errors.length) throw new SandboxError(plan.errors.join('\n'));
    return plan;
  }

  /**
   * The command's environment: srt's own, without denied credentials, with sentinels for masked
   * ones (also what each process inside shows in /proc/PID/environ), plus srt's settings.
   */
  private commandEnv(): NodeJS.ProcessEnv {
    return { ...credentialEnv(this.credentials, process.env), ...this.envChanges() };
  }

  /** What the command's environment gains (values that are not secrets). */
  private envChanges(): Record<string, string> {
    const env: Record<string, string> = { TMPDIR: this.facts.tmpDir, SRT_SANDBOX: '1' };
    const seccomp = this.facts.seccomp;
    if (!seccomp) return env;
    return {
      ...env,
      ...sandboxProxyEnv({
        httpPort: HTTP_RELAY_PORT, socksPort: SOCKS_RELAY_PORT, nodePreloadPath: NODE_PRELOAD_PATH, helperPath: seccomp.helperPath, baseEnv: process.env,
        gitProxyCommand: join(this.runDir, 'git-proxy'),
        ...(this.tls ? { trust: { bundlePath: this.tls.bundlePath, javaTrustStorePath: this.tls.javaTrustStorePath } } : {}),
      }),
    };
  }

  /** Start the filtering proxy on the Unix sockets the relays connect to (only for a real run). */
  private async startProxy(): Promise<void> {
    const sockets = this.proxySockets;
    if (!sockets) return;
    this.proxyModule = await loadProxyModule();
    const log = this.debug ? (line: string) => this.out.say(`srt[debug]: ${line}`) : undefined;
    // Loaded only when something is masked (`srt -- true` pays for no credential code).
    const { stages, credential } = this.credentials.secrets.length > 0
      ? await (await import('./credentials/stages.js')).credentialStages(this.credentials, this.policy, log)
      : { stages: [], credential: undefined };
    this.stage = credential;
    this.proxy = await this.proxyModule.startProxy({
      network: this.policy.network,
      listen: {
        http: { socketPath: sockets.http },
        socks: { socketPath: sockets.socks },
        forwards: this.forwards,
      },
      ...(stages.length ? { stages } : {}),
      ...(log ? { log } : {}),
      ...(this.audit ? { audit: this.audit } : {}),
      ...(this.tls ? { termination: this.tls.termination } : {}),
    });
  }

  /** Warnings to print once as `srt: warning: ...` before the run (platform and plan; the CLI prints the policy's own). */
  private startupWarnings(plan: BwrapPlan): string[] {
    return [...new Set([...this.warnings, ...this.credentials.warnings, ...selfWritableWarnings(plan.writable, this.policy.filesystem.disabled ? 'none' : this.facts.seccomp?.supervisor ? 'all' : 'not-links'), ...plan.warnings])];
  }

  dryRun(cmd: CommandSpec): string {
    const plan = this.plan(cmd);
    // One option per line with its values; the command after `--` on the last line.
    const groups = [...(plan.launcher.length ? [plan.launcher] : []), [this.bwrap], ...plan.argGroups];
    const lines = [
      plan.launcher.length ? '# bubblewrap command (started by srt-init, which first binds the exposed host ports)' : '# bubblewrap command',
      groups.map((g) => g.map(shellQuote).join(' ')).join(' \\\n  '),
    ];
    const helperDenies = plan.ops.filter((m) => m.kind === 'bind' && m.deny).map((m) => m.dest);
    if (helperDenies.length) {
      lines.push('', "# denied files: srt-init binds srt's empty unreadable file over each, after bubblewrap", ...helperDenies.map(shellQuote));
    }
    const sockets = this.proxySockets;
    lines.push('', '# network');
    if (!sockets) lines.push('none: the sandbox has no network interface but loopback');
    else {
      for (const [port, own, kind, socketPath] of [
        [HTTP_RELAY_PORT, this.policy.network.httpProxyPort, 'HTTP', sockets.http],
        [SOCKS_RELAY_PORT, this.policy.network.socksProxyPort, 'SOCKS5', sockets.socks],
      ] as const) {
        const target = own === undefined ? `srt's filtering ${kind} proxy` : `your own ${kind} proxy on 127.0.0.1:${own}`;
        lines.push(`sandbox 127.0.0.1:${port}, [::1]:${port} → ${socketPath} → ${target}`);
      }
      for (const f of forwardedPorts(this.policy.network)) {
        if (!this.forwards.some((x) => x.host === f.host && x.port === f.port)) continue; // not bindable (a warning says why)
        lines.push(`${describeForward(f)}, each connection decided by srt's proxy (network.allowedDomains "${f.rule}")`);
      }
      for (const e of this.policy.network.exposePorts) lines.push(`${describeExpose(e)} (network.exposePorts; [::1] when 127.0.0.1 refuses)`);
    }
    lines.push('', '# TLS termination', ...this.tlsPlan());
    lines.push('', '# environment changes (everything else inherited)');
    for (const [k, v] of Object.entries(this.envChanges())) lines.push(`${k}=${shellQuote(v)}`);
    const creds = describeCredentialPlan(this.credentials, { fdOf: (i: number) => this.facts.credentials!.masked[i]!.fd });
    if (creds.length) lines.push('', '# credentials (real values are never shown; each run mints new sentinels)', ...creds);
    if (this.facts.seccomp?.supervisor) {
      lines.push('', '# protected paths: the seccomp supervisor refuses creating, replacing or removing them (no placeholders)');
      lines.push(`protected names at any depth below: ${plan.protectedRoots.join(' ')}`);
      lines.push(`names: ${[...this.rules.names, ...this.rules.suffixes.map((x) => `*${x}`)].join(' ')}`);
      lines.push(`in every .git that exists: ${this.rules.gitInternals.join(' ')}`);
      lines.push(`write-denied paths: ${plan.protectedPaths.length} (denyWrite and protected, as written and where they land)`);
    }
    if (this.facts.seccomp?.supervisor && plan.gated.length) {
      lines.push('', '# read gate: the supervisor refuses every open of these and of what lies below them (a glob: each path it matches)');
      for (const g of plan.gated) lines.push(`${g.glob ? 'glob ' : ''}${g.path}${g.reopened.length ? `, but ${g.reopened.join(' ')}` : ''}`);
    }
    const landed = landedLines(this.facts.protectedTargets, (t) => this.facts.landings.get(t.path)?.real ?? t.path);
    if (landed.length) lines.push('', '# protected for what they are or where they land (links, git includes, bare repositories)', ...landed);
    if (plan.placeholders.length) {
      lines.push('', '# empty read-only placeholders created for the run (missing protected paths)');
      for (const p of plan.placeholders) lines.push(`${p.kind} ${p.path}`);
    }
    if (this.policy.ignored.length) {
      lines.push('', '# settings entries ignored (srt config shows them too)');
      for (const i of this.policy.ignored) lines.push(`${i.key}${i.value !== undefined ? ` ${i.value}` : ''} (${describeSource(i.source, this.policy)}): ${i.reason}`);
    }
    const warnings = this.startupWarnings(plan);
    if (warnings.length) lines.push('', '# warnings', ...warnings.map((w) => `srt: warning: ${w}`));
    return lines.join('\n') + '\n';
  }

  /** What --dry-run says about TLS termination: on/off, the CA in use (never its key), trust files. */
  private tlsPlan(): string[] {
    const t = this.policy.network.tlsTerminate;
    if (!t) return ['off: HTTPS tunnels are relayed as they are (network.tlsTerminate turns termination on)'];
    if (!this.tls) return ['configured, but the sandbox has no network'];
    const { ca, rootsSource, upstream } = this.tls.termination;
    const excluded = t.excludeDomains.map((r) => r.text);
    return [
      `on: a CONNECT or SOCKS tunnel whose client starts TLS is terminated by srt${excluded.length ? ` (not for ${excluded.join(', ')})` : ''}`,
      ca.ephemeral
        ? `CA: ephemeral, made for this run (${ca.subject}, SHA-256 ${ca.fingerprint256}); its key exists only in srt's memory`
        : `CA: ${t.caCertPath} (${ca.subject}, SHA-256 ${ca.fingerprint256}); key ${t.caKeyPath}, unreadable inside the sandbox`,
      `upstreams verified against: ${rootsSource}${t.extraCaCertPaths.length ? ` + ${t.extraCaCertPaths.join(', ')}` : ''} (${upstream.certs.length} certificates)`,
      `the command trusts: ${this.tls.bundlePath} (PEM; srt's CA + those roots), ${this.tls.javaTrustStorePath} (Java PKCS#12)`,
      `maxTunnels ${t.maxTunnels}, handshakeTimeoutMs ${t.handshakeTimeoutMs}`,
    ];
  }

  /** Run the command; resolves to its exit status per SPEC §1. One run per Sandbox: the run
   *  directory, placeholders and proxy are set up for it and cleaned up after it. */
  messages(): string[] {
    return this.out.list();
  }

  async run(cmd: CommandSpec): Promise<number> {
    if (this.disposed) throw new Error('Sandbox already disposed');
    if (this.ran) throw new Error('Sandbox.run() may be called once; create a new Sandbox for another command');
    this.ran = true;
    const argv = this.argvOf(cmd);
    const plan = this.plan(cmd);
    for (const w of this.startupWarnings(plan)) this.out.say(`srt: warning: ${w}`);
    if (this.debug) for (const n of [...plan.notes, ...this.credentials.notes]) this.out.say(`srt[debug]: ${n}`);
    const env = this.commandEnv();

    const missing = checkCommand(argv[0]!, env.PATH ?? '', this.policy.cwd);
    if (missing) {
      this.out.say(`srt: ${argv[0]}: ${missing.message}`);
      return missing.status;
    }

    // Leftovers of runs killed with SIGKILL (placeholders, run dirs); never a live run's. Only a
    // real run clears them: a dry run (or srt doctor) changes nothing.
    try {
      for (const n of reapStale(this.policy.home)) this.out.say(`srt: warning: ${n}`);
    } catch { /* the lock is busy: they stay for the next run */ }

    // Placeholders other runs recorded that this run binds read-only must survive this run too.
    const kinds = new Map<string, 'file' | 'dir'>();
    for (const l of this.facts.landings.values()) if (l.kind === 'file' || l.kind === 'dir') kinds.set(l.real, l.kind);
    for (const ph of plan.placeholders) kinds.set(ph.path, ph.kind);
    const bound = new Map<string, 'file' | 'dir'>();
    for (const m of plan.ops) {
      if (m.kind === 'bind' && m.ro && !m.optional && !m.byHelper && m.source === m.dest && kinds.has(m.dest)) bound.set(m.dest, kinds.get(m.dest)!);
    }
    try {
      this.placeholders.create(plan.placeholders, bound, this.watched);
    } catch (e) {
      this.out.say(`srt: cannot create placeholders for protected paths: ${(e as Error).message}`);
      return 125;
    }
    Object.assign(env, this.gitExcludesEnv(plan.placeholders, env));

    const mountsPath = this.facts.seccomp?.mountsPath;
    if (mountsPath) {
      // Identities now, after the placeholders exist: the helper compares what bwrap mounted.
      const ids = realIdentifier();
      let encoded;
      try {
        encoded = encodeMounts(plannedMounts(plan.ops), ids.identify, this.facts.landings.get(plan.chdir)?.id);
      } finally {
        ids.close();
      }
      try {
        if ('error' in encoded) throw new Error(encoded.error);
        writeFileSync(mountsPath, encoded.data, { mode: 0o400 });
      } catch (e) {
        this.cleanupSync();
        process.stderr.write(`srt: cannot plan the sandbox's mounts: ${(e as Error).message}\n`);
        return 125;
      }
    }

    const sup = this.facts.seccomp?.supervisor;
    let reportFd: number | undefined;
    if (sup) {
      try {
        writeFileSync(sup.rulesPath, encodeRules(this.rules, plan.protectedRoots, plan.protectedPaths, [this.facts.tmpDir], plan.gated), { mode: 0o400 });
        reportFd = openSync(join(this.runDir, 'report'), 'a', 0o600);
      } catch (e) {
        this.cleanupSync();
        this.out.say(`srt: cannot write the protected-path rules: ${(e as Error).message}`);
        return 125;
      }
    }

    try {
      await this.startProxy();
    } catch (e) {
      this.cleanupSync();
      this.out.say(`srt: cannot start the network proxy: ${(e as Error).message}`);
      return 125;
    }

    this.running = true;
    const stdio = this.facts.seccomp?.terminal?.stdio;
    let terminal: Terminal | undefined;
    try {
      terminal = stdio ? new Terminal(stdio) : undefined;
      // With exposed ports the helper starts first, outside: it binds them, then execs bwrap.
      const res = await launch({
        ...(plan.launcher.length
          ? { bwrap: plan.launcher[0]!, args: [...plan.launcher.slice(1), this.bwrap, ...plan.args] }
          : { bwrap: this.bwrap, args: plan.args }),
        env, cwd: this.policy.cwd,
        viaHelper: this.facts.seccomp !== undefined,
        ...(terminal ? { terminal } : {}),
        ...(reportFd !== undefined && sup ? { report: { fd: reportFd, at: sup.reportFd } } : {}),
        data: this.facts.credentials!.masked.map((m, i) => ({ fd: m.fd, bytes: this.credentials.maskFiles[i]!.content })),
      });
      this.running = false; // from here on a signal ends srt itself (cleanup runs in its handler)
      if (!res.started) {
        if (res.signal) return signalExit(res.signal);
        // The helper's own failure before bwrap ran (an exposed port is taken): it said why.
        if (res.status === 125) return 125;
        const why = await diagnoseBubblewrap(this.bwrap, { weakerNested: this.policy.enableWeakerNestedSandbox });
        this.out.say(`srt: ${why ?? 'the sandbox could not be set up (see the bwrap error above)'}; the command did not run`);
        return 125;
      }
      return res.status;
    } finally {
      this.running = false;
      terminal?.close();
      if (reportFd !== undefined) closeSync(reportFd);
      await this.proxy?.close();
      this.setAsideCreated();
      await this.reviewNewRepositories(plan);
      this.cleanupSync();
    }
  }

  /**
   * Without the supervisor: a protected path no placeholder could stand in for (a git
   * `commondir` would point git outside at other config and hooks) is set aside if the command
   * created it.
   */
  private setAsideCreated(): void {
    for (const path of this.watched) {
      try {
        const aside = setAside(path);
        if (aside) this.endNotes.push(`moved ${path} to ${aside}: it was created inside the sandbox (a protected path)`);
      } catch (e) {
        this.endNotes.push(`${path} was created inside the sandbox and could not be moved aside (${(e as Error).message}); delete it before running git there`);
      }
    }
  }

  /** Refused writes, and what srt disabled in repositories the command created. */
  private async reviewNewRepositories(plan: BwrapPlan): Promise<void> {
    let created: string[] = [];
    if (this.facts.seccomp?.supervisor) {
      let report;
      try {
        report = parseReport(readFileSync(join(this.runDir, 'report')));
      } catch {
        return; // the sandbox never started
      }
      this.endNotes.push(...refusalLines(report.refused, this.policy.cwd));
      for (const r of report.refused) this.audit?.({ kind: 'write', verdict: 'refused', op: r.op, path: r.path, rule: 'protected' });
      created = report.created;
    } else if (!this.policy.filesystem.disabled) {
      // The same search as at the start: a repository HEAD that was not there is the run's.
      try {
        const after = await scanProtected(plan.protectedRoots.map((root) => ({ root })), this.policy.mandatoryDenySearchDepth, this.policy.home);
        const before = new Set(this.headsBefore);
        created = after.roots.flatMap((r) => r.found.filter(isRepositoryHead).map((f) => join(r.root, f))).filter((h) => !before.has(h));
      } catch (e) {
        this.endNotes.push(`could not look for repositories created inside the sandbox (${(e as Error).message}): check new .git directories before running git in them`);
      }
    }
    this.endNotes.push(...disableNewRepositories(newGitDirs(created), this.policy.cwd));
  }

  /**
   * Without the supervisor, the empty placeholders sit in the work tree during the run: git
   * inside is told to ignore them (an excludes file through GIT_CONFIG_*, on top of the user's own).
   */
  private gitExcludesEnv(placeholders: ProtectedTarget[], env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
    const patterns: string[] = [];
    for (const ph of placeholders) {
      for (let d = dirname(ph.path); ; d = dirname(d)) {
        if (lstatSync(join(d, '.git'), { throwIfNoEntry: false })) {
          if (join(d, '.git') !== ph.path) patterns.push(`/${relative(d, ph.path)}${ph.kind === 'dir' ? '/' : ''}`);
          break;
        }
        if (d === '/') break;
      }
    }
    if (patterns.length === 0) return {};
    const own = this.userExcludes(env);
    const file = join(this.runDir, 'git-excludes');
    writeFileSync(file, `${own}${own && !own.endsWith('\n') ? '\n' : ''}# srt placeholders\n${[...new Set(patterns)].join('\n')}\n`, { mode: 0o444 });
    const n = Number(env.GIT_CONFIG_COUNT ?? 0) || 0;
    return { GIT_CONFIG_COUNT: String(n + 1), [`GIT_CONFIG_KEY_${n}`]: 'core.excludesFile', [`GIT_CONFIG_VALUE_${n}`]: file };
  }

  /** The user's own global excludes file (core.excludesFile, else git's default), read outside. */
  private userExcludes(env: NodeJS.ProcessEnv): string {
    const home = this.policy.home;
    const xdg = env.XDG_CONFIG_HOME || join(home, '.config');
    let path = join(xdg, 'git', 'ignore');
    for (const f of [join(xdg, 'git', 'config'), join(home, '.gitconfig')]) {
      try {
        const v = gitConfigValue(parseGitConfig(readFileSync(f, 'utf8')), 'core.excludesFile');
        if (v) path = hooksPathDir(v, this.policy.cwd, home);
      } catch { /* absent or unreadable */ }
    }
    try { return readFileSync(path, 'utf8'); } catch { return ''; }
  }

  /** Replace the network policy of a running sandbox (`--control-fd`): new connections follow it. */
  updateNetwork(network: Policy['network']): void {
    this.policy.network = network;
    this.proxy?.setNetwork(network);
  }

  /**
   * One printable line per distinct refusal by the proxy (`srt: blocked evil.example:443 — …`)
   * and per refused protected write, then what srt did about the run's protected paths and new
   * repositories.
   */
  violations(): string[] {
    const proxied = this.proxy && this.proxyModule ? this.proxy.violations().map(this.proxyModule.formatViolation) : [];
    return [...proxied, ...this.endNotes, ...(this.stage?.notes() ?? []).map((n) => `srt: warning: ${n}`)];
  }

  private cleanupSync(): void {
    this.placeholders.cleanup();
    const left = removeTree(this.runDir);
    if (left && !this.cleanupReported) {
      this.cleanupReported = true;
      this.out.say(`srt: warning: could not remove the run directory ${this.runDir}: ${left}; srt doctor --fix (or the next run) tries again`);
    }
  }

  async dispose(): Promise<void> {
    if (this.disposed) return;
    this.disposed = true;
    this.cleanupSync();
    process.off('exit', this.onExit);
    for (const s of FORWARDED_SIGNALS) process.off(s, this.onSignal);
  }
}

export type { ProtectedTarget };
