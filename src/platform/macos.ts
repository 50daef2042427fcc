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

import { randomBytes } from 'node:crypto';
import { existsSync, lstatSync, mkdirSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import { dirname, isAbsolute, join } from 'node:path';
import { describeCredentialPlan } from '../credentials/describe.js';
import { credentialEnv } from '../credentials/env.js';
import type { CredentialPlan } from '../credentials/plan.js';
import { globMatcher } from '../glob.js';
import { NODE_PRELOAD_PATH } from '../paths.js';
import type { Policy } from '../policy.js';
import { denyGlobRules, srtSecretsDir } from '../profiles/access.js';
import { mayRead, mayWrite } from '../profiles/verdicts.js';
import type { Landing } from '../profiles/landing.js';
import { gitConfigValue, parseGitConfig, type GitConfigEntry } from '../profiles/gitconfig.js';
import { hooksPathDir } from '../profiles/protected.js';
import { buildSeatbeltProfile, HTTP_PROXY_PARAM, seatbeltPaths, SOCKS_PROXY_PARAM, type SeatbeltPlan } from '../profiles/seatbelt.js';
import { sandboxProxyEnv } from '../proxy/env.js';
import { forwardedPorts } from '../proxy/local-services.js';
import { defaultManagedPaths } from '../settings/files.js';
import { describeSource } from '../settings/report.js';
import { shellQuote } from '../shell.js';
import { SandboxError, type CommandSpec, type SandboxOptions } from './backend.js';
import { createCacheDirs } from './cache-dirs.js';
import { checkCommand, commandArgv } from './command.js';
import { resolveLanding } from './landing.js';
import { SeatbeltRun, terminalDevices, type Denial } from './macos-exec.js';
import { materialise } from './materialise.js';
import { removeTree } from './remove.js';
import { runCredentialPlan, runtimeFiles, selfWritableWarnings } from './runtime.js';
import { expandGlob, readGitFile, SearchError } from './search.js';
import { SandboxBase } from './sandbox-base.js';
import type { SpawnPlan } from './spawn-plan.js';
import { reapStale } from './state.js';

/** Fixed system paths: never from PATH (a planted `sandbox-exec` would run the command unsandboxed). */
const SANDBOX_EXEC = '/usr/bin/sandbox-exec';
const NC = '/usr/bin/nc';
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

interface MacosFacts {
  runDir: string;
  tmpDir: string;
  plan: SeatbeltPlan;
  /** Marks this run's denials in the unified log. */
  tag: string;
  /** Masked files have no sentinel copy on macOS: the plan denies them (the profile does too). */
  credentials: CredentialPlan;
}

/** A run directory's name: the owner's pid first, so leftovers of killed runs can be told apart. */
function runDirName(): string {
  return `${process.pid}-${randomBytes(6).toString('base64url').slice(0, 6)}`;
}

/** What a macOS run needs to know, gathered without making anything; throws SandboxError. */
async function gatherMacos(opts: SandboxOptions): Promise<MacosFacts> {
  const { policy } = opts;
  const created = opts.dryRun ? [] : createCacheDirs(policy);
  // The directory srt's secrets live in is hidden in every run: it must exist to be covered.
  if (!opts.dryRun) try { mkdirSync(srtSecretsDir(policy.home), { recursive: true, mode: 0o700 }); } catch { /* no key then (sentinel-key.ts says why) */ }
  const credentials = await runCredentialPlan(policy, { ...(opts.dryRun ? { dryRun: true } : {}), bindFiles: false });

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

  // Planned here, made by the run (materialise).
  const runDir = join(land(join(policy.home, '.srt', 'run')).real, runDirName());
  const tmpDir = join(runDir, 'tmp');
  const tag = `srt-${randomBytes(6).toString('hex')}`;
  const plan = buildSeatbeltProfile(policy, {
    landings, tmpDir, runDir, runRoot: dirname(runDir),
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
  return { runDir, tmpDir, plan, tag, credentials };
}

/** The -D parameters, the proxy's among them. */
function params(f: MacosFacts, http: number, socks: number): [string, string][] {
  return [...f.plan.params, [HTTP_PROXY_PARAM, `localhost:${http}`], [SOCKS_PROXY_PARAM, `localhost:${socks}`]];
}

function sandboxArgs(f: MacosFacts, argv: string[], http: number, socks: number): string[] {
  return ['-p', f.plan.profile, ...params(f, http, socks).flatMap(([k, v]) => ['-D', `${k}=${v}`]), '--', ...argv];
}

/** What the command's environment gains: the Linux variables, with the proxy on its real ports. */
function envChanges(f: MacosFacts, http: number, socks: number): Record<string, string> {
  return {
    TMPDIR: f.tmpDir,
    SRT_SANDBOX: '1',
    // No srt-init on macOS: its netcat speaks HTTP CONNECT, for ssh and git:// alike.
    ...sandboxProxyEnv({
      httpPort: http, socksPort: socks, nodePreloadPath: NODE_PRELOAD_PATH, baseEnv: process.env,
      sshProxyCommand: `${NC} -X connect -x 127.0.0.1:${http} %h %p`,
      gitProxyCommand: join(f.runDir, 'git-proxy'),
    }),
  };
}

/** The SpawnPlan of `argv` (the proxy's ports stand in as HTTP_PORT and SOCKS_PORT until it listens). */
function macosPlan(policy: Policy, f: MacosFacts, argv: string[]): SpawnPlan {
  const ports = (s: string) => s.replaceAll(String(DRY_HTTP), 'HTTP_PORT').replaceAll(String(DRY_SOCKS), 'SOCKS_PORT');
  const env = Object.fromEntries(Object.entries(envChanges(f, DRY_HTTP, DRY_SOCKS)).map(([k, v]) => [k, ports(v)]));
  const network = ["127.0.0.1:HTTP_PORT and 127.0.0.1:SOCKS_PORT: srt's filtering HTTP and SOCKS5 proxies (the ports are chosen when they start)"];
  const own = policy.network;
  if (own.httpProxyPort !== undefined) network.push(`the HTTP proxy relays to your own proxy on 127.0.0.1:${own.httpProxyPort}`);
  if (own.socksProxyPort !== undefined) network.push(`the SOCKS5 proxy relays to your own proxy on 127.0.0.1:${own.socksProxyPort}`);
  for (const fw of forwardedPorts(own)) network.push(`localhost:${fw.port}: reached directly (network.allowedDomains "${fw.rule}"; macOS has no private loopback)`);
  // No private loopback: the command's server is the host's, whatever address the host dials.
  for (const e of own.exposePorts.filter((x) => !x.ifAvailable)) network.push(`localhost:${e.sandboxPort}: the command may listen there and the host reach it (network.exposePorts)`);
  const spawn = [[SANDBOX_EXEC], ['-p', f.plan.profile], ...params(f, DRY_HTTP, DRY_SOCKS).map(([k, v]) => ['-D', ports(`${k}=${v}`)]), ['--', ...argv]];
  const sections: SpawnPlan['sections'] = [
    {
      title: 'sandbox-exec command (the profile is the text below; each -D value is one argument)',
      lines: [[[SANDBOX_EXEC, '-p', '"$SEATBELT_PROFILE"'], ...params(f, DRY_HTTP, DRY_SOCKS).map(([k, v]) => ['-D', shellQuote(`${k}=${v}`)]), ['--', ...argv.map(shellQuote)]]
        .map((g) => ports(g.join(' '))).join(' \\\n  ')],
    },
    { title: 'Seatbelt profile (SEATBELT_PROFILE)', lines: [f.plan.profile.trimEnd()] },
    { title: 'network', lines: network },
    { title: 'environment changes (everything else inherited)', lines: Object.entries(env).map(([k, v]) => `${k}=${shellQuote(v)}`) },
  ];
  const creds = describeCredentialPlan(f.credentials);
  if (creds.length) sections.push({ title: 'credentials (real values are never shown; each run mints new sentinels)', lines: creds });
  if (policy.ignored.length) {
    sections.push({
      title: 'settings entries ignored (srt config shows them too)',
      lines: policy.ignored.map((i) => `${i.key}${i.value !== undefined ? ` ${i.value}` : ''} (${describeSource(i.source, policy)}): ${i.reason}`),
    });
  }
  return {
    platform: 'macos', command: argv, cwd: policy.cwd, spawn,
    env: { set: env, unset: [...f.credentials.unsetEnv] },
    runDir: f.runDir, files: [{ path: f.runDir, mode: 0o700 }, { path: f.tmpDir, mode: 0o700 }],
    filesystem: { writable: f.plan.writable, profile: f.plan.profile, params: f.plan.params, placeholders: [] },
    sections,
    warnings: [...new Set([...f.credentials.warnings, ...selfWritableWarnings(f.plan.writable), ...f.plan.warnings])],
    notes: f.plan.notes,
  };
}

export class MacosSandbox extends SandboxBase<MacosFacts> {
  readonly platform = 'macos' as const;
  /** The last run's denials, with the access model that explains them. */
  private denials: { list: Denial[]; plan: SeatbeltPlan };

  private constructor(policy: Policy, opts: SandboxOptions, gathered: MacosFacts) {
    super(policy, opts, gathered, gatherMacos, macosPlan);
    this.denials = { list: [], plan: gathered.plan };
  }

  static async create(opts: SandboxOptions): Promise<MacosSandbox> {
    return new MacosSandbox(opts.policy, opts, await gatherMacos(opts));
  }

  async run(cmd: CommandSpec): Promise<number> {
    const f = await this.factsForRun();
    const argv = commandArgv(cmd);
    const spawnPlan = macosPlan(this.policy, f, argv);
    const exec = new SeatbeltRun(f.tag, this.session.log);
    this.denials = { list: [], plan: f.plan };
    const out = this.session.out;
    return this.session.run(async (signals) => {
      for (const w of spawnPlan.warnings) out.say(`srt: warning: ${w}`);
      for (const n of spawnPlan.notes) this.session.log?.(n);
      this.session.log?.(`this run's Seatbelt denials are tagged ${f.tag} in the unified log`);
      const sandboxExec = testOnly.sandboxExec ?? SANDBOX_EXEC;
      if (!testOnly.sandboxExec && (process.platform !== 'darwin' || !existsSync(SANDBOX_EXEC))) {
        out.say(process.platform !== 'darwin'
          ? 'srt: the macOS backend runs only on macOS (sandbox-exec); use --dry-run to review its Seatbelt profile here'
          : `srt: ${SANDBOX_EXEC} is missing; srt needs it to sandbox commands on macOS`);
        return 125;
      }
      const missing = checkCommand(argv[0]!, process.env.PATH ?? '', this.policy.cwd);
      if (missing) {
        out.say(`srt: ${argv[0]}: ${missing.message}`);
        return missing.status;
      }
      try { reapStale(this.policy.home); } catch { /* the lock is busy: they stay for the next run */ }
      let http: number, socks: number;
      try {
        materialise(spawnPlan);
        const proxy = await this.session.startProxy(f.credentials, { http: { host: '127.0.0.1', port: 0 }, socks: { host: '127.0.0.1', port: 0 } });
        http = proxy.httpPort!;
        socks = proxy.socksPort!;
      } catch (e) {
        out.say(e instanceof SandboxError ? `srt: ${e.message}` : `srt: cannot start the network proxy: ${(e as Error).message}`);
        return 125;
      }
      // git:// URLs: git runs GIT_PROXY_COMMAND with the host and port, without a shell.
      writeFileSync(join(f.runDir, 'git-proxy'), `#!/bin/sh\nexec ${NC} -X connect -x 127.0.0.1:${http} "$1" "$2"\n`, { mode: 0o500 });
      const env: NodeJS.ProcessEnv = { ...credentialEnv(f.credentials, process.env), ...envChanges(f, http, socks) };
      // The profile must compile and apply before the command may start (fail closed, clear error).
      const [refused, logger] = await Promise.all([exec.preflight(sandboxExec, sandboxArgs(f, ['/usr/bin/true'], http, socks), this.policy.cwd), exec.followLog()]);
      try {
        if (refused !== null) {
          out.say(`srt: sandbox-exec refused the Seatbelt profile (${refused}); the command did not run`);
          return 125;
        }
        return await exec.launch(sandboxExec, sandboxArgs(f, argv, http, socks), env, this.policy.cwd, signals);
      } finally {
        // The command wrote to the terminal itself: where it left the cursor is not srt's to see.
        this.session.commandEnded();
        if (logger) await exec.stopLog(logger);
        this.denials.list = [...exec.denials.values()];
      }
    }, () => {
      exec.cleanup();
      removeTree(f.runDir);
    });
  }

  override violations(): string[] {
    const { list } = this.denials;
    const lines = list.slice(0, MAX_REPORTED).map((d) => `srt: sandbox refused ${d.op} ${d.target} (${d.process})${this.reason(d)}`);
    if (list.length > MAX_REPORTED) lines.push(`srt: … and ${list.length - MAX_REPORTED} more sandbox refusals (--debug lists them)`);
    return this.session.violations(lines);
  }

  /** Why, from the access model, for a file operation on a path. */
  private reason(d: Denial): string {
    if (!d.target.startsWith('/')) return '';
    const rules = this.denials.plan.rules;
    const v = d.op.startsWith('file-write') ? mayWrite(rules, d.target) : d.op.startsWith('file-read') || d.op === 'process-exec' ? mayRead(rules, d.target) : null;
    return !v || v.allowed ? '' : ` — ${v.why}`;
  }
}
