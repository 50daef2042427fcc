// Launch overhead: `srt -- /bin/true` against `node -e 0` and a bare bubblewrap run.
// Usage: node scripts/bench/launch.mjs [--vs OTHER_SRT]: also the same figure for another
// srt-compatible CLI (e.g. a build of an older commit), interleaved round by round.
import { median, timeCommand, scratch, report, SRT } from './lib.mjs';

const i = process.argv.indexOf('--vs');
const vs = i === -1 ? undefined : process.argv[i + 1];
const s = scratch();
const env = { PATH: process.env.PATH, HOME: s.dir, LANG: 'C.UTF-8' };
const opts = { cwd: s.dir, env, runs: 10, warmup: 2 };
try {
  const times = { node: [], bwrap: [], srt: [], vs: [] };
  for (let round = 0; round < 3; round++) {
    times.node.push(timeCommand([process.execPath, '-e', '0'], opts));
    times.bwrap.push(timeCommand(['bwrap', '--unshare-user', '--unshare-net', '--unshare-pid', '--unshare-ipc', '--unshare-uts',
      '--new-session', '--die-with-parent', '--cap-drop', 'ALL', '--ro-bind', '/', '/', '--dev', '/dev', '--proc', '/proc',
      '--', '/bin/true'], opts));
    times.srt.push(timeCommand([process.execPath, SRT, '--', '/bin/true'], opts));
    if (vs) times.vs.push(timeCommand([process.execPath, vs, '--', '/bin/true'], opts));
  }
  const [node, bwrap, srt] = [median(times.node), median(times.bwrap), median(times.srt)];
  const rows = [
    ['node -e 0 (median ms)', node.toFixed(1)],
    ['bare bwrap /bin/true (median ms)', bwrap.toFixed(1)],
    ['srt -- /bin/true (median ms)', srt.toFixed(1)],
    ['srt / node -e 0 (target <= 1.6, <= 2 with network)', (srt / node).toFixed(2)],
    ['srt / bare bwrap', (srt / bwrap).toFixed(2)],
  ];
  if (vs) {
    const other = median(times.vs);
    rows.push([`${vs} -- /bin/true (median ms)`, other.toFixed(1)], ['srt / that', (srt / other).toFixed(2)]);
  }
  report(rows);
} finally {
  s.cleanup();
}
