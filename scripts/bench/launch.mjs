// Launch overhead: `srt -- /bin/true` against `node -e 0` and a bare bubblewrap run.
import { timeCommand, scratch, report, SRT } from './lib.mjs';

const s = scratch();
const env = { PATH: process.env.PATH, HOME: s.dir, LANG: 'C.UTF-8' };
const opts = { cwd: s.dir, env };
try {
  const node = timeCommand([process.execPath, '-e', '0'], opts);
  const bwrap = timeCommand(['bwrap', '--unshare-user', '--unshare-net', '--unshare-pid', '--unshare-ipc', '--unshare-uts',
    '--new-session', '--die-with-parent', '--cap-drop', 'ALL', '--ro-bind', '/', '/', '--dev', '/dev', '--proc', '/proc',
    '--', '/bin/true'], opts);
  const srt = timeCommand([process.execPath, SRT, '--', '/bin/true'], opts);
  report([
    ['node -e 0 (median ms)', node.toFixed(1)],
    ['bare bwrap /bin/true (median ms)', bwrap.toFixed(1)],
    ['srt -- /bin/true (median ms)', srt.toFixed(1)],
    ['srt / node -e 0 (target <= 1.6, <= 2 with network)', (srt / node).toFixed(2)],
    ['srt / bare bwrap', (srt / bwrap).toFixed(2)],
  ]);
} finally {
  s.cleanup();
}
