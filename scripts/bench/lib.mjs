// Shared benchmark plumbing: wall-time medians of whole commands, measured in one run so
// every figure is a ratio against a baseline taken on the same machine at the same time.
import { execFileSync, spawnSync } from 'node:child_process';
import { appendFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const SRT = join(REPO, 'bin', 'srt');

/** A bare bubblewrap sandbox (srt's namespaces, the host's root read-only): argv up to `--`. */
export const BWRAP = ['bwrap', '--unshare-user', '--unshare-net', '--unshare-pid', '--unshare-ipc', '--unshare-uts',
  '--new-session', '--die-with-parent', '--cap-drop', 'ALL', '--ro-bind', '/', '/', '--dev', '/dev', '--proc', '/proc'];

/**
 * The same sandbox running srt-init with srt's filter (written into `dir`) before `cmd`:
 * `withHelper(relayed, cmd)`, with srt's two relays (HTTP and SOCKS, to sockets in `dir`) when
 * `relayed`. srt-init's argv comes from srt's own renderer, so the baseline runs what srt runs.
 * Needs a build (dist/ and init/build/srt-init).
 */
export async function helperSandbox(dir) {
  const { buildSeccompFilter } = await import(join(REPO, 'dist', 'profiles', 'seccomp.js'));
  const { findInitHelper, hostSeccompArch } = await import(join(REPO, 'dist', 'platform', 'init-helper.js'));
  const { initArgv } = await import(join(REPO, 'dist', 'profiles', 'init-args.js'));
  const { hostProcessBound } = await import(join(REPO, 'dist', 'platform', 'linux-facts.js'));
  const helper = findInitHelper();
  if ('error' in helper) throw new Error(helper.error);
  const filter = join(dir, 'filter.bpf');
  writeFileSync(filter, buildSeccompFilter({ arch: hostSeccompArch(), allowUnixSockets: false, allowNamespaces: false }));
  const relays = [
    { address: '127.0.0.1', port: 3128, socketPath: join(dir, 'http.sock') },
    { address: '127.0.0.1', port: 1080, socketPath: join(dir, 'socks.sock') },
  ];
  const maxProcs = hostProcessBound();
  const withHelper = (relayed, cmd) => [...BWRAP, '--as-pid-1', '--cap-add', 'CAP_SYS_ADMIN', '--cap-add', 'CAP_SETPCAP', '--cap-add', 'CAP_SYS_RESOURCE',
    '--', ...initArgv({ helperPath: helper.path, relays: relayed ? relays : [], exposes: [], landlock: { writable: [], socketFiles: false }, maxProcs, filter }), ...cmd];
  return { withHelper };
}

const BULK_CHUNK = Buffer.alloc(64 * 1024, 'x');

/** Write `total` bytes of filler to a writable (a socket, an HTTP response or stream) in 64 KiB
 *  chunks, waiting for 'drain' when it asks to, then end it. */
export function writeBulk(out, total) {
  let left = total;
  const pump = () => {
    while (left > 0) {
      const n = Math.min(left, BULK_CHUNK.length);
      left -= n;
      if (!out.write(n === BULK_CHUNK.length ? BULK_CHUNK : BULK_CHUNK.subarray(0, n))) return void out.once('drain', pump);
    }
    out.end();
  };
  pump();
}

export function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

/** Median wall time (ms) of `argv` over `runs` runs after `warmup` unmeasured ones. */
export function timeCommand(argv, { runs = 30, warmup = 3, cwd, env } = {}) {
  const times = [];
  for (let i = 0; i < warmup + runs; i++) {
    const t0 = process.hrtime.bigint();
    const r = spawnSync(argv[0], argv.slice(1), { cwd, env, stdio: ['ignore', 'ignore', 'pipe'] });
    const ms = Number(process.hrtime.bigint() - t0) / 1e6;
    if (r.status !== 0) throw new Error(`${argv.join(' ')} exited ${r.status}: ${r.stderr}`);
    if (i >= warmup) times.push(ms);
  }
  return median(times);
}

/** A scratch cwd and HOME so the developer's own settings never influence a figure. */
export function scratch() {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), 'srt-bench-')));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/** Print the rows; under run.mjs (BENCH_RESULTS set) also append them there as one JSON line. */
export function report(rows) {
  for (const [name, value] of rows) console.log(`${name.padEnd(48)} ${value}`);
  if (process.env.BENCH_RESULTS) appendFileSync(process.env.BENCH_RESULTS, `${JSON.stringify(rows)}\n`);
}

