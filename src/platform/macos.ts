// The macOS backend: `sandbox-exec -p PROFILE -D NAME=VALUE … -- CMD` with the Seatbelt profile
// built from the policy (profiles/seatbelt.ts). The filtering proxy listens on loopback TCP ports
// (there is no network namespace: the profile lets the command reach only those ports); the
// environment, exit statuses, signal forwarding and cleanup are the Linux backend's.
//
// Violations: every denial of this run's profile carries a per-run tag (`(with message …)`);
// while the command runs, `log stream` follows the unified log for lines with that tag, and the
// file and network ones are reported when the command ends (where `log` may be used: an admin
// account, or sudo). `log show --predicate 'eventMessage CONTAINS "TAG"' --last 5m` finds them
// afterwards too (the tag is printed with --debug).
//
// On Linux this module only builds and prints the profile (--dry-run --platform macos).

import { execFileSync, spawn, type ChildProcess, type StdioOptions } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { closeSync, constants as fsConstants, existsSync, fstatSync, lstatSync, mkdirSync, mkdtempSync, openSync, readdirSync, realpathSync, statSync, writeFileSync, readFileSync } from 'node:fs';
import { dirname, isAbsolute, join } from 'node:path';
import { isatty } from 'node:tty';
import type { Policy } from '../policy.js';
import { denyGlobRules, mayRead, mayWrite, srtSecretsDir } from '../profiles/access.js';
import { globMatcher } from '../glob.js';
import type { Landing } from '../profiles/bwrap.js';
import {
  buildSeatbeltProfile, HTTP_PROXY_PARAM, seatbeltPaths, SOCKS_PROXY_PARAM, type SeatbeltPlan,
} from '../profiles/seatbelt.js';
import { sandboxProxyEnv, NODE_PRELOAD_PATH } from '../proxy/env.js';
import { forwardedPorts } from '../proxy/local-services.js';
import type { ProxyHandle } from '../proxy/server.js';
import {
  checkCommand, commandArgv, loadProxyModule, runCredentialPlan, runtimeFiles, SandboxError, selfWritableWarnings,
  type CommandSpec, type SandboxOptions,
} from '../sandbox.js';
import { describeCredentialPlan } from '../credentials/describe.js';
import { credentialEnv } from '../credentials/env.js';
import type { CredentialPlan } from '../credentials/plan.js';
import type { CredentialStage } from '../credentials/stage.js';
import { gitConfigValue, parseGitConfig, type GitConfigEntry } from '../profiles/gitconfig.js';
import { hooksPathDir } from '../profiles/protected.js';
import { defaultManagedPaths } from '../settings/files.js';
import { describeSource } from '../settings/report.js';
import { shellQuote } from '../shell.js';
import { Messages, type PlatformBackend } from './backend.js';
import { resolveLanding } from './landing.js';
import { removeTree } from './remove.js';
import { createCacheDirs } from './cache-dirs.js';
import { FORWARDED_SIGNALS, signalExit } from './run.js';
import { expandGlob, readGitFile, SearchError } from './search.js';
import { reapStale } from './state.js';

/** Fixed system paths: never from PATH (a planted `sandbox-exec` would run the command unsandboxed). */
const SANDBOX_EXEC = '/usr/bin/sandbox-exec';
const LOG = '/usr/bin/log';
const NC = '/usr/bin/nc';
const PS = '/bin/ps';
/** Time the unified log gets to deliver the last denials after the command ends. */
const LOG_GRACE_MS = 300;
const LOG_START_MS = 1500;
const MAX_REPORTED = 20;
/**
 * TEST ONLY — never derived from settings, environment or the command line: a stand-in for
 * sandbox-exec, so the runner's lifecycle (statuses, signals, process groups, watchdog, cleanup)
 * can be tested on Linux. The stand-in runs commands without any sandbox.
 */
export const testOnly: { sandboxExec?: string } = {};

/** Stand-ins for the proxy ports in --dry-run output (the ports are chosen when the proxy starts). */
const DRY_HTTP = 65001;
const DRY_SOCKS = 65002;

