// `srt COMMAND`: run one command in a sandbox, then report what was refused (and with --suggest,
// the settings that would have allowed it).

import { fstatSync } from 'node:fs';
import { resolve as resolvePath } from 'node:path';
import { isatty } from 'node:tty';
import { setFlagsFromString } from 'node:v8';
import { debugEnabled, EXIT_USAGE, Fatal, loadReport, printableBlock, type PolicyOptions } from './cli-common.js';
import type { PlatformName } from './platform/backend.js';
import type { Policy } from './policy.js';
import type { CommandSpec, Sandbox } from './sandbox.js';
import type { SettingsReport } from './settings/index.js';
import { say } from './shell.js';

export interface RunOptions extends PolicyOptions {
  command?: string;
  dryRun?: boolean;
  json?: boolean;
  platform?: PlatformName;
  debug?: boolean;
  controlFd?: number;
  log?: string;
  suggest?: boolean;
}

// One argument is run by the shell when it contains whitespace or shell syntax.
const SHELL_SYNTAX = /[\s|&;<>()$`\\"'*?[\]#~={}!]/;

/** What to run: `-c STRING`, the words after `--` (`explicit`), or the operands. */
export function commandSpec(operands: string[], explicit: string[] | undefined, opts: RunOptions): CommandSpec | undefined {
  if (opts.command !== undefined) {
    if (operands.length > 0 || explicit !== undefined) {
      throw new Fatal(['-c takes the whole command as one string; give either -c "COMMAND" or COMMAND ARGS, not both']);
    }
    return { shell: opts.command };
  }
  if (explicit !== undefined) {
    if (explicit.length === 0) throw new Fatal(['no command after --; usage: srt [options] -- COMMAND [ARGS...]'], EXIT_USAGE);
    return { argv: explicit };
  }
  if (operands.length === 0) return undefined;
  if (operands.length === 1 && SHELL_SYNTAX.test(operands[0]!)) return { shell: operands[0]! };
  return { argv: operands };
}

export async function runAction(spec: CommandSpec, opts: RunOptions): Promise<number> {
  if (process.env.SRT_SANDBOX === '1') {
    // Inside, ~/.srt is read-only and new user namespaces are refused: a nested srt could only fail later, less clearly.
    throw new Fatal(['already inside an srt sandbox (SRT_SANDBOX=1): srt does not nest; run the command directly, it is sandboxed already']);
  }
  const debug = debugEnabled(opts);
  const report = await loadReport(opts, debug);
  if (!report.policy.network.strictAllowlist) {
    say('srt: warning: network.strictAllowlist: false has no effect on the command line (srt has no prompt): hosts not in allowedDomains are still refused');
  }
  const { Sandbox, SandboxError } = await import('./sandbox.js');
  if (opts.controlFd !== undefined) await checkControlFd(opts.controlFd, report.policy);
  let sandbox: Sandbox | undefined;
  const sayAfter = afterCommand(() => sandbox);
  let stopControl = () => {};
  const audit = opts.log !== undefined && !opts.dryRun ? await openAuditLog(opts.log, report.policy) : undefined;
  try {
    sandbox = await Sandbox.create({
      policy: report.policy, debug, pinCwd: true, oneCommand: true, dryRun: opts.dryRun === true, onMessage: sayAfter, ...(opts.platform ? { platform: opts.platform } : {}), ...(audit ? { audit: audit.sink } : {}),
    });
    if (opts.dryRun) {
      process.stdout.write(opts.json ? `${JSON.stringify(sandbox.dryRunJson(spec), null, 2)}\n` : printableBlock(sandbox.dryRun(spec)));
      return 0;
    }
    let policy = report.policy;
    if (opts.controlFd !== undefined) stopControl = (await import('./control-fd.js')).followControlFd(opts.controlFd, report, sandbox, (p) => { policy = p; });
    const restoreHeap = await proxyHeap();
    let code: number;
    try {
      code = await sandbox.run(spec);
    } finally {
      restoreHeap();
    }
    await reportRefusals(sandbox, policy, opts.suggest === true, sayAfter);
    return code;
  } catch (err) {
    if (err instanceof SandboxError) throw new Fatal(err.message.split('\n'));
    throw err;
  } finally {
    stopControl();
    await sandbox?.dispose();
    audit?.close();
  }
}

async function checkControlFd(fd: number, policy: Policy): Promise<void> {
  try {
    fstatSync(fd);
  } catch {
    throw new Fatal([`--control-fd ${fd}: not an open file descriptor`]);
  }
  const refused = (await import('./control-fd.js')).controlFdRefusal(fd, policy);
  if (refused) throw new Fatal([refused]);
}

/**
 * srt's lines after the command start in plain text, with the cursor shown, on a line of their
 * own: a command's trailing ESC[8m (conceal), ESC[?25l (hide cursor) or unfinished line would
 * hide them (a tripwire's too). Only on a terminal; once.
 */
function afterCommand(sandbox: () => Sandbox | undefined): (line: string) => void {
  let tidied = false;
  return (line) => {
    const end = sandbox()?.commandEnd();
    if (end && !tidied && isatty(2)) process.stderr.write(`\x1b[0m\x1b[?25h${end.midLine ? '\n' : ''}`);
    tidied ||= end !== undefined;
    say(line);
  };
}

async function openAuditLog(log: string, policy: SettingsReport['policy']): Promise<{ sink: import('./audit.js').AuditSink; close: () => void }> {
  const { auditFile } = await import('./audit.js');
  const path = resolvePath(log);
  let audit: { sink: import('./audit.js').AuditSink; close: () => void };
  try {
    audit = auditFile(path);
  } catch (e) {
    throw new Fatal([`--log ${log}: cannot open it for appending: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`]);
  }
  const { insideWritable, writableRoots } = await import('./platform/writable.js');
  if (insideWritable(path, writableRoots(policy))) say(`srt: warning: --log ${path} is inside a path the command may write: it could change or forge the log; keep the log outside`);
  return audit;
}

/** Each refusal, with what would allow a destination refused for not being listed; with
 *  `suggest`, the settings snippet that would have allowed what was refused. */
async function reportRefusals(sandbox: Sandbox, policy: Policy, suggest: boolean, sayAfter: (line: string) => void): Promise<void> {
  const violations = sandbox.violations();
  let advise: typeof import('./settings/advice.js') | undefined;
  const domains: string[] = [];
  for (const line of violations) {
    sayAfter(line.startsWith('srt: ') ? line : `srt: ${line}`);
    // What would allow it stands next to each destination refused for not being listed.
    const m = /^(?:srt: )?blocked (\S+) — not in (?:the managed )?network\.allowedDomains/.exec(line);
    if (!m) continue;
    advise ??= await import('./settings/advice.js');
    const dest = advise.splitHostPort(m[1]!);
    if (!dest) continue;
    const advice = advise.networkAdvice(policy, dest.host, dest.port);
    sayAfter(`srt: to allow ${m![1]}: ${advice}`);
    // --suggest takes the entry the hint names, only where a user entry allows it (not srt trust,
    // not a managed-only list).
    const entry = /^run with --allow-domain (\S+),/.exec(advice);
    if (entry) domains.push(entry[1]!);
  }
  // A loopback port nothing listened on: the entry that forwards it, where a user entry would.
  for (const g of sandbox.connectGroups()) if (g.allow) domains.push(g.allow);
  if (!suggest) return;
  const { suggestion } = await import('./refusals.js');
  const s = suggestion(sandbox.refusalGroups(), domains, policy.home);
  if (!s) sayAfter('srt: --suggest: nothing was refused that a settings entry of yours would allow');
  else {
    sayAfter('srt: --suggest: this would have allowed what was refused; add it to ~/.srt/settings.json (or pass it with --settings FILE):');
    for (const c of s.commands) process.stderr.write(`${c}\n`);
    process.stderr.write(`${JSON.stringify(s.settings, null, 2)}\n`);
  }
}

/**
 * While the command runs, this process is mostly its proxy, whose garbage is per request: V8
 * would grow the young generation to its maximum and let promoted garbage pile up in the old
 * one, tens of MB of resident memory that buy little speed. Keep the young generation at its
 * start size and the old one close to what is live. Set at run time (a V8 flag on node's command
 * line costs every start its builtins' code cache) and for the CLI only (an embedder's process
 * is its own); the defaults are back before the code cache is written at exit, as V8 stamps the
 * bytecode it serializes with the flags then in force.
 * While a body streams through the proxy in bulk, V8 grows the old generation its own way again:
 * its buffers (off the V8 heap) count against that generation's limit until a scavenge frees
 * them, which V8 does only once young ones reach 32 MB; with the limit at twice what is live,
 * every ~16 MB of them started a full mark-compact of the whole heap.
 */
async function proxyHeap(): Promise<() => void> {
  setFlagsFromString('--semi-space-growth-factor=1');
  setFlagsFromString('--heap-growing-percent=100');
  // Loaded already, with the proxy.
  const { onBulkBodies } = await import('./proxy/bulk.js');
  const stopHearing = onBulkBodies((streaming) => setFlagsFromString(`--heap-growing-percent=${streaming ? 0 : 100}`));
  let restored = false;
  const restore = () => {
    if (restored) return;
    restored = true;
    stopHearing();
    process.off('exit', restore);
    setFlagsFromString('--semi-space-growth-factor=2');
    setFlagsFromString('--heap-growing-percent=0');
  };
  // An exit during the run (a signal's) restores them before the code cache's own exit listener.
  process.prependOnceListener('exit', restore);
  return restore;
}
