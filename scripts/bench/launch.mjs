// Launch overhead as a user gets it: the real launcher (bin/srt, run as a program: sh, then node)
// running `srt -- /bin/true`, against `node -e 0` and a bare bubblewrap run, interleaved round by
// round. In a minimal environment and in the user's (here: NODE_EXTRA_CA_CERTS set, which alone
// costs node ~30-40 ms); with no settings (no domain allowed: the network is off, the proxy
// still runs to report refusals), a domain allowed, TLS termination configured (unused) and a
// credential masked; and without the code cache (SRT_NO_CODE_CACHE=1:
// every chunk compiled from source, as before src/code-cache.ts).
// Usage: node scripts/bench/launch.mjs [--vs LIST] [--rounds N]: with --vs (lib.mjs peersFromArgs:
// reference, codex, or another srt-compatible CLI such as a build of an older commit), the same
// default figure for each, run the same way.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { BWRAP, median, peersFromArgs, timeCommand, scratch, report, SRT } from './lib.mjs';

const arg = (name) => {
  const i = process.argv.indexOf(name);
  return i === -1 ? undefined : process.argv[i + 1];
};
const peers = peersFromArgs();
const rounds = Number(arg('--rounds') ?? 3);
const CA_FILE = '/etc/ssl/certs/ca-certificates.crt';
const s = scratch();
const settings = (name, body) => {
  const file = join(s.dir, `${name}.json`);
  writeFileSync(file, JSON.stringify(body));
  return file;
};
const minimal = { PATH: process.env.PATH, HOME: s.dir, LANG: 'C.UTF-8' };
const user = { ...minimal, NODE_EXTRA_CA_CERTS: CA_FILE };
const tls = settings('tls', { network: { allowedDomains: ['example.com'], tlsTerminate: {} } });
const masked = settings('masked', { network: { allowedDomains: ['example.com'] }, credentials: { envVars: [{ name: 'GH_TOKEN', mode: 'mask' }] } });
const allowed = settings('allowed', { network: { allowedDomains: ['example.com'] } });
const t = (argv, env = minimal) => ({ argv, env });
const cases = {
  node: t([process.execPath, '-e', '0']),
  nodeUser: t([process.execPath, '-e', '0'], user),
  bwrap: t([...BWRAP, '--', '/bin/true']),
  srt: t([SRT, '--', '/bin/true']),
  srtUser: t([SRT, '--', '/bin/true'], user),
  srtNoCache: t([SRT, '--', '/bin/true'], { ...minimal, SRT_NO_CODE_CACHE: '1' }),
  srtAllowed: t([SRT, '--settings', allowed, '--', '/bin/true']),
  srtTls: t([SRT, '--settings', tls, '--', '/bin/true']),
  srtMasked: t([SRT, '--settings', masked, '--', '/bin/true'], { ...minimal, GH_TOKEN: `ghp_${'a'.repeat(36)}` }),
  ...Object.fromEntries(peers.map((p) => [`vs:${p.name}`, t(p.argv(['/bin/true']), p.env(minimal))])),
};
try {
  const times = Object.fromEntries(Object.keys(cases).map((k) => [k, []]));
  for (let round = 0; round < rounds; round++) {
    for (const [k, c] of Object.entries(cases)) times[k].push(timeCommand(c.argv, { cwd: s.dir, env: c.env, runs: 10, warmup: 2 }));
  }
  const m = Object.fromEntries(Object.entries(times).map(([k, v]) => [k, median(v)]));
  const ms = (x) => x.toFixed(1);
  const ratio = (a, b) => (a / b).toFixed(2);
  const rows = [
    ['node -e 0 (median ms)', ms(m.node)],
    ['node -e 0, NODE_EXTRA_CA_CERTS set (median ms)', ms(m.nodeUser)],
    ['bare bwrap /bin/true (median ms)', ms(m.bwrap)],
    ['srt -- /bin/true (median ms)', ms(m.srt)],
    ['srt, NODE_EXTRA_CA_CERTS set (median ms)', ms(m.srtUser)],
    ['srt, without the code cache (median ms)', ms(m.srtNoCache)],
    ['srt, a domain allowed (median ms)', ms(m.srtAllowed)],
    ['srt, TLS termination configured (median ms)', ms(m.srtTls)],
    ['srt, a credential masked (median ms)', ms(m.srtMasked)],
    ['srt / node -e 0 (target <= 2.5)', ratio(m.srt, m.node)],
    ['srt / node -e 0, both with NODE_EXTRA_CA_CERTS', ratio(m.srtUser, m.nodeUser)],
    ['srt / srt without the code cache', ratio(m.srt, m.srtNoCache)],
    ['a domain allowed / no settings', ratio(m.srtAllowed, m.srt)],
    ['TLS configured / a domain allowed (target <= 1.1)', ratio(m.srtTls, m.srtAllowed)],
    ['masked credential / a domain allowed', ratio(m.srtMasked, m.srtAllowed)],
    ['srt / bare bwrap', ratio(m.srt, m.bwrap)],
  ];
  for (const p of peers) {
    const v = m[`vs:${p.name}`];
    rows.push([`${p.name}: /bin/true (median ms)`, ms(v)], [`  srt / ${p.name}`, ratio(m.srt, v)], [`  ${p.name} / node -e 0`, ratio(v, m.node)]);
  }
  report(rows);
} finally {
  s.cleanup();
}
