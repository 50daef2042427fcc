// What an embedding program (an agent running many commands) pays per command through the
// library API: the policy loaded once, then for each command Sandbox.create + run(/bin/true) +
// dispose in the same, warm process (the first command is not counted), against what the
// sandbox itself costs: bwrap + srt-init with its two relays running /bin/true, and
// bare bwrap. Interleaved round by round. Needs a build (dist/).
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { BWRAP, helperSandbox, median, report, REPO, scratch, timeCommand } from './lib.mjs';

const { loadPolicy, Sandbox } = await import(join(REPO, 'dist', 'index.js'));

const RUNS = 10;
const ROUNDS = 3;
const s = scratch();
const env = { PATH: process.env.PATH, HOME: s.dir, LANG: 'C.UTF-8' };
try {
  const { withHelper: sandboxed, relays } = await helperSandbox(s.dir);
  const withHelper = sandboxed(relays, ['/bin/true']);
  // An asynchronous spawn, as the library's own (spawnSync would block the loop srt's proxy needs).
  const spawnOnce = (argv) => new Promise((resolve, reject) => {
    const t0 = process.hrtime.bigint();
    const child = spawn(argv[0], argv.slice(1), { cwd: s.dir, env, stdio: 'ignore' });
    child.on('error', reject);
    child.on('exit', (code) => (code === 0 ? resolve(Number(process.hrtime.bigint() - t0) / 1e6) : reject(new Error(`${argv[0]} exited ${code}`))));
  });
  const policy = loadPolicy({ cwd: s.dir, home: s.dir, flags: {} });
  const lines = [];
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
  const t = { lib: [], helper: [], bare: [] };
  for (let round = 0; round < ROUNDS; round++) {
    const lib = [];
    const bare = [];
    const helped = [];
    for (let i = 0; i < RUNS; i++) {
      lib.push(await command());
      helped.push(await spawnOnce(withHelper));
      bare.push(await spawnOnce([...BWRAP, '--', '/bin/true']));
    }
    t.lib.push(median(lib));
    t.helper.push(median(helped));
    t.bare.push(median(bare));
  }
  const [lib, helped, bare] = [median(t.lib), median(t.helper), median(t.bare)];
  report([
    ['bare bwrap /bin/true (median ms)', bare.toFixed(1)],
    ['bwrap + helper + relays /bin/true (median ms)', helped.toFixed(1)],
    ['library: next command, create+run+dispose (median ms)', lib.toFixed(1)],
    ['library / bwrap + helper (target <= 2)', (lib / helped).toFixed(2)],
    ['library / bare bwrap', (lib / bare).toFixed(2)],
  ]);
  // A sanity check that `srt -- /bin/true` as a process is the figure this one improves on.
  report([['srt -- /bin/true as a process, for scale (median ms)', timeCommand([join(REPO, 'bin', 'srt'), '--', '/bin/true'], { cwd: s.dir, env, runs: 10, warmup: 2 }).toFixed(1)]]);
} finally {
  s.cleanup();
}