/** Where a path lands, in its on-disk case on macOS (volumes are case-insensitive; rules are not). */
function land(path: string): Landing {
  const l = resolveLanding(path);
  if (process.platform !== 'darwin') return l;
  const existing = l.kind === 'file' || l.kind === 'dir' ? l.real : l.kind === 'missing' && l.firstMissing ? dirname(l.firstMissing) : null;
  if (!existing) return l;
  try {
    const canonical = realpathSync.native(existing);
    const real = canonical + l.real.slice(existing.length);
    return l.firstMissing ? { ...l, real, firstMissing: canonical + l.firstMissing.slice(existing.length) } : { ...l, real };
  } catch {
    return l;
  }
}

/** The terminal devices srt's stdio are (`/dev/ttys003`), so the command keeps its own terminal only. */
function terminalDevices(): string[] {
  if (process.platform !== 'darwin') return [];
  const rdevs = new Set<number>();
  for (const fd of [0, 1, 2]) {
    try { if (isatty(fd)) rdevs.add(fstatSync(fd).rdev); } catch { /* closed */ }
  }
  if (rdevs.size === 0) return [];
  const out: string[] = [];
  for (const name of readdirSync('/dev')) {
    if (!/^ttys\d+$/.test(name)) continue;
    try { if (rdevs.has(statSync(`/dev/${name}`).rdev)) out.push(`/dev/${name}`); } catch { /* gone */ }
  }
  return out;
}

/** Is srt in its terminal's foreground process group (a `+` in ps's STAT)? */
function inForeground(): boolean {
  try {
    return execFileSync(PS, ['-o', 'stat=', '-p', String(process.pid)], { encoding: 'utf8', timeout: 5000 }).includes('+');
  } catch {
    return true; // cannot tell: behave as a program run in the foreground does
  }
}

/**
 * The command's stdio: a terminal on stdout or stderr goes in write-only (a new open of the same
 * device) — the descriptor the shell gave is usually readable too, and the command, in its own
 * session, is never stopped by SIGTTIN from reading keystrokes through it. Not a barrier: the
 * profile lets the command open the terminal again; only a pty relay (Linux) keeps it out.
 */
function plainStdio(): { stdio: StdioOptions; opened: number[] } {
  const opened: number[] = [];
  const devices = terminalDevices();
  const out = [1, 2].map((fd) => {
    if (!isatty(fd)) return 'inherit' as const;
    const rdev = fstatSync(fd).rdev;
    const device = devices.find((d) => statSync(d).rdev === rdev) ?? (process.platform === 'linux' ? `/proc/self/fd/${fd}` : undefined);
    try {
      if (!device) throw new Error('no device');
      const w = openSync(device, fsConstants.O_WRONLY | fsConstants.O_NOCTTY);
      opened.push(w);
      return w;
    } catch {
      return 'ignore' as const; // cannot be made write-only: no terminal rather than a readable one
    }
  });
  return { stdio: ['inherit', out[0]!, out[1]!], opened };
}

function readConfig(file: string): GitConfigEntry[] {
  try {
    return parseGitConfig(readFileSync(file, 'utf8'));
  } catch {
    return [];
  }
}

/**
 * The hooks directories git obeys: `core.hooksPath` of the repository holding cwd, and of the
 * global and system config (a relative one-component global value is a name protected
 * everywhere, like `.husky`; another relative one is resolved in this repository).
 */
function hooksPaths(policy: Policy, gitDir: string | undefined): { dirs: string[]; name?: string } {
  const dirs: string[] = [];
  let name: string | undefined;
  const workTree = policy.root;
  if (gitDir) {
    const v = gitConfigValue([...readConfig(join(gitDir, 'config')), ...readConfig(join(gitDir, 'config.worktree'))], 'core.hooksPath');
    if (v) dirs.push(hooksPathDir(v, workTree, policy.home));
  }
  const xdg = process.env.XDG_CONFIG_HOME || join(policy.home, '.config');
  const g = gitConfigValue([...readConfig('/etc/gitconfig'), ...readConfig(join(xdg, 'git', 'config')), ...readConfig(join(policy.home, '.gitconfig'))], 'core.hooksPath');
  if (g !== undefined) {
    if (!isAbsolute(g) && !g.startsWith('~') && !g.includes('/') && g !== '.' && g !== '..') name = g;
    else dirs.push(hooksPathDir(g, workTree, policy.home));
  }
  return { dirs, ...(name ? { name } : {}) };
}

interface Denial { process: string; op: string; target: string }

