// `srt doctor` (SPEC §8): every check as data, `ok | warn | error` with a one-line fix. Library
// code: nothing here prints or exits; the CLI renders the report. Only `fix` changes anything
// (it removes what killed runs left behind, never a live run's files).

import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { release } from 'node:os';
import { dirname, join } from 'node:path';
import { codeCacheState } from './code-cache.js';
import type { Policy } from './policy.js';
import { sandboxMayChange, writableRoots } from './platform/writable.js';
import { diagnoseBubblewrap, findOnPath, findSystemTool, hasCapSetfcap, sysctl } from './platform/deps.js';
import { resolveLanding } from './platform/landing.js';
import { findInitHelper, supervisorUnavailable } from './platform/init-helper.js';
import { ownFiles } from './platform/self.js';
import { findStale, reapStale } from './platform/state.js';
import { protectionPlan } from './platform/landed.js';
import { scanProtected } from './platform/search.js';
import { MANAGED_DIR } from './profiles/protected.js';
import { landedLines } from './profiles/protected-plan.js';
import { PACKAGE_ROOT } from './paths.js';
import { defaultInjectHosts } from './credentials/inject-hosts.js';
import { isLoopbackAddress } from './proxy/address-guard.js';
import { namedLoopback, parseDomainEntry, ruleMatches } from './proxy/domains.js';
import { forwardedPorts } from './proxy/local-services.js';
import { hostCredentialPlan } from './platform/credentials.js';
import { inspectSettings, type LoadOptions } from './settings/index.js';
import { describeSource } from './settings/report.js';
import { printable } from './shell.js';

export type CheckStatus = 'ok' | 'warn' | 'error';

export interface Check {
  /** Stable identifier, e.g. `bubblewrap`, `settings.files`. */
  id: string;
  title: string;
  status: CheckStatus;
  /** One line: what was found. */
  detail: string;
  /** One line: what to do (warn and error only). */
  fix?: string;
  /** Up to 3 examples (files, paths, entries); `more` counts the rest. */
  items?: string[];
  more?: number;
}

export interface DoctorReport {
  version: 1;
  checks: Check[];
  summary: Record<CheckStatus, number>;
}

export interface DoctorOptions {
  load: LoadOptions;
  /** Remove what killed runs left behind (placeholders, run directories, state files). */
  fix?: boolean;
  /** Also try each installed client through a throwaway sandbox (doctor-tools.ts). */
  tools?: boolean;
}

const MAX_ITEMS = 3;

function listed(all: string[]): Pick<Check, 'items' | 'more'> {
  const out: Pick<Check, 'items' | 'more'> = { items: all.slice(0, MAX_ITEMS) };
  if (all.length > MAX_ITEMS) out.more = all.length - MAX_ITEMS;
  return out;
}

/** `edit /a/settings.json lines 3, 4 and 9 (…)`: where every problem is, file by file. */
function settingsFix(problems: readonly string[]): string {
  const located = /^(.+?):(\d+)(?::\d+)?: /;
  const lines = new Map<string, Set<number>>();
  for (const p of problems) {
    const m = located.exec(p);
    if (m) lines.set(m[1]!, (lines.get(m[1]!) ?? new Set()).add(Number(m[2])));
  }
  const and = (xs: string[]) => (xs.length > 1 ? `${xs.slice(0, -1).join(', ')} and ${xs[xs.length - 1]}` : xs.join(''));
  const at = [...lines].map(([file, ns]) => `${file} line${ns.size > 1 ? 's' : ''} ${and([...ns].sort((x, y) => x - y).map(String))}`);
  if (at.length === 0) return 'fix each problem above (srt config lists each)';
  const others = problems.some((p) => !located.test(p)) ? ', and the problems above that name no line' : '';
  return `edit ${and(at)}${others} (srt config lists each)`;
}

