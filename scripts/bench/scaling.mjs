// How `srt -- /bin/true` scales, each figure against the same run's baseline (interleaved):
//  - with the size of the workspace it runs in (1k, 10k, 100k files; the protected-path search
//    walks it), against an empty one;
//  - with the size of its settings: 1k denyRead paths (existing files outside the writable
//    paths, so each is pinned) and 1k allowedDomains, against 10 deny paths;
//  - 50 concurrent runs in one directory: all succeed, nothing is left in ~/.srt/run, and the
//    total wall time against 50 one after another.
// Usage: node scripts/bench/scaling.mjs [--rounds N]
import { spawn } from 'node:child_process';
import { mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { median, report, scratch, SRT, timeCommand } from './lib.mjs';

const i = process.argv.indexOf('--rounds');
const rounds = i === -1 ? 3 : Number(process.argv[i + 1]);
const s = scratch();
const home = join(s.dir, 'home');
mkdirSync(home);
const env = { PATH: process.env.PATH, HOME: home, LANG: 'C.UTF-8' };

/** A workspace of `files` files, 100 to a directory, 10 directories to a parent (a source tree's shape). */
function workspace(files) {
  const root = join(s.dir, `ws-${files}`);
  for (let f = 0; f < files; f++) {
    const dir = join(root, `d${Math.floor(f / 1000)}`, `e${Math.floor(f / 100) % 10}`);
    if (f % 100 === 0) mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, `f${f}.txt`), '');
  }
  mkdirSync(root, { recursive: true });
  return root;
}

function settingsFile(name, doc) {
  const file = join(s.dir, `${name}.json`);
  writeFileSync(file, JSON.stringify(doc));
  return file;
}

const data = join(s.dir, 'data');
mkdirSync(data);
for (let f = 0; f < 1000; f++) writeFileSync(join(data, `secret${f}`), 'x');
const denies = (n) => Array.from({ length: n }, (_, f) => join(data, `secret${f}`));

try {
  const empty = workspace(0);
  const sizes = [1000, 10_000, 100_000];
  const spaces = Object.fromEntries(sizes.map((n) => [n, workspace(n)]));
  const small = settingsFile('deny10', { filesystem: { denyRead: denies(10) } });
  const manyDenies = settingsFile('deny1000', { filesystem: { denyRead: denies(1000) } });
  const manyDomains = settingsFile('domains1000', { filesystem: { denyRead: denies(10) }, network: { allowedDomains: Array.from({ length: 1000 }, (_, d) => `host${d}.example.com`) } });
  const cases = {
    empty: { argv: [SRT, '--', '/bin/true'], cwd: empty },
    ...Object.fromEntries(sizes.map((n) => [`ws${n}`, { argv: [SRT, '--', '/bin/true'], cwd: spaces[n] }])),
    deny10: { argv: [SRT, '--settings', small, '--', '/bin/true'], cwd: empty },
    deny1000: { argv: [SRT, '--settings', manyDenies, '--', '/bin/true'], cwd: empty },
    domains1000: { argv: [SRT, '--settings', manyDomains, '--', '/bin/true'], cwd: empty },
  };
  const times = Object.fromEntries(Object.keys(cases).map((k) => [k, []]));
  for (let round = 0; round < rounds; round++) {
    for (const [k, c] of Object.entries(cases)) times[k].push(timeCommand(c.argv, { cwd: c.cwd, env, runs: 7, warmup: 2 }));
  }
  const m = Object.fromEntries(Object.entries(times).map(([k, v]) => [k, median(v)]));
  const added = (k, base) => `+${(m[k] - m[base]).toFixed(1)}`;

  // 50 at once in one directory, against 50 in a row.
  const once = () => new Promise((resolve) => {
    const child = spawn(SRT, ['--', '/bin/true'], { cwd: empty, env, stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    child.stderr.on('data', (d) => (err += d));
    child.on('exit', (code) => resolve({ code, err }));
  });
  const t0 = process.hrtime.bigint();
  const all = await Promise.all(Array.from({ length: 50 }, once));
  const concurrentMs = Number(process.hrtime.bigint() - t0) / 1e6;
  const failed = all.filter((r) => r.code !== 0);
  const left = readdirSync(join(home, '.srt', 'run'));

  report([
    ['srt in an empty workspace (median ms)', m.empty.toFixed(1)],
    ...sizes.map((n) => [`  ${n / 1000}k files: added ms${n === 100_000 ? ' (target <= 150)' : ''}`, added(`ws${n}`, 'empty')]),
    ['srt with 10 denyRead paths (median ms)', m.deny10.toFixed(1)],
    ['  1k denyRead paths: added ms (target <= 50)', added('deny1000', 'deny10')],
    ['  1k allowedDomains: added ms', added('domains1000', 'deny10')],
    ['50 concurrent runs: failed', String(failed.length)],
    ['50 concurrent runs: left in ~/.srt/run', String(left.length)],
    ['50 concurrent runs: wall ms', concurrentMs.toFixed(0)],
    ['  / 50 x one run', (concurrentMs / (50 * m.empty)).toFixed(2)],
  ]);
  if (failed.length) console.error(failed[0].err);
} finally {
  s.cleanup();
}
