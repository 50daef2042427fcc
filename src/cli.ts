// The `srt` command line: parse arguments, load the policy, hand the command to the Sandbox.
// Thin on purpose; heavy modules (settings schema, sandbox, proxy) are imported only by the
// action that needs them so `srt --help` stays fast.
// The run is cli-run.ts, the other subcommands cli-commands.ts; what they share cli-common.ts.

import { Argument, Command, CommanderError, type Option } from 'commander';
import { createRequire } from 'node:module';
import type { Shell } from './cli-docs.js';
import { checkCommand, configCommand, doctorCommand, proxyCommand, trustCommand } from './cli-commands.js';
import { addPolicyOptions, EXIT_SRT_FAILURE, EXIT_USAGE, Fatal, parseFd, parsePlatform, parsePort, type PolicyOptions } from './cli-common.js';
import { HELP_AFTER, HELP_EXAMPLES, HELP_EXIT, HELP_SETTINGS, presetsHelp } from './cli-help.js';
import { commandSpec, runAction, type RunOptions } from './cli-run.js';
import { PACKAGE_JSON } from './paths.js';
import { leaveTerminalModes } from './platform/terminal.js';
import { PRESET_NAMES, PRESETS } from './settings/presets.js';
import { say } from './shell.js';

const SHORT_USAGE = 'usage: srt [options] [--] COMMAND [ARGS...]; srt --help for options and subcommands';

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
  ).action((opts: PolicyOptions & { json?: boolean }) => configCommand(program.opts(), opts));

  addPolicyOptions(
    program
      .command('doctor')
      .description('diagnose dependencies, settings and what killed runs left behind')
      .option('--json', 'machine-readable report (stable shape, version 1)')
      .option('--fix', 'remove what killed runs left behind (never a live run\'s files)')
      .option('--tools', 'also run each installed client (curl, git, node, python3, pip, npm, java, go, ssh) in a throwaway sandbox against a probe server: does it use the proxy, does it trust srt\'s CA'),
  ).action(async (opts: PolicyOptions & { json?: boolean; fix?: boolean; tools?: boolean }) => {
    result.exit = await doctorCommand(program.opts(), opts);
  });

  addPolicyOptions(
    program
      .command('check')
      .description('may a run read or write PATH, or reach HOST[:PORT]? The verdict from the same policy a run uses, the deciding entry with its file and line, without running anything; exit 0 allowed, 1 refused')
      .argument('<kind>', 'read, write or net')
      .argument('<target>', 'a path (read, write) or HOST[:PORT] (net; port 443 when none)')
      .option('--json', 'machine-readable output (stable shape, version 1)'),
  ).action(async (kind: string, target: string, opts: PolicyOptions & { json?: boolean }) => {
    result.exit = await checkCommand(program.opts(), kind, target, opts);
  });

  program
    .command('trust')
    .description("approve the exact content of a repository's settings file so its allow entries apply (no FILE: the ones that apply here)")
    .argument('[file]', 'a <project>/.srt/settings.json or settings.local.json')
    .option('--list', 'list recorded approvals and whether each file still matches')
    .option('--revoke <file>', 'remove the approval of FILE')
    .action((file: string | undefined, opts: { list?: boolean; revoke?: string }) => trustCommand(file, opts));

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
    result.exit = await proxyCommand(program.opts(), opts);
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
  try {
    // `srt -- COMMAND...`, no option before the `--`: the run needs nothing the program would
    // parse, so it is not built (the same action, as the program's would call it).
    if (argv[0] === '--') {
      result.exit = await runAction(commandSpec([], argv.slice(1), {})!, {});
    } else {
      const explicit: { tail?: string[] } = {};
      const program = buildProgram(result, explicit);
      // The program's own options tell the split which options take values.
      const split = splitAtDoubleDash(argv, program.options);
      if (split) explicit.tail = split.tail;
      await program.parseAsync(split ? split.head : argv, { from: 'user' });
    }
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
