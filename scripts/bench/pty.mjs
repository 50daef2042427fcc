// The command's terminal: keystroke-to-echo latency through srt's relay (target ≤ 2 ms median)
// and `cat` of 100 MB through the pty (target ≥ 200 MB/s), each against the same program on a
// plain pseudo-terminal in the same run (the ceiling: srt adds a second pty and the relay).
// The client drives srt from a pty master (pty-driver.py), as a terminal emulator would.
import { spawnSync } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { scratch, report, median, SRT, REPO } from './lib.mjs';

const PYTHON = ['/usr/bin/python3', '/bin/python3'].find((p) => existsSync(p)) ?? 'python3';
const DRIVER = join(REPO, 'scripts', 'bench', 'pty-driver.py');
const SIZE = 100 * 1024 * 1024;

const s = scratch();
const env = { PATH: process.env.PATH, HOME: s.dir, LANG: 'C.UTF-8', TERM: 'xterm' };
function drive(args) {
  const r = spawnSync(PYTHON, [DRIVER, ...args], { cwd: s.dir, env, encoding: 'utf8', timeout: 300_000 });
  if (r.status !== 0) throw new Error(`pty-driver ${args.join(' ')}: ${r.stderr || r.stdout}`);
  return Number(r.stdout.trim());
}
try {
  const file = join(s.dir, 'text');
  // Text lines, as a terminal would show them (the pty turns each \n into \r\n).
  const line = Buffer.from('0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789abcdefghijklmnopqrstuvwxyz\n');
  writeFileSync(file, Buffer.concat(Array.from({ length: Math.ceil(SIZE / line.length) }, () => line)).subarray(0, SIZE));
  const srt = [process.execPath, SRT, '--'];
  // Interleaved rounds, so load from anything else on the machine hits both alike.
  const echo = { plain: [], srt: [] };
  const cat = { plain: [], srt: [] };
  for (let round = 0; round < 3; round++) {
    echo.plain.push(drive(['echo', '200', 'cat']));
    echo.srt.push(drive(['echo', '200', ...srt, 'cat']));
    cat.plain.push(drive(['output', String(SIZE), 'cat', file]));
    cat.srt.push(drive(['output', String(SIZE), ...srt, 'cat', file]));
  }
  report([
    ['keystroke to echo, plain pty (median ms)', median(echo.plain).toFixed(3)],
    ['keystroke to echo, srt (median ms, target ≤ 2)', median(echo.srt).toFixed(3)],
    ['cat 100 MB, plain pty (MB/s)', median(cat.plain).toFixed(0)],
    ['cat 100 MB, srt (MB/s, target ≥ 200)', median(cat.srt).toFixed(0)],
    ['cat through srt vs plain pty', (median(cat.srt) / median(cat.plain)).toFixed(2)],
  ]);
} finally {
  s.cleanup();
}
