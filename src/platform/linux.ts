// The Linux backend: bubblewrap + srt-init. A sandbox gathers its facts (linux-facts.ts), plans
// each command purely (linux-plan.ts), and runs it: materialise the run directory, placeholders
// and srt-init's mount plan, start the proxy, launch bwrap (run.ts), then review what the run
// left (refused writes, new repositories) and clean up. The facts of a run that has happened are
// stale (the command may have created anything): the next run gathers them again, reusing the
// tree search only while its watch shows that nothing changed (tree-watch.ts).

import { closeSync, openSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { credentialEnv } from '../credentials/env.js';
import type { Policy } from '../policy.js';
import type { BwrapPlan } from '../profiles/bwrap.js';
import { encodeMounts, plannedMounts } from '../profiles/mounts.js';
import { parseReport, refusalLines, type SupervisorReport } from '../profiles/supervisor.js';
import type { ConnectGroup } from '../loopback-refusals.js';
import type { RefusalGroup } from '../refusals.js';
import { describeSource } from '../settings/report.js';
import type { CommandSpec, SandboxOptions } from './backend.js';
import { checkCommand, commandArgv } from './command.js';
import { diagnoseBubblewrap } from './deps.js';
import { placeholderExcludesEnv } from './git-excludes.js';
import { realIdentifier } from './landing.js';
import { gatherLinux, gitDirsOf, type LinuxFacts } from './linux-facts.js';
import { linuxPlan } from './linux-plan.js';
import { materialise } from './materialise.js';
import { disableNewRepositories, disableRebaseExec, newGitDirs } from './newrepos.js';
import { removeFile, removeTree } from './remove.js';
import { launch, signalExit } from './run.js';
import { scanProtected } from './search.js';
import { SandboxBase } from './sandbox-base.js';
import type { RunSignals } from './session.js';
import { PlaceholderSet, reapStale, setAside } from './state.js';
import { Terminal } from './terminal.js';

export class LinuxSandbox extends SandboxBase<LinuxFacts> {
  readonly platform = 'linux' as const;
  private refusals: RefusalGroup[] = [];
  private connects: ConnectGroup[] = [];
  private readonly placeholders: PlaceholderSet;
  private cleanupReported = false;
  /** A sandbox for many commands (the library's) keeps its run directory and its proxy for all
   *  of them; the CLI's one command makes and removes its own. */
  private readonly keep: boolean;
  /** The run directory this sandbox made and keeps, once it has made it. */
  private keptRunDir: string | undefined;

  private constructor(policy: Policy, opts: SandboxOptions, gathered: LinuxFacts) {
    const keep = opts.oneCommand !== true && opts.dryRun !== true;
    super(policy, opts, gathered, (o, previous) => gatherLinux(o, {
      search: previous.search, ...(keep ? { runDir: previous.facts.runDir } : {}), ...(previous.kept ? { kept: previous.kept } : {}), ...(previous.plan ? { plan: previous.plan } : {}),
    }),
      (p, g, argv) => linuxPlan(p, g, argv).spawn);
    this.keep = keep;
    this.placeholders = new PlaceholderSet(policy.home);
  }

  /** Validate dependencies and gather what a run needs; throws SandboxError. */
  static async create(opts: SandboxOptions): Promise<LinuxSandbox> {
    return new LinuxSandbox(opts.policy, opts, await gatherLinux(opts));
  }

  async run(cmd: CommandSpec): Promise<number> {
    const g = await this.factsForRun();
    return this.session.run((signals) => this.runPlanned(g, commandArgv(cmd), signals), () => this.cleanupSync(g));
  }

  private async runPlanned(g: LinuxFacts, argv: string[], signals: RunSignals): Promise<number> {
    const out = this.session.out;
    const { bwrap: plan, spawn } = linuxPlan(this.policy, g, argv);
    for (const w of spawn.warnings) out.say(`srt: warning: ${w}`);
    for (const n of spawn.notes) this.session.log?.(n);
    const env: NodeJS.ProcessEnv = { ...credentialEnv(g.credentials, process.env), ...spawn.env.set };

    const missing = checkCommand(argv[0]!, env.PATH ?? '', this.policy.cwd);
    if (missing) {
      out.say(`srt: ${argv[0]}: ${missing.message}`);
      return missing.status;
    }

    const kept = this.keptRunDir === g.facts.runDir;
    if (this.keptRunDir && !kept) this.removeKept(); // the run root lands elsewhere now
    try {
      materialise(spawn, kept);
    } catch (e) {
      out.say(`srt: ${(e as Error).message}`);
      return 125;
    }
    // Named by this process's pid: if it ends without dispose(), the next srt run reaps it.
    if (this.keep && !kept) this.keptRunDir = g.facts.runDir;
    // Leftovers of runs killed with SIGKILL (placeholders, run dirs); never a live run's (this
    // run's directory exists by now, so a test can hold srt here, between plan and mounts). Only
    // a real run clears them: a dry run (or srt doctor) changes nothing.
    try {
      for (const n of reapStale(this.policy.home)) out.say(`srt: warning: ${n}`);
    } catch { /* the lock is busy: they stay for the next run */ }
    // Placeholders other runs recorded that this run binds read-only must survive this run too.
    const kinds = new Map<string, 'file' | 'dir'>();
    for (const l of g.facts.landings.values()) if (l.kind === 'file' || l.kind === 'dir') kinds.set(l.real, l.kind);
    for (const ph of plan.placeholders) kinds.set(ph.path, ph.kind);
    const bound = new Map<string, 'file' | 'dir'>();
    for (const m of plan.ops) {
      if (m.kind === 'bind' && m.ro && !m.optional && !m.byHelper && m.source === m.dest && kinds.has(m.dest)) bound.set(m.dest, kinds.get(m.dest)!);
    }
    try {
      this.placeholders.create(plan.placeholders, bound, g.watched);
    } catch (e) {
      out.say(`srt: cannot create placeholders for protected paths: ${(e as Error).message}`);
      return 125;
    }
    Object.assign(env, placeholderExcludesEnv(plan.placeholders, env, g.facts.runDir, this.policy));

    const mountsPath = g.facts.seccomp?.mountsPath;
    if (mountsPath) {
      // Identities now, after the placeholders exist: the helper compares what bwrap mounted.
      const ids = realIdentifier();
      const id = g.facts.landings.get(plan.chdir)?.id;
      let encoded;
      try {
        encoded = encodeMounts(plannedMounts(plan.ops), ids.identify, { path: plan.chdir, ...(id ? { id } : {}) });
      } finally {
        ids.close();
      }
      try {
        if ('error' in encoded) throw new Error(encoded.error);
        removeFile(mountsPath); // the last command's, in a kept run directory
        writeFileSync(mountsPath, encoded.data, { mode: 0o400, flag: 'wx' });
      } catch (e) {
        out.say(`srt: cannot plan the sandbox's mounts: ${(e as Error).message}`);
        return 125;
      }
    }

    const seccomp = g.facts.seccomp;
    const sup = seccomp?.supervisor;
    let reportFd: number | undefined;
    try {
      if (sup) reportFd = openSync(join(g.facts.runDir, 'report'), 'a', 0o600);
    } catch (e) {
      out.say(`srt: cannot open the supervisor's report: ${(e as Error).message}`);
      return 125;
    }
    // The proxy starts once bwrap is spawned, while bwrap and srt-init set the sandbox up;
    // srt-init starts the command only on srt's go, after the proxy listens (launch's `go`).
    const sockets = g.proxySockets;
    let proxyStarted: Promise<boolean> | undefined;
    let proxyError: Error | undefined;
    const startProxy = (): Promise<boolean> => (proxyStarted = this.session.startProxy(g.credentials, { http: { socketPath: sockets!.http }, socks: { socketPath: sockets!.socks }, forwards: g.forwards },
      { ...(g.tls ? { termination: g.tls.termination } : {}), ...(seccomp ? { splicer: { helperPath: seccomp.helperPath } } : {}) }, this.keep)
      .then(() => true, (e: unknown) => { proxyError = e as Error; return false; }));

    const stdio = seccomp?.terminal?.stdio;
    let terminal: Terminal | undefined;
    try {
      terminal = stdio ? new Terminal(stdio) : undefined;
      // With exposed ports the helper starts first, outside: it binds them, then execs bwrap.
      const res = await launch({
        signals,
        ...(plan.launcher.length
          ? { bwrap: plan.launcher[0]!, args: [...plan.launcher.slice(1), g.bwrap, ...plan.args] }
          : { bwrap: g.bwrap, args: plan.args }),
        env, cwd: this.policy.cwd,
        viaHelper: seccomp !== undefined,
        ...(terminal ? { terminal } : {}),
        ...(reportFd !== undefined && sup ? { report: { fd: reportFd, at: sup.reportFd } } : {}),
        data: g.facts.credentials!.masked.map((m, i) => ({ fd: m.fd, bytes: g.credentials.maskFiles[i]!.content })),
        ...(sockets && seccomp ? { go: { fd: seccomp.goFd, start: startProxy } } : {}),
      });
      await proxyStarted;
      if (proxyError) {
        out.say(`srt: cannot start the network proxy: ${proxyError.message}`);
        return 125;
      }
      if (!res.started) {
        if (res.signal) return signalExit(res.signal);
        // The helper's own failure before bwrap ran (an exposed port is taken): it said why.
        if (res.status === 125) return 125;
        const why = await diagnoseBubblewrap(g.bwrap, { weakerNested: this.policy.enableWeakerNestedSandbox });
        out.say(`srt: ${why ?? 'the sandbox could not be set up (see the bwrap error above)'}; the command did not run`);
        return 125;
      }
      return res.status;
    } finally {
      await proxyStarted;
      terminal?.close();
      this.session.commandEnded(terminal?.leftMidLine());
      if (reportFd !== undefined) closeSync(reportFd);
      this.setAsideCreated(g);
      await this.reviewNewRepositories(g, plan);
    }
  }

  /**
   * Without the supervisor: a protected path no placeholder could stand in for (a git
   * `commondir` would point git outside at other config and hooks) is set aside if the command
   * created it.
   */
  private setAsideCreated(g: LinuxFacts): void {
    for (const path of g.watched) {
      try {
        const aside = setAside(path);
        if (aside) this.session.note(`moved ${path} to ${aside}: it was created inside the sandbox (a protected path)`);
      } catch (e) {
        this.session.note(`${path} was created inside the sandbox and could not be moved aside (${(e as Error).message}); delete it before running git there`);
      }
    }
  }

  /**
   * Refused writes, what srt disabled in repositories the command created, and the exec lines of
   * a rebase or cherry-pick the run left in any repository.
   */
  private async reviewNewRepositories(g: LinuxFacts, plan: BwrapPlan): Promise<void> {
    let created: string[] = [];
    let search = !this.policy.filesystem.disabled;
    if (g.facts.seccomp?.supervisor) {
      let report;
      try {
        report = parseReport(readFileSync(join(g.facts.runDir, 'report')));
      } catch {
        return; // the sandbox never started
      }
      const why = new Map<string, string>();
      for (const t of g.facts.protectedTargets) {
        if (!t.why) continue;
        why.set(t.path, t.why);
        const real = g.facts.landings.get(t.path)?.real;
        if (real) why.set(real, t.why);
      }
      await this.reportRefusals(report, (p) => why.get(p));
      created = report.created;
      // More new repositories than the supervisor followed: the search finds the rest.
      search &&= report.lostTrack;
    }
    if (search) {
      // The same search as at the start: a git dir that was not there is the run's.
      try {
        const after = await scanProtected(plan.protectedRoots.map((root) => ({ root })), this.policy.mandatoryDenySearchDepth, this.policy.home);
        const before = new Set(g.before.gitDirs);
        created.push(...gitDirsOf(after).filter((d) => !before.has(d)).map((d) => join(d, 'HEAD')));
      } catch (e) {
        this.session.note(`could not look for repositories created inside the sandbox (${(e as Error).message}): check new .git directories before running git in them`);
      }
    }
    const gitDirs = newGitDirs(created);
    for (const line of disableNewRepositories(gitDirs, this.policy.cwd)) this.session.note(line);
    for (const line of disableRebaseExec([...g.before.gitDirs, ...gitDirs], g.before.todos, this.policy.cwd)) this.session.note(line);
  }

  /** What the supervisor and the kernel refused: srt's protected paths one line each, the rest
   *  (read-only places, deny entries) grouped, with what would allow it. */
  private async reportRefusals(report: SupervisorReport, pathWhy: (path: string) => string | undefined): Promise<void> {
    this.refusals = [];
    this.connects = [];
    if (report.connects.length || report.connectsUnlisted) await this.reportConnects(report);
    if (report.kernel.length === 0 && report.refused.length === 0 && report.unlisted === 0) return;
    // Loaded only when something was refused: the access model is not needed to start a run.
    const { classifyRefusals, refusalReportLines } = await import('../refusals.js');
    let classified;
    try {
      classified = classifyRefusals(this.policy, report.kernel, report.refused);
    } catch (e) {
      classified = { groups: [], records: [], protectedLeft: report.refused };
      this.session.note(`could not tell what refused ${report.kernel.length} reads or writes (${(e as Error).message})`);
    }
    for (const line of refusalLines(classified.protectedLeft, this.policy.cwd, 10, { unlisted: report.unlisted, pathWhy })) this.session.note(line);
    for (const r of classified.protectedLeft) this.session.auditSink?.({ kind: 'write', verdict: 'refused', op: r.op, path: r.path, rule: 'protected' });
    this.refusals = classified.groups;
    for (const { kind, ...r } of classified.records) this.session.auditSink?.({ kind, verdict: 'refused', ...r });
    for (const line of refusalReportLines(classified.groups, this.policy, (s) => describeSource(s, this.policy))) this.session.note(line);
    if (report.more) this.session.note('more reads and writes were refused than srt lists (the first 4096 distinct ones are above)');
  }

  /** Loopback connections nothing listened on inside, grouped by the entry that would forward them. */
  private async reportConnects(report: SupervisorReport): Promise<void> {
    const { classifyConnects, connectReportLines } = await import('../loopback-refusals.js');
    const { groups, records } = classifyConnects(this.policy, report.connects, process.getuid?.() === 0);
    this.connects = groups;
    for (const { kind, ...r } of records) this.session.auditSink?.({ kind, verdict: 'refused', ...r });
    for (const line of connectReportLines(groups, report.connectsUnlisted)) this.session.note(line);
  }

  /** The refusal groups of the last run (`srt --suggest`). */
  refusalGroups(): RefusalGroup[] {
    return this.refusals;
  }

  /** The refused loopback connections of the last run (`srt --suggest`). */
  connectGroups(): ConnectGroup[] {
    return this.connects;
  }

  /** After each run: its placeholders go, and its run directory, or (kept for the next command)
   *  what the command left in its TMPDIR and the run's own report and excludes file. */
  private cleanupSync(g: LinuxFacts): void {
    this.placeholders.cleanup();
    if (this.keptRunDir !== g.facts.runDir) return this.reportLeft(g.facts.runDir, removeTree(g.facts.runDir));
    for (const name of ['report', 'git-excludes']) removeFile(join(g.facts.runDir, name));
    let names: string[] = [];
    try { names = readdirSync(g.facts.tmpDir); } catch { /* gone: the next run stops on it */ }
    for (const name of names) this.reportLeft(join(g.facts.tmpDir, name), removeTree(join(g.facts.tmpDir, name)));
  }

  private reportLeft(path: string, left: string | null): void {
    if (!left || this.cleanupReported) return;
    this.cleanupReported = true;
    this.session.out.say(`srt: warning: could not remove ${path} (srt's run directory): ${left}; srt doctor --fix (or the next run) tries again`);
  }

  private removeKept(): void {
    const dir = this.keptRunDir;
    if (!dir) return;
    this.keptRunDir = undefined;
    this.reportLeft(dir, removeTree(dir));
  }

  /** The proxy closes first (it removes its sockets), then the kept run directory goes. */
  override async dispose(): Promise<void> {
    this.gathered.search.watch?.close();
    this.gathered.kept?.close();
    await super.dispose();
    this.removeKept();
  }
}