/** `Sandbox: cat(4242) deny(1) file-read-data /Users/a/.ssh/id_rsa srt-…` → its parts. */
export function parseDenial(message: string, tag: string): Denial | null {
  const m = /Sandbox: (.+?)\(\d+\) deny\(\d+\) (\S+)(?: (.*))?$/.exec(message.trim());
  if (!m) return null;
  let target = (m[3] ?? '').trim();
  if (target.endsWith(tag)) target = target.slice(0, -tag.length).trim();
  return { process: m[1]!, op: m[2]!, target };
}

export class MacosSandbox implements PlatformBackend {
  readonly platform = 'macos' as const;
  private out = new Messages();
  private disposed = false;
  private ran = false;
  private running = false;
  private proxy: ProxyHandle | undefined;
  private proxyModule: typeof import('../proxy/server.js') | undefined;
  /** Injects, re-masks and guards credentials in the proxy (only when something is masked). */
  private stage: CredentialStage | undefined;
  private readonly denials = new Map<string, Denial>();
  /** Helper processes of the run (log stream, watchdog): stopped by cleanup whatever happens. */
  private readonly helpers = new Set<ChildProcess>();
  private readonly onExit = () => this.cleanupSync();
  private readonly onSignal = (sig: NodeJS.Signals) => {
    if (this.running) return; // run() forwards it to the command
    this.cleanupSync();
    process.exit(signalExit(sig));
  };

  private constructor(
    readonly policy: Policy,
    private readonly debug: boolean,
    private readonly runDir: string,
    private readonly tmpDir: string,
    private readonly plan: SeatbeltPlan,
    private readonly tag: string,
    /** Masked files have no sentinel copy on macOS: the plan denies them (the profile does too). */
    private readonly credentials: CredentialPlan,
  ) {}

  static async create(opts: SandboxOptions): Promise<MacosSandbox> {
    const { policy } = opts;
    const created = opts.dryRun ? [] : createCacheDirs(policy);
    // The directory srt's secrets live in is hidden in every run: it must exist to be covered.
    if (!opts.dryRun) try { mkdirSync(srtSecretsDir(policy.home), { recursive: true, mode: 0o700 }); } catch { /* no key then (sentinel-key.ts says why) */ }
    const credentials = await runCredentialPlan(policy, { ...(opts.dryRun ? { dryRun: true } : {}), bindFiles: false });
    try { reapStale(policy.home); } catch { /* the lock is busy: they stay for the next run */ }

    const gitPath = join(policy.cwd, '.git');
    const cwdGitFile = lstatSync(gitPath, { throwIfNoEntry: false })?.isFile() ?? false;
    const git = cwdGitFile ? readGitFile(gitPath) : null;
    const worktree = git && git.commonDir !== git.gitDir ? { commonDir: git.commonDir, gitDir: git.gitDir } : undefined;
    const rootGit = join(policy.root, '.git');
    const repoGitDir = git?.commonDir ?? (existsSync(join(rootGit, 'HEAD')) ? rootGit : (readGitFile(rootGit)?.commonDir));
    const hooks = hooksPaths(policy, repoGitDir);
    const hooksLandings = hooks.dirs.map((d) => land(d).real);
    const landings = new Map<string, Landing>();
    for (const p of seatbeltPaths(policy, worktree)) landings.set(p, land(p));
    // A symlink whose name matches a deny glob is covered where it leads (Seatbelt judges the
    // target's path), so the existing matches are looked up, as on Linux.
    const globTargets = new Map<string, string[]>();
    try {
      for (const r of denyGlobRules(policy)) {
        const re = { test: globMatcher(r.path) };
        // (Names that are not UTF-8 need nothing here: the regex matches bytes.)
        const targets = expandGlob(r.path).matches.map((l) => land(l.real).real).filter((t) => !re.test(t));
        if (targets.length) globTargets.set(r.path, [...new Set(targets)]);
      }
    } catch (e) {
      if (e instanceof SearchError) throw new SandboxError(e.message);
      throw e;
    }

    const runRoot = join(policy.home, '.srt', 'run');
    let runDir: string;
    try {
      mkdirSync(runRoot, { recursive: true, mode: 0o700 });
      runDir = mkdtempSync(join(runRoot, `${process.pid}-`));
    } catch (e) {
      throw new SandboxError(`cannot create the run directory under ${runRoot}: ${(e as Error).message}`);
    }
    try {
      const tmpDir = join(runDir, 'tmp');
      mkdirSync(tmpDir, { mode: 0o700 });
      const tag = `srt-${randomBytes(6).toString('hex')}`;
      const realRun = land(runDir).real;
      const plan = buildSeatbeltProfile(policy, {
        landings, tmpDir: join(realRun, 'tmp'), runDir: realRun, runRoot: dirname(realRun),
        runtimeFiles: runtimeFiles(),
        ...(worktree ? { worktree } : {}),
        cwdIsRepository: cwdGitFile || existsSync(join(gitPath, 'HEAD')),
        cwdGitFile,
        terminals: terminalDevices(),
        managedDir: dirname(defaultManagedPaths('darwin')[0]!),
        logTag: tag,
        globTargets,
        hooksDirs: hooksLandings,
        ...(hooks.name ? { hooksName: hooks.name } : {}),
      });
      if (plan.errors.length) throw new SandboxError(plan.errors.join('\n'));
      plan.warnings.push(...created);
      const sb = new MacosSandbox(policy, opts.debug ?? false, runDir, tmpDir, plan, tag, credentials);
      sb.out = new Messages(opts.onMessage);
      process.on('exit', sb.onExit);
      for (const s of FORWARDED_SIGNALS) process.on(s, sb.onSignal);
      return sb;
    } catch (e) {
      removeTree(runDir);
      throw e;
    }
  }

