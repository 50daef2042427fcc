// srt-init's command lines as srt writes them (src/profiles/init-args.ts) against the parser that
// reads them (init/main.c, init/relays.c): every option srt writes is one the parser knows, with
// as many values as it takes, in the shape its usage names; every option the parser knows is one
// srt can write. The e2e tests then run them for real.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { hostListenArgv, initArgv, type InitArgs } from '../../src/profiles/init-args.js';

const source = (f: string) => readFileSync(new URL(`../../init/${f}`, import.meta.url), 'utf8');

/** The options of main()'s argument loop: those before `if (i + 1 >= argc) usage();` take no value. */
function mainOptions(): Map<string, 'flag' | 'value'> {
  const main = source('main.c');
  const loop = main.slice(main.indexOf('for (; i < argc; i++) {'), main.indexOf('if (!filter_path || i + 1 >= argc) usage();'));
  const split = loop.indexOf('if (i + 1 >= argc) usage();');
  expect(split).toBeGreaterThan(0);
  const names = (text: string) => [...text.matchAll(/strcmp\(argv\[i\], "(--[a-z-]+)"\) == 0/g)].map((m) => m[1]!).filter((o) => o !== '--');
  return new Map([...names(loop.slice(0, split)).map((o) => [o, 'flag'] as const), ...names(loop.slice(split)).map((o) => [o, 'value'] as const)]);
}

/** The shape of each option's value, from the usage message (`--relay ADDR:PORT:SOCKETPATH`). */
function usageShapes(): Map<string, string> {
  const usage = /usage: srt-init ([^;]*?)--filter FILE -- CMD ARGS/s.exec(source('main.c').replace(/"\s*\n\s*"/g, ''))![1]!;
  expect(usage).toMatch(/ --max-procs N $/); // required, like --filter
  return new Map([...[...usage.matchAll(/\[(--[a-z-]+) ([A-Z:]+)/g)].map((m) => [m[1]!, m[2]!] as const), ['--max-procs', 'N'], ['--filter', 'FILE']]);
}

const SHAPES: Record<string, RegExp> = {
  'ADDR:PORT:SOCKETPATH': /^(\d+\.\d+\.\d+\.\d+|\[[0-9a-f:]+\]):\d+:\/\S+$/,
  'FD:PORT': /^\d+:\d+$/,
  'CHANNELFD:STATFD:STDIO': /^\d+:\d+:[012]+$/,
  PATH: /^\/\S*$/,
  RULES: /^\/\S*$/,
  N: /^\d+$/,
  PLAN: /^\/\S*$/,
  FILE: /^\/\S*$/,
};

const FULL: InitArgs = {
  helperPath: '/opt/srt/init/build/srt-init',
  relays: [{ address: '127.0.0.1', port: 3128, socketPath: '/r/http.sock' }, { address: '::1', port: 1080, socketPath: '/r/socks.sock' }],
  exposes: [{ fd: 6, hostAddress: '127.0.0.1', hostPort: 3000, sandboxPort: 3000 }, { fd: 7, hostAddress: '::1', hostPort: 8080, sandboxPort: 80 }],
  landlock: { writable: ['/w', '/r/tmp'], socketFiles: true },
  pty: { channelFd: 4, parentStatFd: 5, stdio: '012' },
  protect: { rulesPath: '/r/protect.rules', reportFd: 8 },
  verify: '/r/mounts',
  goFd: 9,
  maxProcs: 8192,
  filter: '/r/filter.bpf',
};

/** Walk argv as main() does: each option known, values taken, up to the `--` before the command. */
function walk(argv: string[], known: Map<string, 'flag' | 'value'>): Map<string, string[]> {
  const seen = new Map<string, string[]>();
  let i = 1;
  for (; i < argv.length && argv[i] !== '--'; i++) {
    const kind = known.get(argv[i]!);
    expect(kind, `${argv[i]} is not an option srt-init knows`).toBeDefined();
    const values = seen.get(argv[i]!) ?? [];
    if (kind === 'value') values.push(argv[++i]!);
    seen.set(argv[i - (kind === 'value' ? 1 : 0)]!, values);
  }
  expect(argv[i]).toBe('--');
  expect(i).toBe(argv.length - 1);
  return seen;
}

describe('srt-init\'s options as srt writes them', () => {
  const known = mainOptions();
  const shapes = usageShapes();

  it('the parser and its usage agree on the options that take a value', () => {
    expect([...known].filter(([, k]) => k === 'value').map(([o]) => o).sort()).toEqual([...shapes.keys()].sort());
  });

  it('every option written is known, takes its values, in the shape the usage names; every known option is written by some plan', () => {
    const full = walk(initArgv(FULL), known);
    const off = walk(initArgv({ ...FULL, landlock: 'off' }), known);
    expect(initArgv(FULL)[0]).toBe(FULL.helperPath);
    for (const [option, values] of [...full, ...off]) {
      const shape = shapes.get(option);
      for (const v of values) expect(v, `${option} ${v} (${shape})`).toMatch(SHAPES[shape!]!);
    }
    expect(new Set([...full.keys(), ...off.keys()])).toEqual(new Set(known.keys()));
    expect(full.get('--relay')).toEqual(['127.0.0.1:3128:/r/http.sock', '[::1]:1080:/r/socks.sock']);
    expect(full.get('--expose')).toEqual(['6:3000', '7:80']);
    // Options main() takes once are written once.
    for (const once of ['--pty', '--protect', '--report-fd', '--verify', '--go-fd', '--max-procs', '--filter']) expect(full.get(once), once).toHaveLength(1);
  });

  it('--no-landlock never comes with --writable or --socket-files (main() refuses the pair)', () => {
    const off = walk(initArgv({ ...FULL, landlock: 'off' }), known);
    expect([...off.keys()].filter((o) => o === '--writable' || o === '--socket-files')).toEqual([]);
    expect(walk(initArgv(FULL), known).has('--no-landlock')).toBe(false);
  });

  it('the minimal plan: the process bound and the filter', () => {
    expect(initArgv({ helperPath: '/h', relays: [], exposes: [], landlock: { writable: [], socketFiles: false }, maxProcs: 8192, filter: '/f' })).toEqual(['/h', '--max-procs', '8192', '--filter', '/f', '--']);
  });

  it('the launcher: `--host-listen FD:ADDR:PORT` as relays.c parses it, then `--` and bwrap; nothing when no port is exposed', () => {
    const relays = source('relays.c');
    expect(relays).toContain('strcmp(argv[i], "--host-listen") != 0');
    expect(relays).toMatch(/--host-listen %s: want FD:ADDR:PORT/);
    const argv = hostListenArgv(FULL.helperPath, FULL.exposes);
    expect(argv).toEqual([FULL.helperPath, '--host-listen', '6:127.0.0.1:3000', '--host-listen', '7:[::1]:8080', '--']);
    for (let i = 1; i < argv.length - 1; i += 2) expect(argv[i + 1]).toMatch(/^\d+:(\d+\.\d+\.\d+\.\d+|\[[0-9a-f:]+\]):\d+$/);
    expect(hostListenArgv(FULL.helperPath, [])).toEqual([]);
  });
});
