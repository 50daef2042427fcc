// The `srt` command line: parse arguments, load the policy, hand the command to the Sandbox.
// Thin on purpose; heavy modules (settings schema, sandbox, proxy) are imported only by the
// action that needs them so `srt --help` stays fast.

import { Argument, Command, CommanderError, InvalidArgumentError, type Option } from 'commander';
import { createRequire } from 'node:module';
import { fstatSync } from 'node:fs';
import { homedir } from 'node:os';
import { isatty } from 'node:tty';
import { setFlagsFromString } from 'node:v8';
import { resolve as resolvePath } from 'node:path';
import { PACKAGE_JSON } from './paths.js';
import { PRESET_NAMES, PRESETS } from './settings/presets.js';
import type { Shell } from './cli-docs.js';
import { leaveTerminalModes } from './platform/terminal.js';
import { printable, say } from './shell.js';
import type { PlatformName } from './platform/backend.js';
import type { CommandSpec, Sandbox as SandboxType } from './sandbox.js';
import type { LoadOptions, SettingsReport } from './settings/index.js';
import type { Policy } from './policy.js';

const EXIT_SRT_FAILURE = 125;
/** No command and nothing else to do (`srt` alone, `srt --`, `srt help NOSUCH`): a usage error, not a failed run. */
const EXIT_USAGE = 2;

/** One line of output on stdout, made printable (it may quote settings and file names). */
function out(line: string): void {
  process.stdout.write(`${printable(line)}\n`);
}

/** A block of text srt built (config, doctor, dry run): each line made printable. */
function printableBlock(text: string): string {
  return text.replace(/\n$/, '').split('\n').map(printable).join('\n') + '\n';
}

interface PolicyOptions {
  settings?: string[];
  allowDomain?: string[];
  allowWrite?: string[];
  denyRead?: string[];
  with?: string[];
  expose?: string[];
}

const POLICY_KEYS = ['settings', 'allowDomain', 'allowWrite', 'denyRead', 'with', 'expose'] as const;

/** A subcommand's policy options after the program's (`srt --with npm config --allow-write x`). */
function mergedPolicyOptions(parent: PolicyOptions, own: PolicyOptions): PolicyOptions {
  return Object.fromEntries(POLICY_KEYS.map((k) => [k, [...(parent[k] ?? []), ...(own[k] ?? [])]]));
}

interface RunOptions extends PolicyOptions {
  command?: string;
  dryRun?: boolean;
  json?: boolean;
  platform?: PlatformName;
  debug?: boolean;
  controlFd?: number;
  log?: string;
  suggest?: boolean;
}

/** Thrown to stop with `srt: MESSAGE` lines on stderr and exit 125 (or `exit`: 2 for usage). */
class Fatal extends Error {
  constructor(readonly lines: string[], readonly exit = EXIT_SRT_FAILURE) {
    super(lines.join('\n'));
  }
}

const SHORT_USAGE = 'usage: srt [options] [--] COMMAND [ARGS...]; srt --help for options and subcommands';

const collect = (value: string, previous: string[] | undefined): string[] => [...(previous ?? []), value];

function parseFd(value: string): number {
  if (!/^\d+$/.test(value) || Number(value) < 3 || !Number.isSafeInteger(Number(value))) {
    throw new InvalidArgumentError('must be a file descriptor number of 3 or more (0-2 are stdio)');
  }
  return Number(value);
}

function parsePlatform(value: string): PlatformName {
  if (value === 'linux' || value === 'macos') return value;
  throw new InvalidArgumentError('must be linux or macos');
}

function collectPreset(value: string, previous: string[] | undefined): string[] {
  if (!Object.hasOwn(PRESETS, value)) throw new InvalidArgumentError(`no preset "${value}"; one of: ${PRESET_NAMES.join(', ')} (srt help presets)`);
  return collect(value, previous);
}

function parsePort(value: string): number {
  if (!/^\d{1,5}$/.test(value) || Number(value) > 65535) throw new InvalidArgumentError('must be a port number (0-65535; 0 = any free port)');
  return Number(value);
}

