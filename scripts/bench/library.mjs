// What an embedding program (an agent running many commands) pays per command through the
// library API, in the same, warm process (the first command is not counted): the next command
// of one sandbox (run(/bin/true) again: its tree search reused, docs/library.md "Many
// commands"), and a sandbox per command (Sandbox.create + run + dispose), against what the
// sandbox itself costs: bwrap + srt-init with its two relays running /bin/true, and bare bwrap.
// Interleaved round by round. Needs a build (dist/).
import { spawn } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { BWRAP, helperSandbox, median, report, REPO, scratch, timeCommand } from './lib.mjs';

const { loadPolicy, Sandbox } = await import(join(REPO, 'dist', 'index.js'));

const RUNS = 10;
const ROUNDS = 3;
const s = scratch();
// A project beside the home directory, as an agent's (a sandbox whose current directory is the
// home sees srt's own run directories appear there: its search is never reused).
const home = join(s.dir, 'home');
const cwd = join(s.dir, 'project');
mkdirSync(home);
mkdirSync(cwd);
const env = { PATH: process.env.PATH, HOME: home, LANG: 'C.UTF-8' };
try {
  const { withHelper: sandboxed } = await helperSandbox(s.dir);
  const withHelper = sandboxed(true, ['/bin/true']);
  // An asynchronous spawn, as the library's own (spawnSync would block the loop srt's proxy needs).
  const spawnOnce = (argv) => new Promise((resolve, reject) => {
    const t0 = process.hrtime.bigint();
    const child = spawn(argv[0], argv.slice(1), { cwd, env, stdio: 'ignore' });
    child.on('error', reject);
    child.on('exit', (code) => (code === 0 ? resolve(Number(process.hrtime.bigint() - t0) / 1e6) : reject(new Error(`${argv[0]} exited ${code}`))));
  });
  const policy = loadPolicy({ cwd, home, flags: {} });
  const lines = [];
  const reused = await Sandbox.create({ policy, onMessage: (l) => lines.push(l) });
  const next = async () => {
    const t0 = process.hrtime.bigint();
    const status = await reused.run({ argv: ['/bin/true'] });
    if (status !== 0) throw new Error(`srt's run exited ${status}: ${lines.join('\n')}`);
    return Number(process.hrtime.bigint() - t0) / 1e6;
  };
  const command = async () => {
    const t0 = process.hrtime.bigint();
    const sandbox = await Sandbox.create({ policy, onMessage: (l) => lines.push(l) });
    let status;
    try {
      status = await sandbox.run({ argv: ['/bin/true'] });
    } finally {
      await sandbox.dispose();
    }
    if (status !== 0) throw new Error(`srt's run exited ${status}: ${lines.join('\n')}`);
    return Number(process.hrtime.bigint() - t0) / 1e6;
  };
  await command(); // the first command loads the modules and warms the JIT: not what the next ones pay
  await next();
  const t = { next: [], lib: [], helper: [], bare: [] };
  for (let round = 0; round < ROUNDS; round++) {
    const nexts = [];
    const lib = [];
    const bare = [];
    const helped = [];
    for (let i = 0; i < RUNS; i++) {
      nexts.push(await next());
      lib.push(await command());
      helped.push(await spawnOnce(withHelper));
      bare.push(await spawnOnce([...BWRAP, '--', '/bin/true']));
    }
    t.next.push(median(nexts));
    t.lib.push(median(lib));
    t.helper.push(median(helped));
    t.bare.push(median(bare));
  }
  const search = reused.prepare({ argv: ['/bin/true'] }).treeSearch;
  await reused.dispose();
  const [nextMs, lib, helped, bare] = [median(t.next), median(t.lib), median(t.helper), median(t.bare)];
  const range = (xs) => `${Math.min(...xs).toFixed(1)}-${Math.max(...xs).toFixed(1)}`;
  report([
    ['bare bwrap /bin/true (median ms)', bare.toFixed(1)],
    ['bwrap + helper + relays /bin/true (median ms)', helped.toFixed(1)],
    ['library: next command of one sandbox (median ms, rounds)', `${nextMs.toFixed(1)} (${range(t.next)})`],
    ['next command / bwrap + helper (target <= 1.5)', (nextMs / helped).toFixed(2)],
    ['next command: tree searches in all its runs', `${search.searches} (reused: ${search.reused})`],
    ['library: a sandbox per command, create+run+dispose (median ms)', lib.toFixed(1)],
    ['sandbox per command / bwrap + helper', (lib / helped).toFixed(2)],
    ['sandbox per command / bare bwrap', (lib / bare).toFixed(2)],
  ]);
  // A sanity check that `srt -- /bin/true` as a process is the figure this one improves on.
  report([['srt -- /bin/true as a process, for scale (median ms)', timeCommand([join(REPO, 'bin', 'srt'), '--', '/bin/true'], { cwd, env, runs: 10, warmup: 2 }).toFixed(1)]]);
} finally {
  s.cleanup();
}