function run(file: string, args: string[]): Promise<{ ok: boolean; out: string }> {
  return new Promise((resolve) => {
    execFile(file, args, { timeout: 10_000 }, (err, stdout, stderr) => resolve({ ok: !err, out: `${stdout}${stderr}`.trim() }));
  });
}

/** macOS: sandbox-exec is there and can apply a profile (it cannot inside another sandbox). */
async function sandboxExecCheck(): Promise<Check> {
  const sandboxExec = '/usr/bin/sandbox-exec';
  if (!existsSync(sandboxExec)) return { id: 'sandbox-exec', title: 'sandbox-exec', status: 'error', detail: `${sandboxExec} is missing`, fix: 'srt needs the sandbox-exec of macOS' };
  const r = await run(sandboxExec, ['-p', '(version 1)(allow default)', '/usr/bin/true']);
  return r.ok
    ? { id: 'sandbox-exec', title: 'sandbox-exec', status: 'ok', detail: `${sandboxExec} applies a profile` }
    : { id: 'sandbox-exec', title: 'sandbox-exec', status: 'error', detail: `${sandboxExec} cannot apply a profile here (${r.out || 'no output'})`, fix: 'run srt outside any other sandbox (Seatbelt profiles do not nest)' };
}

/** What `srt-init --landlock-abi` said: the ABI, 0 (not in the kernel) or -1 (not enabled). */
export function landlockCheck(out: string): Check {
  const abi = /^-?\d+$/.test(out) ? Number(out) : NaN;
  const title = 'Landlock';
  const weak = 'writes are confined by the mounts alone, which do not stop opening a host FIFO or device on a read-only path for writing';
  if (abi >= 2) return { id: 'landlock', title, status: 'ok', detail: `ABI ${abi}: the command may write only beneath its writable paths` };
  if (abi === 1) return { id: 'landlock', title, status: 'warn', detail: `ABI 1 is too old for srt (it needs ABI 2): ${weak}`, fix: 'Linux 5.19 or later' };
  if (abi === 0) return { id: 'landlock', title, status: 'warn', detail: `not in this kernel: ${weak}`, fix: 'Linux 5.19 or later, built with CONFIG_SECURITY_LANDLOCK' };
  if (abi === -1) return { id: 'landlock', title, status: 'warn', detail: `built in but not enabled: ${weak}`, fix: 'add landlock to the lsm= kernel boot parameter (see /sys/kernel/security/lsm)' };
  return { id: 'landlock', title, status: 'warn', detail: `srt-init could not tell (${out || 'no output'})`, fix: 'rebuild it: npm run build' };
}