  /** The -D parameters, the proxy's among them. */
  private params(http: number, socks: number): [string, string][] {
    return [...this.plan.params, [HTTP_PROXY_PARAM, `localhost:${http}`], [SOCKS_PROXY_PARAM, `localhost:${socks}`]];
  }

  private sandboxArgs(argv: string[], http: number, socks: number): string[] {
    return ['-p', this.plan.profile, ...this.params(http, socks).flatMap(([k, v]) => ['-D', `${k}=${v}`]), '--', ...argv];
  }

  /** What the command's environment gains: the Linux variables, with the proxy on its real ports. */
  private envChanges(http: number, socks: number): Record<string, string> {
    return {
      TMPDIR: this.tmpDir,
      SRT_SANDBOX: '1',
      // No srt-init on macOS: its netcat speaks HTTP CONNECT, for ssh and git:// alike.
      ...sandboxProxyEnv({
        httpPort: http, socksPort: socks, nodePreloadPath: NODE_PRELOAD_PATH, baseEnv: process.env,
        sshProxyCommand: `${NC} -X connect -x 127.0.0.1:${http} %h %p`,
        gitProxyCommand: join(this.runDir, 'git-proxy'),
      }),
    };
  }

  private startupWarnings(): string[] {
    return [...new Set([...this.credentials.warnings, ...selfWritableWarnings(this.plan.writable), ...this.plan.warnings])];
  }

  dryRun(cmd: CommandSpec): string {
    const argv = commandArgv(cmd);
    const ports = (s: string) => s.replaceAll(String(DRY_HTTP), 'HTTP_PORT').replaceAll(String(DRY_SOCKS), 'SOCKS_PORT');
    const lines = [
      '# sandbox-exec command (the profile is the text below; each -D value is one argument)',
      [
        [SANDBOX_EXEC, '-p', '"$SEATBELT_PROFILE"'],
        ...this.params(DRY_HTTP, DRY_SOCKS).map(([k, v]) => ['-D', shellQuote(`${k}=${v}`)]),
        ['--', ...argv.map(shellQuote)],
      ].map((g) => ports(g.join(' '))).join(' \\\n  '),
      '',
      '# Seatbelt profile (SEATBELT_PROFILE)',
      this.plan.profile.trimEnd(),
      '',
      '# network',
      "127.0.0.1:HTTP_PORT and 127.0.0.1:SOCKS_PORT: srt's filtering HTTP and SOCKS5 proxies (the ports are chosen when they start)",
    ];
    const own = this.policy.network;
    if (own.httpProxyPort !== undefined) lines.push(`the HTTP proxy relays to your own proxy on 127.0.0.1:${own.httpProxyPort}`);
    if (own.socksProxyPort !== undefined) lines.push(`the SOCKS5 proxy relays to your own proxy on 127.0.0.1:${own.socksProxyPort}`);
    for (const f of forwardedPorts(own)) lines.push(`localhost:${f.port}: reached directly (network.allowedDomains "${f.rule}"; macOS has no private loopback)`);
    for (const e of own.exposePorts) lines.push(`localhost:${e.sandboxPort}: the command may listen there and the host reach it (network.exposePorts)`);
    lines.push('', '# environment changes (everything else inherited)');
    for (const [k, v] of Object.entries(this.envChanges(DRY_HTTP, DRY_SOCKS))) lines.push(ports(`${k}=${shellQuote(v)}`));
    const creds = describeCredentialPlan(this.credentials);
    if (creds.length) lines.push('', '# credentials (real values are never shown; each run mints new sentinels)', ...creds);
    if (this.policy.ignored.length) {
      lines.push('', '# settings entries ignored (srt config shows them too)');
      for (const i of this.policy.ignored) lines.push(`${i.key}${i.value !== undefined ? ` ${i.value}` : ''} (${describeSource(i.source, this.policy)}): ${i.reason}`);
    }
    const warnings = this.startupWarnings();
    if (warnings.length) lines.push('', '# warnings', ...warnings.map((w) => `srt: warning: ${w}`));
    return `${lines.join('\n')}\n`;
  }

