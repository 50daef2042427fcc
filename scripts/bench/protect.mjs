// Cost of the protected-path supervisor on `npm install`-like work: node, inside the sandbox,
// creates 50k small files in 2.5k directories. The same srt run with the supervisor and without
// it (placeholders instead, through the test harness's entry), interleaved, timed inside the sandbox.
// Once in the project's directory (the disk a real install writes to) and once on tmpfs
// (/dev/shm), where creating a file costs least and the supervisor's share is largest.
import { spawnSync } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { median, REPO, report, scratch, SRT } from './lib.mjs';

const WITHOUT_SUPERVISOR = join(REPO, 'test', 'fixtures', 'without-supervisor.cjs');

const FILES = 50_000;
const ROUNDS = 3;
const s = scratch();
const home = join(s.dir, 'home');
const proj = join(s.dir, 'proj');
mkdirSync(home);
mkdirSync(proj);
const script = join(s.dir, 'install.cjs');
writeFileSync(script, `
const fs = require('fs'), path = require('path');
const base = process.argv[2], n = Number(process.argv[3]);
const t0 = process.hrtime.bigint();
for (let i = 0; i < n; i++) {
  const dir = path.join(base, 'node_modules', 'pkg' + (i % 500), 'lib' + (i % 5));
  if (i < 2500) fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, 'f' + i + '.js'), 'module.exports = ' + i + ';\\n');
}
console.log(Number(process.hrtime.bigint() - t0) / 1e6);
`);

function once(target, supervised) {
  rmSync(target, { recursive: true, force: true });
  mkdirSync(target, { recursive: true });
  const env = { PATH: process.env.PATH, HOME: home, LANG: 'C.UTF-8' };
  const entry = supervised ? [SRT] : [WITHOUT_SUPERVISOR, SRT];
  const r = spawnSync(process.execPath, [...entry, '--allow-write', target, '--', process.execPath, script, target, String(FILES)],
    { cwd: proj, env, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`srt exited ${r.status}: ${r.stderr}`);
  return Number(r.stdout.trim());
}

try {
  const rows = [];
  for (const [where, target] of [['project directory', join(proj, 'install')], ['tmpfs (/dev/shm)', `/dev/shm/srt-bench-${process.pid}`]]) {
    const plain = [];
    const sup = [];
    for (let i = 0; i < ROUNDS; i++) {
      plain.push(once(target, false));
      sup.push(once(target, true));
    }
    rmSync(target, { recursive: true, force: true });
    const a = median(plain), b = median(sup);
    rows.push([`${where}: without supervisor (median ms)`, a.toFixed(0)]);
    rows.push([`${where}: with supervisor (median ms)`, b.toFixed(0)]);
    rows.push([`${where}: ratio (target <= 1.3)`, (b / a).toFixed(2)]);
    rows.push([`${where}: per file added (us)`, (((b - a) * 1000) / FILES).toFixed(1)]);
  }
  report(rows);
} finally {
  s.cleanup();
}