async function dependencyChecks(): Promise<Check[]> {
  const checks: Check[] = [];
  const linux = process.platform === 'linux';
  const mac = process.platform === 'darwin';
  checks.push({
    id: 'platform', title: 'platform',
    status: linux || mac ? 'ok' : 'error',
    detail: `${process.platform} ${process.arch}, kernel ${release()}`,
    ...(linux || mac ? {} : { fix: 'srt sandboxes on Linux and macOS only' }),
  });
  if (mac) checks.push(await sandboxExecCheck());
  if (!linux) return checks;

  const bwrap = findSystemTool('bwrap');
  if (!bwrap) {
    checks.push({ id: 'bubblewrap', title: 'bubblewrap', status: 'error', detail: 'not found in /usr/local/bin, /usr/bin, /bin or sbin', fix: 'apt-get install bubblewrap (Fedora: dnf install bubblewrap)' });
  } else {
    const v = await run(bwrap, ['--version']);
    const m = /(\d+)\.(\d+)(?:\.(\d+))?/.exec(v.out);
    const old = m !== null && (Number(m[1]) === 0 && Number(m[2]) < 5);
    checks.push({
      id: 'bubblewrap', title: 'bubblewrap',
      status: !v.ok || !m ? 'error' : old ? 'warn' : 'ok',
      detail: `${bwrap} ${m ? m[0] : `(version unknown: ${v.out || 'no output'})`}`,
      ...(!v.ok || !m ? { fix: 'reinstall bubblewrap' } : old ? { fix: 'bubblewrap 0.5 or newer is recommended' } : {}),
    });
  }

  const rg = findSystemTool('rg');
  const rgVersion = rg ? /ripgrep (\S+)/.exec((await run(rg, ['--version'])).out)?.[1] : undefined;
  checks.push(rg
    ? { id: 'ripgrep', title: 'ripgrep', status: 'ok', detail: `${rg} ${rgVersion ?? ''}`.trim() }
    : { id: 'ripgrep', title: 'ripgrep', status: 'error', detail: 'not found in the system directories', fix: 'apt-get install ripgrep (srt finds protected paths with it)' });

  const helper = findInitHelper();
  if ('error' in helper) {
    checks.push({ id: 'srt-init', title: 'srt-init (the sandbox helper)', status: 'error', detail: helper.error, fix: 'npm run build (needs gcc and the C library headers)' });
  } else {
    const v = await run(helper.path, ['--version']);
    checks.push(v.ok && /^srt-init \d+/.test(v.out)
      ? { id: 'srt-init', title: 'srt-init (the sandbox helper)', status: 'ok', detail: `${helper.path} (${helper.arch}), runs` }
      : { id: 'srt-init', title: 'srt-init (the sandbox helper)', status: 'error', detail: `${helper.path} does not run: ${v.out || 'no output'}`, fix: 'rebuild it: npm run build' });
    const noSupervisor = supervisorUnavailable();
    checks.push(noSupervisor === null
      ? { id: 'supervisor', title: 'protected-path supervisor', status: 'ok', detail: 'protected names are refused at any depth, with no placeholder on the host' }
      : { id: 'supervisor', title: 'protected-path supervisor', status: 'warn', detail: `not available (${noSupervisor}): placeholders instead, covering only what the search finds`, fix: 'Linux 5.19 or later, and kernel.yama.ptrace_scope below 2' });
    checks.push(landlockCheck((await run(helper.path, ['--landlock-abi'])).out));
  }

  if (bwrap) {
    const why = await diagnoseBubblewrap(bwrap, { weakerNested: false });
    checks.push(why === null
      ? { id: 'user-namespaces', title: 'user namespaces', status: 'ok', detail: 'a test sandbox started' }
      : { id: 'user-namespaces', title: 'user namespaces', status: 'error', detail: why.split('; ')[0]!, fix: why.split('; ').slice(1).join('; ') || 'see the message above' });
  }

  const restricted = sysctl('kernel.apparmor_restrict_unprivileged_userns') === '1';
  const isRoot = process.geteuid?.() === 0;
  checks.push({
    id: 'apparmor', title: 'AppArmor',
    status: 'ok',
    detail: !restricted ? 'no restriction on unprivileged user namespaces'
      : isRoot ? 'unprivileged user namespaces are restricted (not an issue for root)'
        : 'unprivileged user namespaces are restricted; the test sandbox above tells whether bwrap is allowed',
  });
  if (isRoot) {
    const cap = hasCapSetfcap();
    checks.push(cap
      ? { id: 'root', title: 'root', status: 'ok', detail: 'running as root with CAP_SETFCAP (uid 0 is mapped into the sandbox with no capabilities)' }
      : { id: 'root', title: 'root', status: 'error', detail: 'running as root without CAP_SETFCAP: bubblewrap cannot map uid 0', fix: 'run srt as an unprivileged user, or give the container CAP_SETFCAP' });
  }
  return checks;
}


