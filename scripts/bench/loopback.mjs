// What watching connect() for the refusal report costs (init/loopback.c: every connect() of the
// command goes to the supervisor, which asks the kernel whether a listener could take a loopback
// one): loopback connections made inside the sandbox, timed by the client itself (python3), to a
// server of its own (the common case: the listener is found), to srt's HTTP relay (a connection
// to the proxy), and to a port nothing listens on (each one refused, counted and reported) —
// against the same loops in a bare bubblewrap network namespace (no filter at all). And launch:
// `srt -- /bin/true`, and a command that makes one refused connection (the report's lines are
// built) against one that makes one connection to a listener.
// Usage: node scripts/bench/loopback.mjs [--vs OTHER_SRT] [--connects N]: with --vs (a build of
// an older commit, e.g. one without the watch), the same figures for it, run the same way.
import { spawnSync } from 'node:child_process';
import { BWRAP, median, peersFromArgs, report, scratch, SRT, timeCommand } from './lib.mjs';

const arg = (name) => {
  const i = process.argv.indexOf(name);
  return i === -1 ? undefined : process.argv[i + 1];
};
const connects = Number(arg('--connects') ?? 2000);
const peers = peersFromArgs();
const s = scratch();
const env = { PATH: process.env.PATH, HOME: s.dir, LANG: 'C.UTF-8' };

// Prints the median microseconds of one connect()+close() to 127.0.0.1:PORT (own: a listener of
// this process on a free port; refused: a free port nobody listens on).
const loop = (target) => `
import socket, time
target = ${JSON.stringify(target)}
l = socket.socket(); l.bind(("127.0.0.1", 0)); port = l.getsockname()[1]
if target == "own": l.listen(128)
elif target == "relay": l.close(); port = 3128
else: l.close()
times = []
for i in range(${connects}):
    c = socket.socket()
    t0 = time.perf_counter_ns()
    try: c.connect(("127.0.0.1", port))
    except ConnectionRefusedError: pass
    times.append(time.perf_counter_ns() - t0)
    c.close()
    if target == "own": l.accept()[0].close()
times.sort()
print(times[len(times) // 2] / 1000)
`;
const inside = (argv) => {
  const r = spawnSync(argv[0], argv.slice(1), { cwd: s.dir, env, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`${argv.join(' ')} exited ${r.status}: ${r.stderr}`);
  return Number(r.stdout.trim().split('\n').at(-1));
};
const runners = {
  bwrap: (cmd) => [...BWRAP, '--', ...cmd],
  srt: (cmd) => [SRT, '--', ...cmd],
  ...Object.fromEntries(peers.map((p) => [`vs:${p.name}`, (cmd) => p.argv(cmd)])),
};
try {
  const us = {};
  for (const target of ['own', 'relay', 'refused']) {
    for (const [name, run] of Object.entries(runners)) {
      if (name === 'bwrap' && target === 'relay') continue; // no relay there
      // Three runs each, interleaved with the others by target.
      us[`${name}:${target}`] = median([0, 1, 2].map(() => inside(run(['python3', '-c', loop(target)]))));
    }
  }
  const launch = {};
  const once = (target) => ['python3', '-c', `import socket\ntry: socket.create_connection(("127.0.0.1", ${target}))\nexcept OSError: pass`];
  for (let round = 0; round < 3; round++) {
    for (const [name, run] of Object.entries(runners)) {
      if (name === 'bwrap') continue;
      (launch[`${name}:true`] ??= []).push(timeCommand(run(['/bin/true']), { cwd: s.dir, env, runs: 5, warmup: 1 }));
      (launch[`${name}:listener`] ??= []).push(timeCommand(run(once(3128)), { cwd: s.dir, env, runs: 5, warmup: 1 }));
      (launch[`${name}:refused`] ??= []).push(timeCommand(run(once(9)), { cwd: s.dir, env, runs: 5, warmup: 1 }));
    }
  }
  const ms = Object.fromEntries(Object.entries(launch).map(([k, v]) => [k, median(v)]));
  const rows = [
    [`connect to a server of its own, bare bwrap (median µs, ${connects})`, us['bwrap:own'].toFixed(1)],
    ['connect to a server of its own, srt (median µs)', us['srt:own'].toFixed(1)],
    ['  srt / bare bwrap', (us['srt:own'] / us['bwrap:own']).toFixed(2)],
    ['connect to srt\'s HTTP relay, srt (median µs)', us['srt:relay'].toFixed(1)],
    ['refused connect, bare bwrap (median µs)', us['bwrap:refused'].toFixed(1)],
    ['refused connect, srt (counted; median µs)', us['srt:refused'].toFixed(1)],
    ['  srt / bare bwrap', (us['srt:refused'] / us['bwrap:refused']).toFixed(2)],
    ['srt -- /bin/true (median ms)', ms['srt:true'].toFixed(1)],
    ['srt, one connection to a listener (median ms)', ms['srt:listener'].toFixed(1)],
    ['srt, one refused connection, reported (median ms)', ms['srt:refused'].toFixed(1)],
    ['  added by the report (ms, target < 5)', (ms['srt:refused'] - ms['srt:listener']).toFixed(1)],
  ];
  for (const p of peers) {
    const k = `vs:${p.name}`;
    rows.push(
      [`${p.name}: connect to a server of its own (median µs)`, us[`${k}:own`].toFixed(1)],
      [`  srt / ${p.name}`, (us['srt:own'] / us[`${k}:own`]).toFixed(2)],
      [`${p.name}: connect to the HTTP relay (median µs)`, us[`${k}:relay`].toFixed(1)],
      [`  srt / ${p.name}`, (us['srt:relay'] / us[`${k}:relay`]).toFixed(2)],
      [`${p.name}: refused connect (median µs)`, us[`${k}:refused`].toFixed(1)],
      [`  srt / ${p.name}`, (us['srt:refused'] / us[`${k}:refused`]).toFixed(2)],
      [`${p.name}: -- /bin/true (median ms)`, ms[`${k}:true`].toFixed(1)],
      [`  srt - ${p.name} (ms)`, (ms['srt:true'] - ms[`${k}:true`]).toFixed(1)],
      [`${p.name}: one refused connection (median ms)`, ms[`${k}:refused`].toFixed(1)],
      [`  srt - ${p.name} (ms, target < 5)`, (ms['srt:refused'] - ms[`${k}:refused`]).toFixed(1)],
    );
  }
  report(rows);
} finally {
  s.cleanup();
}
