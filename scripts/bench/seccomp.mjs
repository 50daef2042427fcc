// Launch cost of the seccomp helper: bwrap + srt-seccomp (nested PID/mount namespace, fresh
// /proc, capability drop, filter) + /bin/true against the same bwrap running /bin/true directly,
// and what the HTTP and SOCKS relays add (two listeners bound, one relay process forked).
// Needs a build (dist/ and seccomp/build/srt-seccomp).
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { timeCommand, scratch, report, REPO } from './lib.mjs';

const { buildSeccompFilter } = await import(join(REPO, 'dist', 'profiles', 'seccomp.js'));
const { findSeccompHelper, hostSeccompArch } = await import(join(REPO, 'dist', 'platform', 'seccomp-helper.js'));

const helper = findSeccompHelper();
if ('error' in helper) {
  console.error(helper.error);
  process.exit(1);
}
const s = scratch();
const env = { PATH: process.env.PATH, HOME: s.dir, LANG: 'C.UTF-8' };
const opts = { cwd: s.dir, env, runs: 30, warmup: 3 };
try {
  const filter = join(s.dir, 'filter.bpf');
  writeFileSync(filter, buildSeccompFilter({ arch: hostSeccompArch(), allowUnixSockets: false, allowNamespaces: false }));
  const bwrap = ['bwrap', '--unshare-user', '--unshare-net', '--unshare-pid', '--unshare-ipc', '--unshare-uts',
    '--new-session', '--die-with-parent', '--cap-drop', 'ALL', '--ro-bind', '/', '/', '--dev', '/dev', '--proc', '/proc'];
  const withHelper = (relays) => [...bwrap, '--as-pid-1', '--cap-add', 'CAP_SYS_ADMIN', '--cap-add', 'CAP_SETPCAP', '--cap-add', 'CAP_SYS_RESOURCE',
    '--', helper.path, ...relays, '--filter', filter, '--', '/bin/true'];
  const relays = ['--relay', `127.0.0.1:3128:${join(s.dir, 'http.sock')}`, '--relay', `127.0.0.1:1080:${join(s.dir, 'socks.sock')}`];
  // Interleave them so load from anything else on the machine hits all alike.
  const bare = [];
  const seccomp = [];
  const relayed = [];
  for (let round = 0; round < 3; round++) {
    bare.push(timeCommand([...bwrap, '--', '/bin/true'], opts));
    seccomp.push(timeCommand(withHelper([]), opts));
    relayed.push(timeCommand(withHelper(relays), opts));
  }
  const mid = (xs) => [...xs].sort((a, b) => a - b)[1];
  report([
    ['bwrap /bin/true (median ms)', mid(bare).toFixed(1)],
    ['bwrap + srt-seccomp + filter /bin/true (median ms)', mid(seccomp).toFixed(1)],
    ['added by the helper (ms, target < 10)', (mid(seccomp) - mid(bare)).toFixed(1)],
    ['ratio', (mid(seccomp) / mid(bare)).toFixed(2)],
    ['  + HTTP and SOCKS relays (median ms)', mid(relayed).toFixed(1)],
    ['added by the relays (ms)', (mid(relayed) - mid(seccomp)).toFixed(1)],
  ]);
} finally {
  s.cleanup();
}
