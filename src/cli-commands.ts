// The subcommands that read the settings and answer without running anything (config, doctor,
// check, trust) and the standalone proxy. Each loads what it needs when it runs.

import { homedir } from 'node:os';
import { resolve as resolvePath } from 'node:path';
import { debugEnabled, Fatal, loadOptions, loadReport, mergedPolicyOptions, out, printableBlock, type PolicyOptions } from './cli-common.js';
import type { Policy } from './policy.js';
import { printable, say } from './shell.js';

type Parent = PolicyOptions & { debug?: boolean };

/** `srt config`: the merged settings, each value with where it came from. */
export async function configCommand(parent: Parent, opts: PolicyOptions & { json?: boolean }): Promise<void> {
  const report = await loadReport(mergedPolicyOptions(parent, opts), debugEnabled(parent));
  const [{ configJson, configText, describeSource }, { hostCredentialPlan }, { withOverruled }] = await Promise.all([
    import('./settings/report.js'), import('./platform/credentials.js'), import('./check.js')]);
  // What a run would do with credentials: files are read, `source` commands are not run.
  const credentials = await hostCredentialPlan(report.policy);
  // Allow entries a higher deny hides wherever they land are listed as ignored, with that deny.
  const shown = { ...report, policy: withOverruled(report.policy, (s) => describeSource(s, report.policy)) };
  process.stdout.write(opts.json ? `${JSON.stringify(configJson(shown, credentials), null, 2)}\n` : printableBlock(configText(shown, credentials)));
}

/** `srt doctor`: exit 1 when the report has an error. */
export async function doctorCommand(parent: Parent, opts: PolicyOptions & { json?: boolean; fix?: boolean; tools?: boolean }): Promise<number> {
  const { runDoctor, doctorText } = await import('./doctor.js');
  const report = await runDoctor({
    load: loadOptions(mergedPolicyOptions(parent, opts)),
    fix: opts.fix === true,
    tools: opts.tools === true,
  });
  process.stdout.write(opts.json ? `${JSON.stringify(report, null, 2)}\n` : printableBlock(doctorText(report)));
  return report.summary.error > 0 ? 1 : 0;
}

/** `srt check read|write|net TARGET`: exit 0 allowed, 1 refused. */
export async function checkCommand(parent: Parent, kind: string, target: string, opts: PolicyOptions & { json?: boolean }): Promise<number> {
  if (kind !== 'read' && kind !== 'write' && kind !== 'net') throw new Fatal([`check: "${kind}" is not read, write or net`]);
  const report = await loadReport(mergedPolicyOptions(parent, opts), debugEnabled(parent));
  const [check, { describeSource }] = await Promise.all([import('./check.js'), import('./settings/report.js')]);
  let verdict;
  if (kind === 'net') {
    const t = check.parseNetTarget(target);
    if (!t) throw new Fatal([`check net: "${target}" is not HOST, HOST:PORT or [IPv6]:PORT`]);
    verdict = check.checkNet(report.policy, t.host, t.port);
  } else {
    if (target === '' || target.includes('\0')) throw new Fatal([`check ${kind}: give a path`]);
    verdict = check.checkPath(report.policy, kind, resolvePath(target.startsWith('~/') || target === '~' ? `${homedir()}${target.slice(1)}` : target));
  }
  process.stdout.write(opts.json ? `${JSON.stringify(verdict, null, 2)}\n` : printableBlock(check.checkText(verdict, (s) => describeSource(s, report.policy))));
  return verdict.allowed ? 0 : 1;
}

/** `srt trust [FILE] | --list | --revoke FILE`. */
export async function trustCommand(file: string | undefined, opts: { list?: boolean; revoke?: string }): Promise<void> {
  const { SettingsError } = await import('./settings/index.js');
  const [trust, { overruledAllows, overruledEntry }, { describeSource }] = await Promise.all([
    import('./settings/trust.js'), import('./check.js'), import('./settings/report.js')]);
  const overruled = (p: Policy) => overruledAllows(p).map((o) => overruledEntry(o, (s) => describeSource(s, p)));
  const where = { cwd: process.cwd(), home: homedir(), overruled };
  if ([file !== undefined, opts.list === true, opts.revoke !== undefined].filter(Boolean).length > 1) {
    throw new Fatal(['give one of FILE, --list or --revoke FILE']);
  }
  try {
    if (opts.list) {
      const { entries, warning } = trust.listApprovals(where.home);
      if (warning) say(`srt: warning: ${warning}`);
      if (entries.length === 0) out('no approved settings files');
      const label = { approved: 'approved', changed: 'changed since approval (its allow entries do not apply; approve again)', missing: 'missing' };
      for (const e of entries) out(`${e.status.padEnd(8)}  ${e.path}  ${e.status === 'approved' ? `(${e.approvedAt})` : label[e.status]}`);
      return;
    }
    if (opts.revoke !== undefined) {
      const { path, revoked } = trust.revoke(opts.revoke, where);
      out(revoked ? `revoked the approval of ${path}` : `${path} was not approved`);
      return;
    }
    const files = file !== undefined ? [file] : trust.filesApplyingHere(where.cwd, where.home);
    for (const f of trust.approve(files, where)) {
      const n = f.allows.reduce((sum, a) => sum + a.values.length, 0);
      out(`approved ${f.path} (sha256 ${f.sha256.slice(0, 12)}): ${n === 0 ? 'it has no allow entries' : `${n === 1 ? '1 allow entry now applies' : `${n} allow entries now apply`}`}`);
      for (const a of f.allows) out(`  ${a.key}: ${a.values.map(printable).join(', ')}`);
      for (const i of f.ignored) out(`  still ignored: ${i.key}${i.value !== undefined ? ` ${i.value}` : ''} — ${i.reason}`);
    }
  } catch (err) {
    if (err instanceof SettingsError) throw new Fatal(err.lines);
    throw err;
  }
}

/** `srt proxy`: only the filtering proxy, until SIGINT/SIGTERM. */
export async function proxyCommand(parent: Parent, opts: PolicyOptions & { httpPort?: number; socksPort?: number }): Promise<number> {
  const debug = debugEnabled(parent);
  const report = await loadReport(mergedPolicyOptions(parent, opts), debug);
  const { runStandaloneProxy } = await import('./proxy/standalone.js');
  const helper = process.platform === 'linux' ? (await import('./platform/init-helper.js')).findInitHelper() : undefined;
  return runStandaloneProxy({
    ...(helper && 'path' in helper ? { helperPath: helper.path } : {}),
    network: report.policy.network,
    httpPort: opts.httpPort ?? 0,
    socksPort: opts.socksPort ?? 0,
    debug,
    out,
    err: say,
  });
}