function settingsChecks(load: LoadOptions): { checks: Check[]; policy?: Policy } {
  const inspection = inspectSettings(load);
  const checks: Check[] = [];
  const broken = inspection.files.filter((f) => f.errors.length > 0);
  const problems = [...inspection.errors, ...broken.flatMap((f) => f.errors)];
  checks.push({
    id: 'settings.files', title: 'settings files',
    status: problems.length ? 'error' : 'ok',
    detail: problems.length
      ? `${problems.length} problem${problems.length === 1 ? '' : 's'} in ${broken.length + (inspection.errors.length ? 1 : 0)} place(s); srt refuses to run until they are fixed`
      : inspection.files.length === 0 ? 'no settings files: the built-in defaults apply'
        : `${inspection.files.length} file${inspection.files.length === 1 ? '' : 's'} found, all valid`,
    // The fix names the line of every problem; the items are the first ones, as in every check.
    ...(problems.length ? { fix: settingsFix(problems), ...listed(problems) } : listed(inspection.files.map((f) => `${f.scope} ${f.path}`))),
  });
  const report = inspection.report;
  if (!report) return { checks };
  const p = report.policy;

  const unapproved = inspection.files.filter((f) => f.approval === 'unapproved' && p.ignored.some((i) => i.source.file === f.path && i.reason.startsWith('not approved')));
  checks.push(unapproved.length
    ? { id: 'settings.approval', title: 'repository settings', status: 'warn', detail: `${unapproved.length} file(s) whose allow entries are held back until you approve them`, fix: `review, then: srt trust ${unapproved[0]!.path}`, ...listed(unapproved.map((f) => f.path)) }
    : { id: 'settings.approval', title: 'repository settings', status: 'ok', detail: 'nothing held back for approval' });

  const ignored = p.ignored.filter((i) => !i.reason.startsWith('not approved'));
  checks.push(ignored.length
    ? { id: 'settings.ignored', title: 'ignored settings', status: 'warn', detail: `${ignored.length} entr${ignored.length === 1 ? 'y is' : 'ies are'} ignored by the trust rules`, fix: 'remove them, or move them to a scope allowed to set them (srt config lists why)', ...listed(ignored.map((i) => `${i.key}${i.value !== undefined ? ` ${i.value}` : ''} (${describeSource(i.source, p)}): ${i.reason}`)) }
    : { id: 'settings.ignored', title: 'ignored settings', status: 'ok', detail: 'no entry ignored' });

  // Spellings that parse, but not as their author probably meant.
  const unreliable: string[] = [];
  for (const f of inspection.files) {
    for (const d of [...p.network.allowedDomains, ...p.network.deniedDomains]) {
      if (d.source.file !== f.path) continue;
      const list = p.network.allowedDomains.includes(d) ? 'allow' : 'deny';
      const parsed = parseDomainEntry(d.rule.raw, list);
      if (parsed.ok && parsed.warning) unreliable.push(`${d.rule.raw} (${describeSource(d.source, p)}): ${parsed.warning}`);
    }
  }
  checks.push(unreliable.length
    ? { id: 'domains.spelling', title: 'domain spellings', status: 'warn', detail: `${unreliable.length} network domain entr${unreliable.length === 1 ? 'y has' : 'ies have'} unreliable spellings`, fix: 'bracket IPv6 addresses ([::1]:8080); avoid * in allow lists', ...listed([...new Set(unreliable)]) }
    : { id: 'domains.spelling', title: 'domain spellings', status: 'ok', detail: 'every domain entry is unambiguous' });

  if (process.platform === 'linux' && p.allowNestedUserNamespaces && !p.filesystem.disabled) {
    checks.push({ id: 'nested-namespaces', title: 'nested sandboxes', status: 'warn', detail: 'allowNestedUserNamespaces turns Landlock and the protected-path supervisor off for every run', fix: 'unset it unless the command must build a sandbox of its own (containers, bwrap)' });
  }

  // srt, or the node that runs it, inside a path the sandbox may write: the next srt runs what is
  // there outside any sandbox. Linux runs keep srt's own files read-only (self.ts); a `node` on
  // PATH is not srt's (the launcher never runs it) but other tools do.
  const roots = writableRoots(p);
  const nodeOnPath = findOnPath('node');
  const mine = [
    ...ownFiles(),
    ...(nodeOnPath ? [{ what: '`node` on PATH', path: resolveLanding(nodeOnPath).real }] : []),
  ];
  const exposed = mine.filter((m) => sandboxMayChange(m.path, roots));
  const kept = process.platform === 'linux' ? ' (srt keeps its own read-only inside the sandbox)' : '';
  checks.push(exposed.length
    ? { id: 'srt.location', title: 'srt location', status: 'warn', detail: `${[...new Set(exposed.map((e) => e.what))].join(', ')} inside a path this policy lets the command write${kept}`, fix: 'install srt and node outside the project (e.g. npm install -g), or run from elsewhere', ...listed([...new Set(exposed.map((e) => e.path))]) }
    : { id: 'srt.location', title: 'srt location', status: 'ok', detail: `srt (${PACKAGE_ROOT}) and node (${dirname(process.execPath)}) are outside every writable path` });
  return { checks, policy: p };
}

