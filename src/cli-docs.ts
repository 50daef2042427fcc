// The man page (`srt help man`) and the shell completions (`srt completion bash|zsh|fish`), both
// made from the commander program that prints --help, so neither can drift from the options srt
// accepts. docs/srt.1 is `srt help man` as scripts/docs.mjs wrote it.

import type { Command, Option } from 'commander';

export interface CliFacts {
  version: string;
  /** The --help epilogue's parts. */
  examples: string;
  settings: string;
  exitStatus: string;
  presets: Record<string, { summary: string; allowedDomains: string[]; caches: string[] }>;
}

/** Text escaped for roff: backslashes, leading dots and quotes, and hyphens as ASCII minus. */
function roff(text: string): string {
  return text.replace(/\\/g, '\\e').replace(/-/g, '\\-').replace(/^(['.])/gm, '\\&$1');
}

const bold = (s: string) => `\\fB${roff(s)}\\fR`;

/** An option term, flags in bold and the value name in italics (`-s, --settings <file>`). */
function term(flags: string): string {
  return flags.split(/(<[^>]+>|\[[^\]]+\])/).map((part, i) => (i % 2 ? `\\fI${roff(part)}\\fR` : bold(part))).join('');
}

/** srt(1) in roff (man -l renders it). */
export function manPage(program: Command, facts: CliFacts): string {
  const help = program.createHelp();
  const options = (cmd: Command) => help.visibleOptions(cmd)
    .filter((o: Option) => cmd === program || o.long !== '--help')
    .flatMap((o: Option) => ['.TP', term(help.optionTerm(o)), roff(help.optionDescription(o))]);
  const lines = [
    `.TH SRT 1 "" "srt ${facts.version}" "User Commands"`,
    '.SH NAME',
    `srt \\- ${roff(help.commandDescription(program).replace(/^Run/, 'run').replace(/:.*$/s, ''))}`,
    '.SH SYNOPSIS',
    '.nf',
    ...help.commandUsage(program).split('\n').map((l) => roff(l.trim().startsWith('srt') ? l.trim() : `srt ${l.trim()}`)),
    '.fi',
    '.SH DESCRIPTION',
    roff(help.commandDescription(program)),
    '.PP',
    roff(facts.settings),
    '.SH OPTIONS',
    ...options(program),
    '.SH COMMANDS',
    ...help.visibleCommands(program).flatMap((cmd) => [
      '.SS',
      `${bold(`srt ${cmd.name()}`)} ${roff(help.subcommandTerm(cmd).slice(cmd.name().length).trim())}`,
      roff(help.subcommandDescription(cmd)),
      ...options(cmd),
    ]),
    '.SH TOOLCHAIN PRESETS',
    ...Object.entries(facts.presets).flatMap(([name, p]) => ['.TP', bold(name), roff(`${p.summary}: ${[...p.allowedDomains, ...p.caches].join(' ')}`)]),
    '.SH EXAMPLES',
    '.nf',
    ...facts.examples.split('\n').map((l) => roff(l.replace(/^ {2}/, ''))),
    '.fi',
    '.SH EXIT STATUS',
    roff(facts.exitStatus),
    '.SH SEE ALSO',
    "bwrap(1); srt's README.md and docs/ (settings.md, cli.md, security-model.md, …) in its package",
  ];
  return `${lines.join('\n')}\n`;
}

export type Shell = 'bash' | 'zsh' | 'fish';

/** Options whose value is a file (completed as paths) and those with fixed values. */
const FILE_OPTIONS = ['-s', '--settings', '--allow-write', '--deny-read', '--log'];

interface Spec {
  subcommands: Array<{ name: string; options: string[]; args: string[] }>;
  options: string[];
  valued: string[];
  presets: string[];
}

function spec(program: Command, presets: string[]): Spec {
  const flags = (cmd: Command) => cmd.options.filter((o) => !o.hidden).flatMap((o) => [o.short, o.long].filter((f): f is string => f !== undefined));
  const valued = (cmd: Command) => cmd.options.filter((o) => o.required || o.optional).flatMap((o) => [o.short, o.long].filter((f): f is string => f !== undefined));
  // A subcommand's first argument: its declared choices, else what its action knows by name.
  const argsOf = (cmd: Command): string[] => cmd.registeredArguments[0]?.argChoices
    ?? { check: ['read', 'write', 'net'], help: [...program.commands.map((c) => c.name()), 'presets', 'man'] }[cmd.name()] ?? [];
  return {
    subcommands: program.commands.map((c) => ({ name: c.name(), options: [...flags(c), '--help'], args: argsOf(c) })),
    options: [...flags(program), '--help', '--'],
    valued: [...new Set([...valued(program), ...program.commands.flatMap(valued)])],
    presets,
  };
}

function bashScript(s: Spec): string {
  const cases = s.subcommands.map((c) => `    ${c.name}) opts=${JSON.stringify(c.options.join(' '))}; args=${JSON.stringify(c.args.join(' '))} ;;`).join('\n');
  return `# bash completion for srt (srt completion bash); source it, or save it as
# ~/.local/share/bash-completion/completions/srt
_srt() {
  local cur=\${COMP_WORDS[COMP_CWORD]} prev=\${COMP_WORDS[COMP_CWORD-1]}
  local i=1 sub= opts= args=
  COMPREPLY=()
  case $prev in
    ${FILE_OPTIONS.join('|')}) COMPREPLY=($(compgen -f -- "$cur")); return ;;
    --with) COMPREPLY=($(compgen -W ${JSON.stringify(s.presets.join(' '))} -- "$cur")); return ;;
    --platform) COMPREPLY=($(compgen -W "linux macos" -- "$cur")); return ;;
    ${s.valued.filter((f) => !FILE_OPTIONS.includes(f) && f !== '--with' && f !== '--platform').join('|')}) return ;;
  esac
  # The first word that is no option (nor an option's value) is a subcommand or the command to run.
  while [ $i -lt $COMP_CWORD ]; do
    case \${COMP_WORDS[i]} in
      --) sub=--; break ;;
      ${s.valued.join('|')}) i=$((i + 1)) ;;
      -*) ;;
      *) sub=\${COMP_WORDS[i]}; break ;;
    esac
    i=$((i + 1))
  done
  case $sub in
    '')
      if [[ $cur == -* ]]; then COMPREPLY=($(compgen -W ${JSON.stringify(s.options.join(' '))} -- "$cur")); return; fi
      COMPREPLY=($(compgen -W ${JSON.stringify(s.subcommands.map((c) => c.name).join(' '))} -- "$cur"))
      [ \${#COMPREPLY[@]} -eq 0 ] && COMPREPLY=($(compgen -c -- "$cur"))
      return ;;
    --) ;;
${cases}
    *) sub=--; i=$((i - 1)) ;;
  esac
  if [ "$sub" = -- ]; then
    # The command srt runs: complete it as its own command line.
    if declare -F _command_offset >/dev/null; then _command_offset $((i + 1)); return; fi
    if [ $COMP_CWORD -eq $((i + 1)) ]; then COMPREPLY=($(compgen -c -- "$cur")); else COMPREPLY=($(compgen -f -- "$cur")); fi
    return
  fi
  if [[ $cur == -* ]]; then COMPREPLY=($(compgen -W "$opts" -- "$cur")); return; fi
  COMPREPLY=($(compgen -W "$args" -- "$cur"))
  [ -z "$args" ] && COMPREPLY=($(compgen -f -- "$cur"))
  return 0
}
complete -o filenames -F _srt srt
`;
}

function fishScript(s: Spec, program: Command): string {
  const names = s.subcommands.map((c) => c.name).join(' ');
  const line = (cond: string, o: Option) => {
    const parts = ['complete -c srt', cond];
    if (o.short) parts.push(`-s ${o.short.slice(1)}`);
    if (o.long) parts.push(`-l ${o.long.slice(2)}`);
    if (o.long === '--with') parts.push(`-x -a '${s.presets.join(' ')}'`);
    else if (o.long === '--platform') parts.push("-x -a 'linux macos'");
    else if (FILE_OPTIONS.includes(o.long ?? '')) parts.push('-r -F');
    else if (o.required || o.optional) parts.push('-x');
    parts.push(`-d '${o.description.replace(/'/g, "\\'").replace(/[;:(].*$/, '').trim()}'`);
    return parts.join(' ');
  };
  return [
    '# fish completion for srt (srt completion fish); save it as ~/.config/fish/completions/srt.fish',
    ...program.options.filter((o) => !o.hidden).map((o) => line('-n __fish_use_subcommand', o)),
    ...program.commands.map((c) => `complete -c srt -n __fish_use_subcommand -f -a ${c.name()} -d '${c.description().replace(/'/g, "\\'").replace(/[;:(].*$/, '').trim()}'`),
    ...program.commands.flatMap((c) => [
      ...c.options.filter((o) => !o.hidden).map((o) => line(`-n '__fish_seen_subcommand_from ${c.name()}'`, o)),
      ...(s.subcommands.find((x) => x.name === c.name())!.args.length
        ? [`complete -c srt -n '__fish_seen_subcommand_from ${c.name()}' -f -a '${s.subcommands.find((x) => x.name === c.name())!.args.join(' ')}'`]
        : []),
    ]),
    `complete -c srt -n 'not __fish_seen_subcommand_from ${names}' -a '(__fish_complete_subcommand)'`,
    '',
  ].join('\n');
}

/** The completion script for one shell (zsh runs the bash one through bashcompinit). */
export function completionScript(shell: Shell, program: Command, presets: string[]): string {
  const s = spec(program, presets);
  if (shell === 'fish') return fishScript(s, program);
  if (shell === 'zsh') {
    return `# zsh completion for srt (srt completion zsh); source it from ~/.zshrc
autoload -U +X compinit && compinit
autoload -U +X bashcompinit && bashcompinit
${bashScript(s).replace(/^# bash completion.*\n#.*\n/, '')}`;
  }
  return bashScript(s);
}
