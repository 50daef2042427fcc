// The help texts srt prints at once (--help, srt help presets); the man page and completions
// (cli-docs.ts) are built from them and loaded only when asked.

import { PRESETS } from './settings/presets.js';

export const HELP_EXAMPLES = `  srt -- npm test                       run npm test in the sandbox (no shell)
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

export const HELP_SETTINGS = `Settings are read from /etc/srt/managed-settings.json (+ .d/*.json), ~/.srt/settings.json,
~/.srt-settings.json, <repo>/.srt/settings.json, <repo>/.srt/settings.local.json and every
--settings FILE (YAML accepted as .yaml/.yml). By default the command can read everything,
write only the current directory and its own TMPDIR, and reach no network host.`;

export const HELP_EXIT = `Exit status: the command's own (128+N if killed by signal N); 125 when srt itself fails
(bad settings, the sandbox cannot be built); 126/127 when the command cannot be run; 2 when
no command was given (srt alone, srt --, srt help with an unknown topic). srt never runs a command outside the sandbox.`;

export const HELP_AFTER = `\nExamples:\n${HELP_EXAMPLES}\n\n${HELP_SETTINGS}\n\n${HELP_EXIT}`;

/** `srt help presets`: every preset, what it adds, and how to name it. */
export function presetsHelp(): string {
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