/**
 * What a run would protect for what it is or where it lands (SPEC §3): link targets, git include
 * targets, bare repositories, home configuration linked into a writable path. The run's own search.
 */
async function protectionCheck(policy: Policy): Promise<Check> {
  const title = 'protected where they land';
  if (policy.filesystem.disabled) return { id: 'protected.landing', title, status: 'ok', detail: 'nothing to protect: filesystem isolation is off (filesystem.disabled)' };
  const roots = writableRoots(policy);
  let scanned;
  try {
    scanned = await scanProtected(roots.map((root) => ({ root })), policy.mandatoryDenySearchDepth, policy.home);
  } catch (e) {
    return { id: 'protected.landing', title, status: 'warn', detail: `the protected-path search did not finish: ${(e as Error).message}`, fix: 'a run would stop the same way; see the message' };
  }
  const landed = landedLines(protectionPlan(policy, scanned, roots, MANAGED_DIR).plan.targets, (t) => resolveLanding(t.path).real);
  if (landed.length === 0) return { id: 'protected.landing', title, status: 'ok', detail: 'no symlink, git include or bare repository leads into a writable path' };
  return {
    id: 'protected.landing', title, status: 'ok',
    detail: `${landed.length} place(s) in writable paths kept read-only for what they are or for what leads there (links, git includes, bare repositories); srt --dry-run lists them all`,
    ...listed(landed),
  };
}

/** srt's bytecode cache (src/code-cache.ts): unused, every start compiles srt from source. */
function codeCacheCheck(home: string): Check {
  const title = 'code cache';
  const c = codeCacheState(home);
  if (c.used) return { id: 'code-cache', title, status: 'ok', detail: `${c.entries} chunk(s) of srt's bytecode kept in ${join(home, '.srt', 'cache', 'code')}` };
  return {
    id: 'code-cache', title, status: 'warn',
    detail: `not used (${c.path ? `${c.path}: ` : ''}${c.why}): every srt start compiles srt from source (~20 ms)`,
    fix: c.path ? `rm -r ${join(home, '.srt', 'cache')} (srt makes it anew, private to you)` : 'unset SRT_NO_CODE_CACHE',
  };
}