  messages(): string[] {
    return this.out.list();
  }

  async run(cmd: CommandSpec): Promise<number> {
    if (this.disposed) throw new Error('Sandbox already disposed');
    if (this.ran) throw new Error('Sandbox.run() may be called once; create a new Sandbox for another command');
    this.ran = true;
    for (const w of this.startupWarnings()) this.out.say(`srt: warning: ${w}`);
    if (this.debug) {
      for (const n of this.plan.notes) this.out.say(`srt[debug]: ${n}`);
      this.out.say(`srt[debug]: this run's Seatbelt denials are tagged ${this.tag} in the unified log`);
    }
    const sandboxExec = testOnly.sandboxExec ?? SANDBOX_EXEC;
    if (!testOnly.sandboxExec && (process.platform !== 'darwin' || !existsSync(SANDBOX_EXEC))) {
      this.out.say(process.platform !== 'darwin'
        ? 'srt: the macOS backend runs only on macOS (sandbox-exec); use --dry-run to review its Seatbelt profile here'
        : `srt: ${SANDBOX_EXEC} is missing; srt needs it to sandbox commands on macOS`);
      return 125;
    }
    const argv = commandArgv(cmd);
    const missing = checkCommand(argv[0]!, process.env.PATH ?? '', this.policy.cwd);
    if (missing) {
      this.out.say(`srt: ${argv[0]}: ${missing.message}`);
      return missing.status;
    }
    try {
      this.proxyModule = await loadProxyModule();
      const log = this.debug ? (line: string) => this.out.say(`srt[debug]: ${line}`) : undefined;
      // Loaded only when something is masked (`srt -- true` pays for no credential code).
      const { stages, credential } = this.credentials.secrets.length > 0
        ? await (await import('../credentials/stages.js')).credentialStages(this.credentials, this.policy, log)
        : { stages: [], credential: undefined };
      this.stage = credential;
      this.proxy = await this.proxyModule.startProxy({
        network: this.policy.network,
        listen: { http: { host: '127.0.0.1', port: 0 }, socks: { host: '127.0.0.1', port: 0 } },
        ...(log ? { log } : {}),
        ...(stages.length ? { stages } : {}),
      });
    } catch (e) {
      this.cleanupSync();
      this.out.say(`srt: cannot start the network proxy: ${(e as Error).message}`);
      return 125;
    }
    const http = this.proxy.httpPort!;
    const socks = this.proxy.socksPort!;
    // git:// URLs: git runs GIT_PROXY_COMMAND with the host and port, without a shell.
    writeFileSync(join(this.runDir, 'git-proxy'), `#!/bin/sh\nexec ${NC} -X connect -x 127.0.0.1:${http} "$1" "$2"\n`, { mode: 0o500 });
    const env: NodeJS.ProcessEnv = { ...credentialEnv(this.credentials, process.env), ...this.envChanges(http, socks) };

    let logger: ChildProcess | undefined;
    try {
      // The profile must compile and apply before the command may start (fail closed, clear error).
      const [refused, started] = await Promise.all([this.preflight(sandboxExec, http, socks), this.followLog()]);
      logger = started;
      if (refused !== null) {
        this.out.say(`srt: sandbox-exec refused the Seatbelt profile (${refused}); the command did not run`);
        return 125;
      }
      this.running = true;
      return await this.launch(sandboxExec, this.sandboxArgs(argv, http, socks), env);
    } finally {
      this.running = false;
      if (logger) await this.stopLog(logger);
      await this.proxy.close();
      this.cleanupSync();
    }
  }