function addPolicyOptions(cmd: Command): Command {
  return cmd
    .option('-s, --settings <file>', 'also read this settings file (repeatable; CLI scope)', collect)
    .option('--allow-domain <domain>', 'allow network access to DOMAIN, e.g. github.com or *.npmjs.org (repeatable)', collect)
    .option('--allow-write <path>', 'allow writing under PATH (repeatable)', collect)
    .option('--deny-read <path>', 'hide PATH from the command (repeatable)', collect)
    .option('--with <tool>', `add what TOOL needs: its registries and its cache directory (repeatable; srt help presets): ${PRESET_NAMES.join(', ')}`, collectPreset)
    .option('--expose <port>', "let the host's localhost:PORT reach a server the command starts on PORT (repeatable; HOSTPORT:PORT, or [::1]:HOSTPORT:PORT for one address; network.exposePorts)", collect);
}

// One argument is run by the shell when it contains whitespace or shell syntax.
const SHELL_SYNTAX = /[\s|&;<>()$`\\"'*?[\]#~={}!]/;

function debugEnabled(opts: { debug?: boolean }): boolean {
  return opts.debug === true || process.env.SRT_DEBUG === '1';
}

function loadOptions(opts: PolicyOptions): LoadOptions {
  return {
    cwd: process.cwd(),
    home: homedir(),
    settingsFiles: opts.settings ?? [],
    flags: { allowDomain: opts.allowDomain ?? [], allowWrite: opts.allowWrite ?? [], denyRead: opts.denyRead ?? [], with: opts.with ?? [], expose: opts.expose ?? [] },
  };
}

async function loadReport(opts: PolicyOptions, debug: boolean): Promise<SettingsReport> {
  const { loadSettingsReport, SettingsError } = await import('./settings/index.js');
  let report: SettingsReport;
  try {
    report = loadSettingsReport(loadOptions(opts));
  } catch (err) {
    if (err instanceof SettingsError) throw new Fatal(err.lines);
    throw err;
  }
  if (debug) {
    for (const f of report.files) say(`srt[debug]: settings: ${f.scope} ${f.path}`);
  }
  for (const w of report.policy.warnings) say(`srt: warning: ${w}`);
  for (const n of report.policy.notices ?? []) say(`srt: ${n}`);
  return report;
}

function commandSpec(operands: string[], explicit: string[] | undefined, opts: RunOptions): CommandSpec | undefined {
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

async function runAction(spec: CommandSpec, opts: RunOptions): Promise<number> {
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
  if (opts.controlFd !== undefined) {
    try {
      fstatSync(opts.controlFd);
    } catch {
      throw new Fatal([`--control-fd ${opts.controlFd}: not an open file descriptor`]);
    }
    const refused = (await import('./control-fd.js')).controlFdRefusal(opts.controlFd, report.policy);
    if (refused) throw new Fatal([refused]);
  }
  let sandbox: SandboxType | undefined;
  // srt's lines after the command start in plain text, with the cursor shown, on a line of their
  // own: a command's trailing ESC[8m (conceal), ESC[?25l (hide cursor) or unfinished line would
  // hide them (a tripwire's too). Only on a terminal; once.
  let tidied = false;
  const sayAfter = (line: string) => {
    const end = sandbox?.commandEnd();
    if (end && !tidied && isatty(2)) process.stderr.write(`\x1b[0m\x1b[?25h${end.midLine ? '\n' : ''}`);
    tidied ||= end !== undefined;
    say(line);
  };
  let stopControl = () => {};
  let audit: { sink: import('./audit.js').AuditSink; close: () => void } | undefined;
  if (opts.log !== undefined && !opts.dryRun) {
    const { auditFile } = await import('./audit.js');
    const path = resolvePath(opts.log);
    try {
      audit = auditFile(path);
    } catch (e) {
      throw new Fatal([`--log ${opts.log}: cannot open it for appending: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`]);
    }
    const { insideWritable, writableRoots } = await import('./platform/writable.js');
    if (insideWritable(path, writableRoots(report.policy))) say(`srt: warning: --log ${path} is inside a path the command may write: it could change or forge the log; keep the log outside`);
  }
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
    const restoreHeap = proxyHeap();
    let code: number;
    try {
      code = await sandbox.run(spec);
    } finally {
      restoreHeap();
    }
    const violations = sandbox.violations();
    const { networkAdvice, splitHostPort } = await import('./settings/advice.js');
    const domains: string[] = [];
    for (const line of violations) {
      sayAfter(line.startsWith('srt: ') ? line : `srt: ${line}`);
      // What would allow it stands next to each destination refused for not being listed.
      const m = /^(?:srt: )?blocked (\S+) — not in (?:the managed )?network\.allowedDomains/.exec(line);
      const dest = m ? splitHostPort(m[1]!) : null;
      if (!dest) continue;
      const advice = networkAdvice(policy, dest.host, dest.port);
      sayAfter(`srt: to allow ${m![1]}: ${advice}`);
      // --suggest takes the entry the hint names, only where a user entry allows it (not srt trust,
      // not a managed-only list).
      const entry = /^run with --allow-domain (\S+),/.exec(advice);
      if (entry) domains.push(entry[1]!);
    }
    // A loopback port nothing listened on: the entry that forwards it, where a user entry would.
    for (const g of sandbox.connectGroups()) if (g.allow) domains.push(g.allow);
    if (opts.suggest) {
      const { suggestion } = await import('./refusals.js');
      const s = suggestion(sandbox.refusalGroups(), domains, policy.home);
      if (!s) sayAfter('srt: --suggest: nothing was refused that a settings entry of yours would allow');
      else {
        sayAfter('srt: --suggest: this would have allowed what was refused; add it to ~/.srt/settings.json (or pass it with --settings FILE):');
        for (const c of s.commands) process.stderr.write(`${c}\n`);
        process.stderr.write(`${JSON.stringify(s.settings, null, 2)}\n`);
      }
    }
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

/**
 * While the command runs, this process is mostly its proxy, whose garbage is per request: V8
 * would grow the young generation to its maximum and let promoted garbage pile up in the old
 * one, tens of MB of resident memory that buy little speed. Keep the young generation at its
 * start size and the old one close to what is live. Set at run time (a V8 flag on node's command
 * line costs every start its builtins' code cache) and for the CLI only (an embedder's process
 * is its own); the defaults are back before the code cache is written at exit, as V8 stamps the
 * bytecode it serializes with the flags then in force.
 */
function proxyHeap(): () => void {
  setFlagsFromString('--semi-space-growth-factor=1');
  setFlagsFromString('--heap-growing-percent=100');
  let restored = false;
  const restore = () => {
    if (restored) return;
    restored = true;
    process.off('exit', restore);
    setFlagsFromString('--semi-space-growth-factor=2');
    setFlagsFromString('--heap-growing-percent=0');
  };
  // An exit during the run (a signal's) restores them before the code cache's own exit listener.
  process.prependOnceListener('exit', restore);
  return restore;
}

/** Split `[srt options] -- COMMAND...` before commander sees it, so `srt -- config` runs a
 *  command named config instead of the subcommand. Null when there is no such `--`. */
function splitAtDoubleDash(args: string[], options: readonly Option[]): { head: string[]; tail: string[] } | null {
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === '--') return { head: args.slice(0, i), tail: args.slice(i + 1) };
    if (!arg.startsWith('-') || arg === '-') return null; // the command (or a subcommand) starts here
    const name = arg.startsWith('--') ? arg.split('=')[0] : arg.slice(0, 2);
    const option = options.find((o) => o.long === name || o.short === name);
    const inlineValue = arg.startsWith('--') ? arg.includes('=') : arg.length > 2;
    if (option && (option.required || option.optional) && !inlineValue) i++;
  }
  return null;
}

// The --help epilogue, in parts the man page uses too (src/cli-docs.ts).
const HELP_EXAMPLES = `  srt -- npm test                       run npm test in the sandbox (no shell)
  srt npx -y some-mcp-server            same without --: options after the command are its own
  srt "curl -s https://example.com | head"   one string with shell syntax runs with bash -c
  srt -c 'make && make check'           explicit shell command
  srt --allow-domain github.com -- git fetch
  srt --dry-run -- ls                   print the sandbox plan without running anything
  srt --dry-run --platform macos -- ls  print the Seatbelt profile macOS would run it with (on any platform)
  srt --with npm -- npm ci              npm's registry and cache (srt help presets lists the toolchains)
  srt config                            show the merged settings and where each value comes from
  srt trust                             approve this repository's .srt/settings.json (its allow entries then apply)
  srt -- config                         run a program named "config"`;

const HELP_SETTINGS = `Settings are read from /etc/srt/managed-settings.json (+ .d/*.json), ~/.srt/settings.json,
~/.srt-settings.json, <repo>/.srt/settings.json, <repo>/.srt/settings.local.json and every
--settings FILE (YAML accepted as .yaml/.yml). By default the command can read everything,
write only the current directory and its own TMPDIR, and reach no network host.`;

const HELP_EXIT = `Exit status: the command's own (128+N if killed by signal N); 125 when srt itself fails
(bad settings, the sandbox cannot be built); 126/127 when the command cannot be run; 2 when
no command was given (srt alone, srt --, srt help with an unknown topic). srt never runs a command outside the sandbox.`;

const HELP_AFTER = `\nExamples:\n${HELP_EXAMPLES}\n\n${HELP_SETTINGS}\n\n${HELP_EXIT}`;

/** `srt help presets`: every preset, what it adds, and how to name it. */
function presetsHelp(): string {
  const lines = [
    'Toolchain presets: --with NAME (repeatable), or "presets": ["NAME"] in ~/.srt/settings.json, a',
    '--settings file or managed settings (never in a repository\'s .srt/settings.json).',
    'Each adds its registries to network.allowedDomains and its cache directories to',
    'filesystem.allowWrite (created empty when missing); places in a cache that a host program',
    'runs later stay write-protected. srt config shows each entry as "preset NAME (SOURCE)".',
    '',
  ];
  for (const [name, p] of Object.entries(PRESETS)) {
    lines.push(`${name} — ${p.summary}`);
    lines.push(`    domains:   ${p.allowedDomains.join(' ')}`);
    if (p.caches.length) lines.push(`    writable:  ${p.caches.join(' ')}`);
    if (p.protect.length) lines.push(`    protected: ${p.protect.join(' ')}`);
  }
  return `${lines.join('\n')}\n`;
}

/** `split.tail` is filled in after the program is built (its options drive the split). */
function buildProgram(result: { exit: number }, split: { tail?: string[] }): Command {
  const pkg = createRequire(import.meta.url)(PACKAGE_JSON) as { version: string };
  const program = new Command('srt');
  program
    .description('Run a command in an OS-level sandbox: filesystem rules from layered settings, network only through a filtering proxy.')
    .usage('[options] [--] COMMAND [ARGS...]\n       srt [options] "COMMAND STRING" | -c "COMMAND STRING"\n       srt config [--json] | doctor [--json] [--fix] [--tools] | trust [FILE] | schema | proxy [--http-port N] [--socks-port N]')
    .version(pkg.version, '-V, --version')
    .helpCommand(false)
    .enablePositionalOptions()
    .passThroughOptions()
    .argument('[command...]', 'the command to run and its arguments')
    .option('-c, --command <string>', 'run STRING with bash -c (sh -c if there is no bash)');
  addPolicyOptions(program)
    .option('--dry-run', 'print the sandbox plan (mounts, environment, proxy) and exit without running or writing anything')
    .option('--json', 'with --dry-run: print the plan as JSON (stable shape, version 1)')
    .option('--platform <name>', 'the sandbox to build: linux (bubblewrap) or macos (Seatbelt); default: this host\'s. With --dry-run, macos prints the Seatbelt profile on any platform', parsePlatform)
    .option('-d, --debug', 'print details to stderr (same as SRT_DEBUG=1)')
    .option('--control-fd <n>', 'read whole-config JSON lines from file descriptor N (3 or more) while the command runs; each replaces every setting below managed scope, its network lists from the next connection', parseFd)
    .option('--log <file>', 'append one JSON line per network decision, finished connection and refused write or read to FILE')
    .option('--suggest', 'after the command, print the smallest settings snippet (JSON) that would have allowed what was refused: domains, writable directories, presets; never a protected place or a credential')
    .addHelpText('after', HELP_AFTER)
    .exitOverride()
    .configureOutput({ outputError: (str, write) => write(`srt: ${str.replace(/^error: /, '')}`) })
    .action(async (operands: string[], opts: RunOptions) => {
      const spec = commandSpec(operands, split.tail, opts);
      if (spec === undefined) throw new Fatal([`no command given; ${SHORT_USAGE}`], EXIT_USAGE);
      if (opts.json && !opts.dryRun) throw new Fatal(['--json goes with --dry-run (the plan as JSON); a run prints what the command prints']);
      result.exit = await runAction(spec, opts);
    });

  addPolicyOptions(
    program
      .command('config')
      .description('print the merged effective settings, each value with the scope and file it came from')
      .option('--json', 'machine-readable output (stable shape, version 1)'),
  ).action(async (opts: PolicyOptions & { json?: boolean }) => {
    const parent = program.opts<PolicyOptions & { debug?: boolean }>();
    const report = await loadReport(mergedPolicyOptions(parent, opts), debugEnabled(parent));
    const [{ configJson, configText, describeSource }, { hostCredentialPlan }, { withOverruled }] = await Promise.all([
      import('./settings/report.js'), import('./platform/credentials.js'), import('./check.js')]);
    // What a run would do with credentials: files are read, `source` commands are not run.
    const credentials = await hostCredentialPlan(report.policy);
    // Allow entries a higher deny hides wherever they land are listed as ignored, with that deny.
    const shown = { ...report, policy: withOverruled(report.policy, (s) => describeSource(s, report.policy)) };
    process.stdout.write(opts.json ? `${JSON.stringify(configJson(shown, credentials), null, 2)}\n` : printableBlock(configText(shown, credentials)));
  });

  addPolicyOptions(
    program
      .command('doctor')
      .description('diagnose dependencies, settings and what killed runs left behind')
      .option('--json', 'machine-readable report (stable shape, version 1)')
      .option('--fix', 'remove what killed runs left behind (never a live run\'s files)')
      .option('--tools', 'also run each installed client (curl, git, node, python3, pip, npm, java, go, ssh) in a throwaway sandbox against a probe server: does it use the proxy, does it trust srt\'s CA'),
  ).action(async (opts: PolicyOptions & { json?: boolean; fix?: boolean; tools?: boolean }) => {
    const { runDoctor, doctorText } = await import('./doctor.js');
    const report = await runDoctor({
      load: loadOptions(mergedPolicyOptions(program.opts<PolicyOptions>(), opts)),
      fix: opts.fix === true,
      tools: opts.tools === true,
    });
    process.stdout.write(opts.json ? `${JSON.stringify(report, null, 2)}\n` : printableBlock(doctorText(report)));
    result.exit = report.summary.error > 0 ? 1 : 0;
  });

  addPolicyOptions(
    program
      .command('check')
      .description('may a run read or write PATH, or reach HOST[:PORT]? The verdict from the same policy a run uses, the deciding entry with its file and line, without running anything; exit 0 allowed, 1 refused')
      .argument('<kind>', 'read, write or net')
      .argument('<target>', 'a path (read, write) or HOST[:PORT] (net; port 443 when none)')
      .option('--json', 'machine-readable output (stable shape, version 1)'),
  ).action(async (kind: string, target: string, opts: PolicyOptions & { json?: boolean }) => {
    if (kind !== 'read' && kind !== 'write' && kind !== 'net') throw new Fatal([`check: "${kind}" is not read, write or net`]);
    const parent = program.opts<PolicyOptions & { debug?: boolean }>();
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
    result.exit = verdict.allowed ? 0 : 1;
  });

  program
    .command('trust')
    .description("approve the exact content of a repository's settings file so its allow entries apply (no FILE: the ones that apply here)")
    .argument('[file]', 'a <project>/.srt/settings.json or settings.local.json')
    .option('--list', 'list recorded approvals and whether each file still matches')
    .option('--revoke <file>', 'remove the approval of FILE')
    .action(async (file: string | undefined, opts: { list?: boolean; revoke?: string }) => {
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
    });

  program
    .command('schema')
    .description('print the JSON Schema of the settings file')
    .action(async () => {
      const { settingsJsonSchema } = await import('./settings/schema.js');
      process.stdout.write(`${JSON.stringify(settingsJsonSchema(), null, 2)}\n`);
    });

  addPolicyOptions(
    program
      .command('proxy')
      .description('run only the filtering proxy on loopback with the merged policy until SIGINT/SIGTERM; print its URLs')
      .option('--http-port <n>', 'HTTP proxy port (default: any free port)', parsePort)
      .option('--socks-port <n>', 'SOCKS5 proxy port (default: any free port)', parsePort),
  ).action(async (opts: PolicyOptions & { httpPort?: number; socksPort?: number }) => {
    const parent = program.opts<PolicyOptions & { debug?: boolean }>();
    const debug = debugEnabled(parent);
    const report = await loadReport(mergedPolicyOptions(parent, opts), debug);
    const { runStandaloneProxy } = await import('./proxy/standalone.js');
    result.exit = await runStandaloneProxy({
      network: report.policy.network,
      httpPort: opts.httpPort ?? 0,
      socksPort: opts.socksPort ?? 0,
      debug,
      out,
      err: say,
    });
  });

  program
    .command('completion')
    .description('print a completion script for SHELL: subcommands, options, preset names and settings paths; bash: source <(srt completion bash)')
    .addArgument(new Argument('<shell>', 'bash, zsh or fish').choices(['bash', 'zsh', 'fish']))
    .action(async (shell: Shell) => {
      const { completionScript } = await import('./cli-docs.js');
      process.stdout.write(completionScript(shell, program, PRESET_NAMES));
    });

  program
    .command('help')
    .description('the same as --help; srt help SUBCOMMAND for a subcommand; srt help presets lists the toolchain presets; srt help man prints the man page')
    .argument('[topic]', 'a subcommand, presets or man')
    .action(async (topic: string | undefined) => {
      if (topic === undefined) return program.outputHelp();
      if (topic === 'presets') {
        process.stdout.write(presetsHelp());
        return;
      }
      if (topic === 'man') {
        const { manPage } = await import('./cli-docs.js');
        process.stdout.write(manPage(program, { version: pkg.version, examples: HELP_EXAMPLES, settings: HELP_SETTINGS, exitStatus: HELP_EXIT, presets: PRESETS }));
        return;
      }
      const cmd = program.commands.find((c) => c.name() === topic);
      if (!cmd) throw new Fatal([`unknown command "${topic}"; srt help lists the subcommands (srt help presets: the toolchain presets)`], EXIT_USAGE);
      cmd.outputHelp();
    });

  for (const cmd of program.commands) {
    cmd.exitOverride().configureOutput({ outputError: (str, write) => write(`srt: ${str.replace(/^error: /, '')}`) });
  }
  return program;
}

async function main(argv: string[]): Promise<number> {
  // `srt config | head`: a reader that stops early is not an error of srt's.
  process.stdout.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code === 'EPIPE') process.exit(process.exitCode ?? 0);
    throw err;
  });
  const result = { exit: 0 };
  const explicit: { tail?: string[] } = {};
  const program = buildProgram(result, explicit);
  // The program's own options tell the split which options take values.
  const split = splitAtDoubleDash(argv, program.options);
  if (split) explicit.tail = split.tail;
  try {
    await program.parseAsync(split ? split.head : argv, { from: 'user' });
  } catch (err) {
    if (err instanceof CommanderError) return err.exitCode === 0 ? 0 : EXIT_SRT_FAILURE;
    if (err instanceof Fatal) {
      for (const line of err.lines) say(`srt: ${line}`);
      return err.exit;
    }
    const [first, ...rest] = String((err as Error).stack ?? err).split('\n');
    say(`srt: internal error: ${first}`);
    for (const l of rest) say(l);
    return EXIT_SRT_FAILURE;
  }
  return result.exit;
}

// No top-level await: the CLI is bundled as CommonJS (src/code-cache.ts).
void main(process.argv.slice(2)).then((code) => {
  process.exitCode = code;
  leaveTerminalModes();
  // Exit even if a stray handle is left open; a sandbox wrapper must never hang after its command.
  setTimeout(() => process.exit(code), 2000).unref();
});