function staleCheck(home: string, fix: boolean): Check {
  const before = findStale(home);
  const items = [...before.placeholders.map((p) => p.path), ...before.runDirs, ...before.watched];
  if (items.length === 0) return { id: 'stale', title: 'left by killed runs', status: 'ok', detail: 'nothing left behind by a killed run' };
  if (fix) {
    reapStale(home);
    const after = findStale(home);
    const left = [...after.placeholders.map((p) => p.path), ...after.runDirs, ...after.watched];
    return left.length
      ? { id: 'stale', title: 'left by killed runs', status: 'warn', detail: `removed ${items.length - left.length}, ${left.length} could not be removed`, fix: 'remove them by hand', ...listed(left) }
      : { id: 'stale', title: 'left by killed runs', status: 'ok', detail: `removed ${before.placeholders.length} placeholder(s) and ${before.runDirs.length} run director${before.runDirs.length === 1 ? 'y' : 'ies'} left by killed runs${before.watched.length ? `, and set aside ${before.watched.length} protected path(s) their sandboxes created` : ''}` };
  }
  return {
    id: 'stale', title: 'left by killed runs', status: 'warn',
    detail: `${before.placeholders.length} stale sandbox mask file(s) and ${before.runDirs.length} run director${before.runDirs.length === 1 ? 'y' : 'ies'} left by a killed session` +
      (before.watched.length ? `, and ${before.watched.length} protected path(s) its sandbox created (e.g. a .git/commondir)` : ''),
    fix: 'srt doctor --fix removes them (never a live run\'s)',
    ...listed(items),
  };
}

/** The credential plan a run would follow (files read, `source` commands not run), as checks. */
/**
 * Inject hosts on the host's loopback (`localhost:9443`, a loopback literal): clients that keep
 * loopback direct (NO_PROXY) reach them through a forwarded port, where srt terminates TLS and
 * injects like anywhere else (SPEC §7). What keeps that from happening, per mask entry and host.
 */
export function loopbackInjectProblems(policy: Policy, platform: NodeJS.Platform = process.platform, root = process.getuid?.() === 0): string[] {
  const { network } = policy;
  const tls = network.tlsTerminate;
  if (!tls && !policy.credentials.allowPlaintextInject) return []; // credentials.masking says why nothing is injected
  const forwards = forwardedPorts(network).filter((f) => f.port >= 1024 || root);
  const problems: string[] = [];
  const entries = [...policy.credentials.envVars, ...policy.credentials.files].filter((e) => e.mode === 'mask');
  for (const e of entries) {
    const label = 'name' in e ? e.name : e.path;
    for (const rule of e.injectHosts ?? defaultInjectHosts(policy)) {
      const loopback = rule.kind === 'host' && (namedLoopback(rule.host) !== undefined || (rule.ip !== undefined && isLoopbackAddress(rule.host)));
      if (!loopback) continue;
      const where = `${label} → ${rule.text}`;
      if (platform === 'darwin') {
        problems.push(`${where}: on macOS a client that keeps loopback direct (NO_PROXY) reaches it without srt: no injection, no tripwire (use a name for it with its loopback literal allowed, https://name:PORT through the proxy)`);
      } else if (tls && tls.excludeDomains.some((x) => x.kind === rule.kind && x.host === rule.host && (x.port === undefined || x.port === rule.port))) {
        problems.push(`${where}: in network.tlsTerminate.excludeDomains, so its TLS is never terminated: nothing is injected there`);
      } else if (!forwards.some((f) => ruleMatches(rule, f.host, f.port) || f.listen.some((a) => ruleMatches(rule, a, f.port)))) {
        problems.push(`${where}: no forwarded port serves it (allow it with its port, e.g. "localhost:9443", as user, CLI or managed settings${root ? '' : '; ports below 1024 only when srt runs as root'}), so a client that keeps loopback direct (NO_PROXY) cannot reach it`);
      }
    }
  }
  return [...new Set(problems)];
}

