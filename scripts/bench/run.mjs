// `npm run bench [NAME...]`: every benchmark in this directory (or those whose file names start
// with NAME), one after another, each as its own process. Prints each one's figures and writes
// them all to bench-results.json (with the machine and the time) for comparison across runs.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, release, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
// NAMEs choose benchmarks; options (`--vs OTHER_SRT`, with their values) go to every benchmark.
const only = [];
const passOn = [];
for (let i = 2; i < process.argv.length; i++) {
  const a = process.argv[i];
  if (!a.startsWith('-')) only.push(a);
  else {
    passOn.push(a);
    if (process.argv[i + 1] !== undefined && !process.argv[i + 1].startsWith('-')) passOn.push(process.argv[++i]);
  }
}
const scratch = mkdtempSync(join(tmpdir(), 'srt-bench-results-'));
const results = { date: new Date().toISOString(), machine: { cpus: cpus().length, cpu: cpus()[0]?.model, kernel: release(), node: process.version }, benches: {} };
let failed = false;
try {
  for (const file of readdirSync(here).sort()) {
    if (!file.endsWith('.mjs') || file === 'run.mjs' || file === 'lib.mjs') continue;
    if (only.length && !only.some((o) => file.startsWith(o))) continue;
    console.log(`\n== ${file}`);
    const out = join(scratch, `${file}.jsonl`);
    const r = spawnSync(process.execPath, [join(here, file), ...passOn], { stdio: 'inherit', env: { ...process.env, BENCH_RESULTS: out } });
    if (r.status !== 0) failed = true;
    let rows = [];
    try { rows = readFileSync(out, 'utf8').trim().split('\n').filter(Boolean).flatMap((l) => JSON.parse(l)); } catch { /* printed nothing */ }
    results.benches[file.replace(/\.mjs$/, '')] = { status: r.status, rows: Object.fromEntries(rows) };
  }
} finally {
  rmSync(scratch, { recursive: true, force: true });
}
writeFileSync(join(here, '..', '..', 'bench-results.json'), `${JSON.stringify(results, null, 2)}\n`);
console.log('\nwrote bench-results.json');
process.exit(failed ? 1 : 0);
