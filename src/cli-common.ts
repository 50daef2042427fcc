// What every srt subcommand shares: exit codes, output, the policy options and loading the
// settings they name.

import { type Command, InvalidArgumentError } from 'commander';
import { homedir } from 'node:os';
import type { PlatformName } from './platform/backend.js';
import { PRESET_NAMES, PRESETS } from './settings/presets.js';
import type { LoadOptions, SettingsReport } from './settings/index.js';
import { printable, say } from './shell.js';

export const EXIT_SRT_FAILURE = 125;
/** No command and nothing else to do (`srt` alone, `srt --`, `srt help NOSUCH`): a usage error, not a failed run. */
export const EXIT_USAGE = 2;

/** One line of output on stdout, made printable (it may quote settings and file names). */
export function out(line: string): void {
  process.stdout.write(`${printable(line)}\n`);
}

/** A block of text srt built (config, doctor, dry run): each line made printable. */
export function printableBlock(text: string): string {
  return text.replace(/\n$/, '').split('\n').map(printable).join('\n') + '\n';
}

export interface PolicyOptions {
  settings?: string[];
  allowDomain?: string[];
  allowWrite?: string[];
  denyRead?: string[];
  with?: string[];
  expose?: string[];
}

const POLICY_KEYS = ['settings', 'allowDomain', 'allowWrite', 'denyRead', 'with', 'expose'] as const;

/** A subcommand's policy options after the program's (`srt --with npm config --allow-write x`). */
export function mergedPolicyOptions(parent: PolicyOptions, own: PolicyOptions): PolicyOptions {
  return Object.fromEntries(POLICY_KEYS.map((k) => [k, [...(parent[k] ?? []), ...(own[k] ?? [])]]));
}

/** Thrown to stop with `srt: MESSAGE` lines on stderr and exit 125 (or `exit`: 2 for usage). */
export class Fatal extends Error {
  constructor(readonly lines: string[], readonly exit = EXIT_SRT_FAILURE) {
    super(lines.join('\n'));
  }
}

const collect = (value: string, previous: string[] | undefined): string[] => [...(previous ?? []), value];

export function parseFd(value: string): number {
  if (!/^\d+$/.test(value) || Number(value) < 3 || !Number.isSafeInteger(Number(value))) {
    throw new InvalidArgumentError('must be a file descriptor number of 3 or more (0-2 are stdio)');
  }
  return Number(value);
}

export function parsePlatform(value: string): PlatformName {
  if (value === 'linux' || value === 'macos') return value;
  throw new InvalidArgumentError('must be linux or macos');
}

function collectPreset(value: string, previous: string[] | undefined): string[] {
  if (!Object.hasOwn(PRESETS, value)) throw new InvalidArgumentError(`no preset "${value}"; one of: ${PRESET_NAMES.join(', ')} (srt help presets)`);
  return collect(value, previous);
}

export function parsePort(value: string): number {
  if (!/^\d{1,5}$/.test(value) || Number(value) > 65535) throw new InvalidArgumentError('must be a port number (0-65535; 0 = any free port)');
  return Number(value);
}

export function addPolicyOptions(cmd: Command): Command {
  return cmd
    .option('-s, --settings <file>', 'also read this settings file (repeatable; CLI scope)', collect)
    .option('--allow-domain <domain>', 'allow network access to DOMAIN, e.g. github.com or *.npmjs.org (repeatable)', collect)
    .option('--allow-write <path>', 'allow writing under PATH (repeatable)', collect)
    .option('--deny-read <path>', 'hide PATH from the command (repeatable)', collect)
    .option('--with <tool>', `add what TOOL needs: its registries and its cache directory (repeatable; srt help presets): ${PRESET_NAMES.join(', ')}`, collectPreset)
    .option('--expose <port>', "let the host's localhost:PORT reach a server the command starts on PORT (repeatable; HOSTPORT:PORT, or [::1]:HOSTPORT:PORT for one address; network.exposePorts)", collect);
}

export function debugEnabled(opts: { debug?: boolean }): boolean {
  return opts.debug === true || process.env.SRT_DEBUG === '1';
}

export function loadOptions(opts: PolicyOptions): LoadOptions {
  return {
    cwd: process.cwd(),
    home: homedir(),
    settingsFiles: opts.settings ?? [],
    flags: { allowDomain: opts.allowDomain ?? [], allowWrite: opts.allowWrite ?? [], denyRead: opts.denyRead ?? [], with: opts.with ?? [], expose: opts.expose ?? [] },
  };
}

export async function loadReport(opts: PolicyOptions, debug: boolean): Promise<SettingsReport> {
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