async function credentialChecks(policy: Policy): Promise<Check[]> {
  const plan = await hostCredentialPlan(policy);
  const hosts = plan.warnings.filter((w) => w.includes('injectHosts entry') || /network\.allowedDomains (is empty|names no single host)/.test(w));
  // Worst first, so the three lines named never hide one: errors, then a real value the command
  // sees (the plan puts those first among its warnings), then the rest.
  const masking = [...plan.errors, ...plan.warnings.filter((w) => !hosts.includes(w))];
  const loopback = loopbackInjectProblems(policy);
  const unset = plan.unsetMasked;
  const any = [...policy.credentials.envVars, ...policy.credentials.files].some((e) => e.injectHosts);
  return [
    hosts.length
      ? { id: 'credentials.injectHosts', title: 'credential injectHosts', status: 'warn', detail: `${hosts.length} injectHosts entr${hosts.length === 1 ? 'y' : 'ies'} can never match a destination`, fix: 'name hosts that network.allowedDomains allows', ...listed(hosts) }
      : { id: 'credentials.injectHosts', title: 'credential injectHosts', status: 'ok', detail: any ? 'every injectHosts entry can match' : 'no injectHosts entries' },
    masking.length
      ? { id: 'credentials.masking', title: 'credential masking', status: plan.errors.length ? 'error' : 'warn', detail: `${masking.length} problem(s) with masked credentials`, fix: 'see each line', ...listed(masking) }
      : { id: 'credentials.masking', title: 'credential masking', status: 'ok', detail: 'no problem found' },
    unset.length
      ? { id: 'credentials.unset', title: 'masked variables', status: 'warn', detail: `${unset.length} masked variable${unset.length === 1 ? ' is' : 's are'} not set here, so nothing is masked for ${unset.length === 1 ? 'it' : 'them'}`, fix: 'check the names (a typo masks nothing), or set them before srt runs', ...listed(unset) }
      : { id: 'credentials.unset', title: 'masked variables', status: 'ok', detail: 'every masked variable is set (or none is masked)' },
    loopback.length
      ? { id: 'credentials.loopback', title: 'loopback inject hosts', status: 'warn', detail: `${loopback.length} inject host(s) on the host's loopback get no injection from clients that send loopback direct`, fix: 'see each line', ...listed(loopback) }
      : { id: 'credentials.loopback', title: 'loopback inject hosts', status: 'ok', detail: 'every inject host on the loopback is a forwarded port whose TLS srt terminates (or there is none)' },
  ];
}

export async function runDoctor(opts: DoctorOptions): Promise<DoctorReport> {
  const checks = await dependencyChecks();
  const settings = settingsChecks(opts.load);
  checks.push(...settings.checks);
  if (settings.policy) {
    // After the domain checks, in the order the report always had.
    const at = checks.findIndex((c) => c.id === 'srt.location');
    checks.splice(at === -1 ? checks.length : at, 0, ...(await credentialChecks(settings.policy)));
    checks.push(await protectionCheck(settings.policy));
  }
  checks.push(staleCheck(opts.load.home, opts.fix === true), codeCacheCheck(opts.load.home));
  if (opts.tools) {
    const cannot = checks.find((c) => c.status === 'error');
    if (cannot || !settings.policy) {
      checks.push({ id: 'tools', title: 'tools', status: 'error', detail: `not tried: ${cannot ? `${cannot.title}: ${cannot.detail}` : 'the settings do not load'}`, fix: 'fix the errors above first' });
    } else {
      const { toolChecks } = await import('./doctor-tools.js');
      checks.push(...await toolChecks(opts.load, settings.policy.network.tlsTerminate !== undefined));
    }
  }
  const summary: Record<CheckStatus, number> = { ok: 0, warn: 0, error: 0 };
  for (const c of checks) summary[c.status]++;
  return { version: 1, checks, summary };
}

/** The human form: a line per check (with its fix and examples), then a summary line. */
export function doctorText(report: DoctorReport): string {
  const lines: string[] = [];
  for (const c of report.checks) {
    lines.push(`${c.status.padEnd(5)} ${c.title}: ${printable(c.detail)}`);
    for (const item of c.items ?? []) lines.push(`        ${printable(item)}`);
    if (c.more) lines.push(`        … and ${c.more} more`);
    if (c.fix && c.status !== 'ok') lines.push(`      fix: ${printable(c.fix)}`);
  }
  const { ok, warn, error } = report.summary;
  lines.push('', `srt doctor: ${ok} ok, ${warn} warning${warn === 1 ? '' : 's'}, ${error} error${error === 1 ? '' : 's'}`);
  return lines.join('\n') + '\n';
}