/** A test CA and one leaf for every address the origins listen on (openssl, like the tests). */
export function testPki(dir, ips) {
  const run = (args) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
  run(['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '2', '-subj', '/CN=bench CA',
    '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign', '-keyout', 'ca.key', '-out', 'ca.pem']);
  run(['req', '-new', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-subj', '/CN=bench', '-keyout', 'leaf.key', '-out', 'leaf.csr']);
  writeFileSync(join(dir, 'leaf.ext'), `subjectAltName=${ips.map((ip) => `IP:${ip}`).join(',')}\n`);
  run(['x509', '-req', '-in', 'leaf.csr', '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial', '-days', '2', '-extfile', 'leaf.ext', '-out', 'leaf.pem']);
  return { ca: join(dir, 'ca.pem'), cert: readFileSync(join(dir, 'leaf.pem')), key: readFileSync(join(dir, 'leaf.key')) };
}

/**
 * A generated repository of about `files` files at `root` (for the big-repository benchmark;
 * nothing of it is committed): a `.git` with HEAD, config, sample hooks and loose objects; a
 * monorepo's `packages/*` source trees; a `node_modules/` of many small packages (most of a real
 * checkout's files, within a few levels of the top); and `data/` directories of 1,000 entries
 * (one per 5,000 files).
 * Returns the paths of `denied` existing files spread over the data directories and packages
 * (10 per data directory, then one per package), for literal deny entries. Deterministic.
 */
export function bigRepository(root, { files = 300_000, denied = 1000 } = {}) {
  let made = 0;
  const file = (path, body = '') => { writeFileSync(path, body); made++; };
  const dir = (path) => { mkdirSync(path, { recursive: true }); return path; };
  const git = dir(join(root, '.git'));
  file(join(git, 'HEAD'), 'ref: refs/heads/main\n');
  file(join(git, 'config'), '[core]\n\trepositoryformatversion = 0\n\tbare = false\n');
  dir(join(git, 'refs', 'heads'));
  for (const h of ['pre-commit', 'pre-push', 'commit-msg']) file(join(dir(join(git, 'hooks')), `${h}.sample`), '#!/bin/sh\n');
  for (let o = 0; o < 256; o++) {
    const d = dir(join(git, 'objects', o.toString(16).padStart(2, '0')));
    for (let k = 0; k < 20; k++) file(join(d, `${k.toString(16).padStart(38, '0')}`), 'x');
  }
  file(join(root, 'package.json'), '{"name":"big","private":true}\n');
  file(join(root, 'README.md'), '# big\n');
  // Data: directories of 1,000 entries (60 of them in 300k files).
  const dataDirs = [];
  for (let d = 0; d < Math.max(1, Math.round(files / 5000)); d++) {
    const at = dir(join(root, 'data', `set${d}`));
    dataDirs.push(at);
    for (let k = 0; k < 1000; k++) file(join(at, `rec${k}.json`), '{}');
  }
  // Source: packages/pN/src/mM/ (20 files each) with a test/ and a nested lib/ two levels deeper.
  const pkgDirs = [];
  for (let p = 0; made < files * 0.3; p++) {
    const pkg = dir(join(root, 'packages', `p${p}`));
    file(join(pkg, 'package.json'), `{"name":"p${p}"}\n`);
    for (let m = 0; m < 20; m++) {
      const src = dir(join(pkg, 'src', `m${m}`));
      for (let k = 0; k < 15; k++) file(join(src, `f${k}.ts`), 'export {};\n');
      const deep = dir(join(src, 'lib', 'impl'));
      for (let k = 0; k < 5; k++) file(join(deep, `g${k}.ts`), 'export {};\n');
    }
    const test = dir(join(pkg, 'test'));
    for (let k = 0; k < 20; k++) file(join(test, `t${k}.test.ts`), '');
  }
  // node_modules: packages of ~100 files (lib/, dist/cjs, dist/esm, types), some scoped.
  for (let n = 0; made < files; n++) {
    const name = n % 5 === 0 ? join(`@scope${n % 50}`, `pkg${n}`) : `pkg${n}`;
    const pkg = dir(join(root, 'node_modules', name));
    pkgDirs.push(pkg);
    file(join(pkg, 'package.json'), `{"name":"pkg${n}"}\n`);
    file(join(pkg, 'README.md'), '');
    for (const sub of ['lib', join('dist', 'cjs'), join('dist', 'esm'), 'types']) {
      const d = dir(join(pkg, sub));
      for (let k = 0; k < 24; k++) file(join(d, `m${k}.js`), '');
    }
  }
  const deny = [];
  for (const d of dataDirs) for (let k = 0; k < 10 && deny.length < denied; k++) deny.push(join(d, `rec${k * 97}.json`));
  for (let i = 0; deny.length < denied && i < pkgDirs.length; i++) deny.push(join(pkgDirs[i], 'package.json'));
  return { files: made, denied: deny };
}

/** Where `scripts/bench/install-peers.sh` put the peers (`SRT_BENCH_PEERS`, or this default). */
export const PEERS = process.env.SRT_BENCH_PEERS ?? join(process.env.HOME ?? '/root', '.cache', 'srt-bench-peers');

/**
 * The tools `--vs LIST` names (comma-separated), measured beside srt in the same run:
 * `reference` (@anthropic-ai/sandbox-runtime's srt, which reads srt-style `--settings`),
 * `codex` (`codex sandbox -- CMD`: no settings, no network; its HOME must lie outside /tmp), or
 * the path of another srt-compatible CLI (a build of an older commit). Each is
 * `{ name, settings, argv(cmd, settingsFile?), env(base) }`; `settings` says whether it takes a
 * settings file (a case that needs one is left out for a peer that does not).
 */
export function peersFromArgs(argv = process.argv) {
  const i = argv.indexOf('--vs');
  if (i === -1) return [];
  const list = argv[i + 1];
  if (!list || list.startsWith('-')) throw new Error('--vs needs a value: reference, codex, or the path of an srt-compatible CLI (comma-separated)');
  const installed = (rel) => {
    const bin = join(PEERS, 'node_modules', '.bin', rel);
    if (!existsSync(bin)) throw new Error(`${bin} is missing: run scripts/bench/install-peers.sh first (SRT_BENCH_PEERS chooses where)`);
    return bin;
  };
  return list.split(',').map((name) => {
    if (name === 'codex') {
      const bin = installed('codex');
      const home = join(PEERS, 'home');
      mkdirSync(home, { recursive: true });
      return { name, settings: false, argv: (cmd) => [bin, 'sandbox', '--', ...cmd], env: (base) => ({ ...base, HOME: home }) };
    }
    const bin = name === 'reference' ? installed('srt') : resolve(name);
    if (!existsSync(bin)) throw new Error(`--vs ${name}: no such file`);
    return { name, settings: true, argv: (cmd, file) => [bin, ...(file ? ['--settings', file] : []), '--', ...cmd], env: (base) => base };
  });
}
