// A big repository as the current directory, and denied files in big directories outside the
// writable paths. A generated repository of 300k files (lib.mjs bigRepository; made in a scratch
// directory, or kept with --keep DIR for the next run), then `srt -- /bin/true`, interleaved
// round by round, each figure against an empty directory in the same run:
//  - in the repository with no settings (the protected-path search walks it);
//  - with 15 `**/` deny globs that match nothing (`**/.env`, `**/*.pem`, `**/secrets/**`, …);
//  - with those and 1,000 literal denies of existing files inside it;
//  - from an empty directory, with the same 1,000 literal denies (the repository then lies
//    outside the writable paths: each directory holding a denied file must keep its deny);
// and srt's own peak RSS (VmHWM, its node process alone) when the command has started; then the
// library's next command in one sandbox (its tree search reused, docs/library.md "Many
// commands") in the repository with the globs and the literal denies, against the next command
// of a sandbox in the empty directory, interleaved.
// Each case also gets its CPU time (user + system of srt and every process it waited for, from
// this process's children's times): on a loaded machine the wall clock inflates, CPU time less.
// Usage: node scripts/bench/bigrepo.mjs [--files N] [--rounds N] [--runs N] [--keep DIR] [--vs LIST]
// (--vs: lib.mjs peersFromArgs; a peer without settings files, Codex, gets the first two cases.)
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { bigRepository, median, peersFromArgs, report, REPO, scratch, SRT } from './lib.mjs';

const arg = (name) => {
  const i = process.argv.indexOf(name);
  return i === -1 ? undefined : process.argv[i + 1];
};
const files = Number(arg('--files') ?? 300_000);
const rounds = Number(arg('--rounds') ?? 3);
const runs = Number(arg('--runs') ?? 5);
const keep = arg('--keep');
const peers = peersFromArgs();

/** CPU time (ms) of the processes this one has waited for: utime + stime of its reaped children. */
const TICK_MS = 1000 / Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout.trim() || 100);
const childCpu = () => {
  const stat = readFileSync('/proc/self/stat', 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(f[13]) + Number(f[14])) * TICK_MS; // cutime, cstime (fields 16 and 17)
};
/** Median wall and CPU time (ms) of `runs` runs of argv after `warmup`. */
function timeAndCpu(argv, { runs, warmup, cwd, env }) {
  const wall = [];
  const cpu = [];
  for (let i = 0; i < warmup + runs; i++) {
    const c0 = childCpu();
    const t0 = process.hrtime.bigint();
    const r = spawnSync(argv[0], argv.slice(1), { cwd, env, stdio: ['ignore', 'ignore', 'pipe'] });
    const ms = Number(process.hrtime.bigint() - t0) / 1e6;
    if (r.status !== 0) throw new Error(`${argv.join(' ')} exited ${r.status}: ${r.stderr}`);
    if (i >= warmup) { wall.push(ms); cpu.push(childCpu() - c0); }
  }
  return { wall: median(wall), cpu: median(cpu) };
}

const DENY_GLOBS = ['**/.env', '**/.env.*', '**/*.pem', '**/*.key', '**/id_rsa', '**/id_ed25519', '**/secrets/**',
  '**/.aws/credentials', '**/.npmrc', '**/.netrc', '**/*.p12', '**/*.pfx', '**/credentials.json', '**/.pypirc', '**/service-account*.json'];

