// Launch cost of srt-init: bwrap + srt-init (nested PID/mount namespace, fresh
// /proc, capability drop, filter) + /bin/true against the same bwrap running /bin/true directly,
// and what the HTTP and SOCKS relays add (two listeners bound, one relay process forked).
// Needs a build (dist/ and init/build/srt-init).
import { timeCommand, scratch, report, BWRAP, helperSandbox } from './lib.mjs';

const s = scratch();
const env = { PATH: process.env.PATH, HOME: s.dir, LANG: 'C.UTF-8' };
const opts = { cwd: s.dir, env, runs: 30, warmup: 3 };
try {
  const { withHelper } = await helperSandbox(s.dir);
  // Interleave them so load from anything else on the machine hits all alike.
  const bare = [];
  const seccomp = [];
  const relayed = [];
  for (let round = 0; round < 3; round++) {
    bare.push(timeCommand([...BWRAP, '--', '/bin/true'], opts));
    seccomp.push(timeCommand(withHelper(false, ['/bin/true']), opts));
    relayed.push(timeCommand(withHelper(true, ['/bin/true']), opts));
  }
  const mid = (xs) => [...xs].sort((a, b) => a - b)[1];
  report([
    ['bwrap /bin/true (median ms)', mid(bare).toFixed(1)],
    ['bwrap + srt-init + filter /bin/true (median ms)', mid(seccomp).toFixed(1)],
    ['added by the helper (ms, target < 10)', (mid(seccomp) - mid(bare)).toFixed(1)],
    ['ratio', (mid(seccomp) / mid(bare)).toFixed(2)],
    ['  + HTTP and SOCKS relays (median ms)', mid(relayed).toFixed(1)],
    ['added by the relays (ms)', (mid(relayed) - mid(seccomp)).toFixed(1)],
  ]);
} finally {
  s.cleanup();
}
