// Cost of the snapshots that keep a deny in the home directory holding for the whole run
// (`denyRead: ["~/.ssh", "~/.aws/credentials"]`: the home becomes a read-only tmpfs with each of
// its entries bound back, so a host program renaming over a denied path cannot detach its mask).
// `srt -- /bin/true` with a home of 0, 60 and 300 entries (dotfiles and directories), each with
// and without the deny, all runs interleaved (the machine's load shifts alike for both), medians;
// each deny figure as a ratio and a difference against the same home without it.
// Usage: node scripts/bench/snapshots.mjs [--vs LIST]: the same figures for each peer that takes
// srt's flags (lib.mjs peersFromArgs: the reference, an older build), its runs interleaved with these.
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { median, peersFromArgs, report, scratch, SRT } from './lib.mjs';

const peers = peersFromArgs().filter((p) => p.settings);
const RUNS = 15;
const SIZES = [0, 60, 300];
const s = scratch();
try {
  const proj = join(s.dir, 'proj');
  mkdirSync(proj);
  const homes = new Map();
  for (const size of SIZES) {
    const home = join(s.dir, `home${size}`);
    mkdirSync(home);
    if (size > 0) {
      mkdirSync(join(home, '.ssh'));
      writeFileSync(join(home, '.ssh', 'id_ed25519'), 'KEY\n');
      mkdirSync(join(home, '.aws'));
      writeFileSync(join(home, '.aws', 'credentials'), '[default]\n');
      writeFileSync(join(home, '.aws', 'config'), '[default]\n');
      for (let i = 0; i < (size - 2) / 2; i++) {
        writeFileSync(join(home, `.rc${i}`), '#\n');
        mkdirSync(join(home, `.dir${i}`));
      }
    }
    homes.set(size, home);
  }
  // Each tool with a settings file of the two denies (the reference has no --deny-read flag).
  const denies = (home) => {
    const file = join(s.dir, `deny-${home.split('/').pop()}.json`);
    writeFileSync(file, JSON.stringify({ filesystem: { denyRead: [join(home, '.ssh'), join(home, '.aws', 'credentials')], allowWrite: [], denyWrite: [] }, network: { allowedDomains: [], deniedDomains: [] } }));
    return file;
  };
  const tools = [{ name: 'srt', argv: (cmd, file) => [SRT, ...(file ? ['--settings', file] : []), '--', ...cmd], env: (b) => b }, ...peers];
  const configs = tools.flatMap((tool) => SIZES.flatMap((size) => [false, true].map((deny) => {
    const home = homes.get(size);
    const env = tool.env({ PATH: process.env.PATH, HOME: home, LANG: 'C.UTF-8' });
    return { tool, size, deny, argv: tool.argv(['/bin/true'], deny ? denies(home) : undefined), env, times: [] };
  })));
  for (let round = 0; round <= RUNS; round++) {
    for (const c of configs) {
      const t0 = process.hrtime.bigint();
      const r = spawnSync(c.argv[0], c.argv.slice(1), { cwd: proj, env: c.env, stdio: ['ignore', 'ignore', 'pipe'] });
      const ms = Number(process.hrtime.bigint() - t0) / 1e6;
      if (r.status !== 0) throw new Error(`${c.argv.join(' ')} exited ${r.status}: ${r.stderr}`);
      if (round > 0) c.times.push(ms); // round 0 warms the caches
    }
  }
  const rows = [];
  for (const tool of tools) {
    const who = tool.name === 'srt' ? '' : ` [${tool.name}]`;
    for (const size of SIZES) {
      const [base, deny] = configs.filter((c) => c.tool === tool && c.size === size).map((c) => median(c.times));
      rows.push([`home of ${size} entries: srt -- /bin/true (median ms)${who}`, base.toFixed(0)]);
      rows.push([`home of ${size} entries: with denyRead ~/.ssh, ~/.aws/credentials${who}`, `${deny.toFixed(0)} (x${(deny / base).toFixed(2)}, ${deny >= base ? '+' : ''}${(deny - base).toFixed(0)} ms)`]);
    }
  }
  report(rows);
} finally {
  s.cleanup();
}