  /** Null when the profile compiles and applies (`sandbox-exec … /usr/bin/true`), else why not. */
  private preflight(sandboxExec: string, http: number, socks: number): Promise<string | null> {
    return new Promise((resolve) => {
      const child = spawn(sandboxExec, this.sandboxArgs(['/usr/bin/true'], http, socks), { stdio: ['ignore', 'ignore', 'pipe'], cwd: this.policy.cwd });
      let err = '';
      child.stderr!.setEncoding('utf8').on('data', (d: string) => { err += d; });
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      child.on('error', (e) => { clearTimeout(timer); resolve(e.message); });
      child.on('close', (code, sig) => {
        clearTimeout(timer);
        resolve(code === 0 ? null : err.trim().split('\n').pop() || (sig ? `killed by ${sig}` : `exit status ${code}`));
      });
    });
  }

  /** Run the command in its own session (no controlling terminal: no TIOCSTI into your shell),
   *  forwarding signals to its process group; nothing of the group outlives the command, nor srt. */
  private async launch(sandboxExec: string, args: string[], env: NodeJS.ProcessEnv): Promise<number> {
    // With a terminal on stdin the command reads it directly: never while srt is in the background.
    const tty = isatty(0);
    while (tty && !inForeground()) process.kill(process.pid, 'SIGSTOP');
    const { stdio, opened } = plainStdio();
    return new Promise((resolve, reject) => {
      // Listeners first: a signal that arrives while the command starts is delivered once it has.
      let pgid: number | undefined;
      const pending: NodeJS.Signals[] = [];
      const group = (sig: NodeJS.Signals) => {
        if (pgid === undefined) { pending.push(sig); return; }
        try { process.kill(-pgid, sig); } catch { /* gone */ }
      };
      // Job control from outside (the command has no controlling terminal): Ctrl-Z freezes the
      // command and stops srt; when srt continues, so does the command — unless srt is now in the
      // background and the command could read the terminal, then both stay stopped.
      const onStop = () => {
        if (pgid !== undefined) try { process.kill(-pgid, 'SIGSTOP'); } catch { /* gone */ }
        do process.kill(process.pid, 'SIGSTOP'); while (tty && !inForeground());
        if (pgid !== undefined) try { process.kill(-pgid, 'SIGCONT'); } catch { /* gone */ }
      };
      process.on('SIGTSTP', onStop);
      for (const s of FORWARDED_SIGNALS) process.on(s, group);
      let watchdog: ChildProcess | undefined;
      const done = () => {
        process.off('SIGTSTP', onStop);
        for (const s of FORWARDED_SIGNALS) process.off(s, group);
        this.stopHelper(watchdog); // first, so it never signals a process group number reused later
        if (pgid !== undefined) try { process.kill(-pgid, 'SIGKILL'); } catch { /* none left */ }
      };
      const child = spawn(sandboxExec, args, { stdio, env, cwd: this.policy.cwd, detached: true });
      for (const fd of opened) closeSync(fd);
      pgid = child.pid;
      if (pgid !== undefined) {
        watchdog = this.watch(pgid);
        for (const sig of pending.splice(0)) group(sig);
      }
      child.on('error', (e) => { done(); reject(e); });
      child.on('exit', (code, sig) => {
        done();
        resolve(sig ? signalExit(sig) : (code ?? 125));
      });
    });
  }

  /**
   * macOS has no die-with-parent: a watchdog in its own session holds the read end of a pipe
   * only srt writes to. When srt ends in any way (SIGKILL included) the pipe closes, and the
   * watchdog kills the command's process group and srt's log follower.
   */
  private watch(pgid: number): ChildProcess {
    const also = [...this.helpers].map((h) => h.pid).filter((p): p is number => p !== undefined).join(' ');
    const child = spawn('/bin/sh', ['-c', `read _; kill -KILL -${pgid} ${also} 2>/dev/null`], { stdio: ['pipe', 'ignore', 'ignore'], detached: true });
    child.stdin!.on('error', () => { /* it was stopped first */ });
    (child.stdin as unknown as { unref(): void }).unref();
    child.unref();
    this.helpers.add(child);
    return child;
  }