const s = scratch();
try {
  // The repository: generated once per --keep directory (a marker file holds what was made).
  const repo = keep ?? join(s.dir, 'repo');
  const marker = join(repo, '.bench-repo.json');
  let made;
  if (existsSync(marker) && JSON.parse(readFileSync(marker, 'utf8')).requested === files) made = JSON.parse(readFileSync(marker, 'utf8'));
  else {
    const t0 = Date.now();
    made = { requested: files, ...bigRepository(repo, { files }) };
    writeFileSync(marker, JSON.stringify(made));
    console.log(`generated ${made.files} files in ${repo} (${((Date.now() - t0) / 1000).toFixed(1)} s)`);
  }
  const home = join(s.dir, 'home');
  const empty = join(s.dir, 'empty');
  mkdirSync(home);
  mkdirSync(empty);
  const env = { PATH: process.env.PATH, HOME: home, LANG: 'C.UTF-8' };
  const settings = (name, denyRead) => {
    const file = join(s.dir, `${name}.json`);
    // In the reference's format too (it refuses a file without every key; srt reads it alike).
    writeFileSync(file, JSON.stringify({ filesystem: { denyRead, allowWrite: ['.'], denyWrite: [] }, network: { allowedDomains: [], deniedDomains: [] } }));
    return file;
  };
  const globs = settings('globs', DENY_GLOBS);
  const globsLiteral = settings('globs-literal', [...DENY_GLOBS, ...made.denied]);
  const literal = settings('literal', made.denied);
  const srt = { name: 'srt', settings: true, argv: (cmd, file) => [SRT, ...(file ? ['--settings', file] : []), '--', ...cmd], env: (base) => base };
  const tools = [srt, ...peers];
  const cases = tools.flatMap((t) => [
    [`${t.name}:empty`, t, undefined, empty],
    [`${t.name}:repo`, t, undefined, repo],
    ...(t.settings ? [
      [`${t.name}:globs`, t, globs, repo],
      [`${t.name}:globsLiteral`, t, globsLiteral, repo],
      [`${t.name}:outside`, t, literal, empty],
    ] : []),
  ]);
  const times = Object.fromEntries(cases.map(([k]) => [k, []]));
  const cpus = Object.fromEntries(cases.map(([k]) => [k, []]));
  for (let round = 0; round < rounds; round++) {
    for (const [k, t, file, cwd] of cases) {
      const r = timeAndCpu(t.argv(['/bin/true'], file), { cwd, env: t.env(env), runs, warmup: 1 });
      times[k].push(r.wall);
      cpus[k].push(r.cpu);
    }
  }
  const m = Object.fromEntries(Object.entries(times).map(([k, v]) => [k, median(v)]));
  const c = Object.fromEntries(Object.entries(cpus).map(([k, v]) => [k, median(v)]));
  const range = (k) => `${Math.min(...times[k]).toFixed(0)}–${Math.max(...times[k]).toFixed(0)}`;

  /** srt's peak RSS once the command runs (its start is over): VmHWM of the node process. */
  const peakRss = (argv, cwd) => new Promise((resolve, reject) => {
    const child = spawn(argv[0], [...argv.slice(1), '--', '/bin/sh', '-c', 'echo ready; read x'], { cwd, env, stdio: ['pipe', 'pipe', 'pipe'] });
    let err = '';
    let kb;
    child.stderr.on('data', (d) => (err += d));
    child.stdout.on('data', (d) => {
      if (kb !== undefined || !String(d).includes('ready')) return;
      kb = Number(/VmHWM:\s*(\d+)/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'))?.[1]);
      child.stdin.end('\n');
    });
    child.on('exit', (code) => (code === 0 && kb ? resolve(kb / 1024) : reject(new Error(`${argv.join(' ')} exited ${code}: ${err}`))));
  });
  const rss = {
    empty: await peakRss([SRT], empty),
    globsLiteral: await peakRss([SRT, '--settings', globsLiteral], repo),
    outside: await peakRss([SRT, '--settings', literal], empty),
  };

  const rows = [];
  for (const { name: who, settings: takesSettings } of tools) {
    const cpuAdded = (k) => `CPU +${(c[`${who}:${k}`] - c[`${who}:empty`]).toFixed(0)} ms`;
    const added = (k) => `+${(m[`${who}:${k}`] - m[`${who}:empty`]).toFixed(1)} (${(m[`${who}:${k}`] / m[`${who}:empty`]).toFixed(2)}x; ${range(`${who}:${k}`)} ms); ${cpuAdded(k)}`;
    rows.push(
      [`${who}: empty directory (median ms, range; CPU)`, `${m[`${who}:empty`].toFixed(1)} (${range(`${who}:empty`)}); CPU ${c[`${who}:empty`].toFixed(0)} ms`],
      [`  ${made.files} files, no settings: added ms`, added('repo')],
    );
    if (takesSettings) rows.push(
      [`  + ${DENY_GLOBS.length} deny globs: added ms (target <= 50)`, added('globs')],
      [`  + ${made.denied.length} literal denies inside: added ms (target <= 50)`, added('globsLiteral')],
      [`  ${made.denied.length} literal denies, repository outside: added ms (target <= 50)`, added('outside')],
    );
  }
  rows.push(
    ['srt peak RSS at start, empty directory (MB)', rss.empty.toFixed(1)],
    ['  globs + literal denies in the repository (MB, target <= 150)', rss.globsLiteral.toFixed(1)],
    ['  literal denies outside (MB, target <= 150)', rss.outside.toFixed(1)],
  );
  report(rows);

  // The library's next command: one sandbox each, created once (its first command not counted).
  const { loadPolicy, Sandbox } = await import(join(REPO, 'dist', 'index.js'));
  const lines = [];
  const sandboxIn = async (cwd, file) => {
    const sandbox = await Sandbox.create({ policy: loadPolicy({ cwd, home, settingsFiles: file ? [file] : [] }), onMessage: (l) => lines.push(l) });
    const next = async () => {
      const t0 = process.hrtime.bigint();
      const status = await sandbox.run({ argv: ['/bin/true'] });
      if (status !== 0) throw new Error(`srt's run exited ${status}: ${lines.join('\n')}`);
      return Number(process.hrtime.bigint() - t0) / 1e6;
    };
    await next();
    return { sandbox, next };
  };
  const lib = { empty: await sandboxIn(empty), repo: await sandboxIn(repo, globsLiteral) };
  const next = { empty: [], repo: [] };
  for (let round = 0; round < rounds; round++) {
    for (const k of ['empty', 'repo']) {
      const xs = [];
      for (let i = 0; i < runs * 2; i++) xs.push(await lib[k].next());
      next[k].push(median(xs));
    }
  }
  const searched = lib.repo.sandbox.prepare({ argv: ['/bin/true'] }).treeSearch;
  for (const k of ['empty', 'repo']) await lib[k].sandbox.dispose();
  const nm = { empty: median(next.empty), repo: median(next.repo) };
  const nrange = (k) => `${Math.min(...next[k]).toFixed(1)}–${Math.max(...next[k]).toFixed(1)}`;
  report([
    ['library next command, empty directory (median ms, range)', `${nm.empty.toFixed(1)} (${nrange('empty')})`],
    [`  in the repository with the globs and ${made.denied.length} literal denies: added ms (target <= 10)`, `+${(nm.repo - nm.empty).toFixed(1)} (${(nm.repo / nm.empty).toFixed(2)}x; ${nrange('repo')} ms)`],
    ['  tree searches in all its runs', `${searched.searches} (reused: ${searched.reused}, ${searched.watched} directories watched${searched.stale ? `; ${searched.stale}` : ''})`],
  ]);
} finally {
  s.cleanup();
}
