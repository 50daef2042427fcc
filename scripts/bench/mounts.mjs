// Cost of the mount checks (every planned mount verified by the helper before the command runs),
// of pinned denies (a denied path outside the writable paths: the directories holding it are
// snapshots, one bind per entry) and of gated denies (a denied path inside a writable path: every
// open goes through the supervisor, which checks what it opened). Each configuration timed in
// the same run: `srt -- /bin/true` wall time, a read-heavy build-like workload (node reading and
// stat-ing 20k small files in 2k directories, as module resolution does; timed inside) and
// `tsc --noEmit` over srt's own sources (wall).
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { median, report, REPO, scratch, SRT, timeCommand } from './lib.mjs';

const FILES = 20_000;
const ROUNDS = 5;
const s = scratch();
const home = join(s.dir, 'home');
const proj = join(s.dir, 'proj');
mkdirSync(join(home, '.aws'), { recursive: true });
mkdirSync(join(home, '.ssh'));
writeFileSync(join(home, '.aws', 'credentials'), 'secret\n');
writeFileSync(join(home, '.aws', 'config'), '[default]\n');
// A home directory of ordinary size: 60 dotfiles and directories.
for (let i = 0; i < 30; i++) {
  writeFileSync(join(home, `.rc${i}`), '#\n');
  mkdirSync(join(home, `.dir${i}`));
}
mkdirSync(proj);
writeFileSync(join(proj, '.env'), 'TOKEN=secret\n');
const tree = join(proj, 'tree');
for (let i = 0; i < FILES; i++) {
  const dir = join(tree, `pkg${i % 2000}`);
  if (i < 2000) mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, `f${i}.js`), `module.exports = ${i};\n`);
}
const reader = join(s.dir, 'read.cjs');
writeFileSync(reader, `
const fs = require('fs'), path = require('path');
const t0 = process.hrtime.bigint();
for (const d of fs.readdirSync(process.argv[2])) {
  const dir = path.join(process.argv[2], d);
  for (const f of fs.readdirSync(dir)) { const p = path.join(dir, f); fs.statSync(p); fs.readFileSync(p); }
}
console.log(Number(process.hrtime.bigint() - t0) / 1e6);
`);

const env = { PATH: process.env.PATH, HOME: home, LANG: 'C.UTF-8' };
const configs = [
  ['no deny entries', []],
  ['pinned denies (~/.aws/credentials, ~/.ssh)', ['--deny-read', join(home, '.aws', 'credentials'), '--deny-read', join(home, '.ssh')]],
  ['gated deny (.env in the project)', ['--deny-read', join(proj, '.env')]],
];

function inside(args) {
  const r = spawnSync(process.execPath, [SRT, ...args, '--', process.execPath, reader, tree], { cwd: proj, env, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`srt exited ${r.status}: ${r.stderr}`);
  return Number(r.stdout.trim());
}

try {
  const rows = [];
  const tsc = join(REPO, 'node_modules', '.bin', 'tsc');
  const base = {};
  for (const [name, args] of configs) {
    const trueMs = timeCommand([process.execPath, SRT, ...args, '--', '/bin/true'], { runs: 15, cwd: proj, env });
    const reads = [];
    for (let i = 0; i < ROUNDS; i++) reads.push(inside(args));
    const readMs = median(reads);
    const tscMs = existsSync(tsc)
      ? timeCommand([process.execPath, SRT, ...args, '--', tsc, '--noEmit', '-p', join(REPO, 'tsconfig.json')], { runs: 3, warmup: 1, cwd: proj, env })
      : NaN;
    base.true ??= trueMs; base.read ??= readMs; base.tsc ??= tscMs;
    rows.push([`${name}: srt -- /bin/true (median ms)`, `${trueMs.toFixed(0)} (x${(trueMs / base.true).toFixed(2)})`]);
    rows.push([`${name}: read 20k files inside (median ms)`, `${readMs.toFixed(0)} (x${(readMs / base.read).toFixed(2)})`]);
    rows.push([`${name}: tsc --noEmit (median ms)`, `${tscMs.toFixed(0)} (x${(tscMs / base.tsc).toFixed(2)})`]);
  }
  report(rows);
} finally {
  s.cleanup();
}