  private stopHelper(child: ChildProcess | undefined): void {
    if (!child) return;
    this.helpers.delete(child);
    if (child.exitCode === null && child.signalCode === null) try { child.kill('SIGKILL'); } catch { /* gone */ }
  }

  /** Follow the unified log for this run's denials; resolves once `log` listens (or gave up). */
  private followLog(): Promise<ChildProcess | undefined> {
    if (!existsSync(LOG)) return Promise.resolve(undefined);
    return new Promise((resolve) => {
      const child = spawn(LOG, ['stream', '--style', 'ndjson', '--predicate', `eventMessage CONTAINS "${this.tag}"`], { stdio: ['ignore', 'pipe', 'pipe'] });
      this.helpers.add(child);
      let buffered = '';
      let ready = false;
      const timer = setTimeout(() => { ready = true; resolve(child); }, LOG_START_MS);
      const start = () => { if (!ready) { ready = true; clearTimeout(timer); resolve(child); } };
      child.stdout!.setEncoding('utf8').on('data', (d: string) => {
        start(); // its first output is the "Filtering the log data…" header
        buffered += d;
        const lines = buffered.split('\n');
        buffered = lines.pop()!;
        for (const line of lines) this.recordLogLine(line);
      });
      child.stderr!.setEncoding('utf8').on('data', (d: string) => {
        if (this.debug) this.out.say(`srt[debug]: log stream: ${d.trim()}`);
      });
      child.on('error', () => { clearTimeout(timer); resolve(undefined); });
      child.on('exit', () => start());
    });
  }

  private recordLogLine(line: string): void {
    let message: string | undefined;
    try {
      message = (JSON.parse(line) as { eventMessage?: string }).eventMessage;
    } catch { return; }
    const d = message ? parseDenial(message, this.tag) : null;
    if (!d) return;
    if (this.debug) this.out.say(`srt[debug]: seatbelt: ${message}`);
    // Service lookups and the like are noise to report; files and network are what users act on.
    if (!/^(file-|network-|process-exec)/.test(d.op)) return;
    this.denials.set(`${d.op} ${d.target}`, d);
  }

  /** Give the log the last denials, then stop it. */
  private stopLog(child: ChildProcess): Promise<void> {
    return new Promise((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) { this.helpers.delete(child); return resolve(); }
      const timer = setTimeout(() => this.stopHelper(child), LOG_GRACE_MS);
      child.on('exit', () => { clearTimeout(timer); this.helpers.delete(child); resolve(); });
    });
  }

  /** Replace the network policy for new connections (loopback ports in the profile stay as they were). */
  updateNetwork(network: Policy['network']): void {
    this.policy.network = network;
    this.proxy?.setNetwork(network);
  }

  violations(): string[] {
    const out = this.proxy && this.proxyModule ? this.proxy.violations().map(this.proxyModule.formatViolation) : [];
    const denials = [...this.denials.values()];
    for (const d of denials.slice(0, MAX_REPORTED)) out.push(`srt: sandbox refused ${d.op} ${d.target} (${d.process})${this.reason(d)}`);
    if (denials.length > MAX_REPORTED) out.push(`srt: … and ${denials.length - MAX_REPORTED} more sandbox refusals (--debug lists them)`);
    for (const n of this.stage?.notes() ?? []) out.push(`srt: warning: ${n}`);
    return out;
  }

  /** Why, from the access model, for a file operation on a path. */
  private reason(d: Denial): string {
    if (!d.target.startsWith('/')) return '';
    const rules = this.plan.rules;
    const v = d.op.startsWith('file-write') ? mayWrite(rules, d.target) : d.op.startsWith('file-read') || d.op === 'process-exec' ? mayRead(rules, d.target) : null;
    return !v || v.allowed ? '' : ` — ${v.why}`;
  }

  private cleanupSync(): void {
    for (const h of [...this.helpers]) this.stopHelper(h);
    removeTree(this.runDir);
  }

  async dispose(): Promise<void> {
    if (this.disposed) return;
    this.disposed = true;
    this.cleanupSync();
    process.off('exit', this.onExit);
    for (const s of FORWARDED_SIGNALS) process.off(s, this.onSignal);
  }
}
