// `srt proxy`: srt's filtering proxies alone, on loopback, with the merged policy, until
// SIGINT/SIGTERM. Always srt's own filter (httpProxyPort/socksProxyPort are ignored here: they
// say which proxy a *sandbox* should use, and this command is that proxy).

import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Policy } from '../policy.js';
import { formatViolation, startProxy } from './server.js';
import type { Termination } from './trust.js';

export interface StandaloneOptions {
  network: Policy['network'];
  /** 0 = any free port. */
  httpPort: number;
  socksPort: number;
  debug: boolean;
  /** Where the URLs go (stdout) and where refusals/debug go (stderr). */
  out: (line: string) => void;
  err: (line: string) => void;
  /** srt-init, when built (Linux): long opaque tunnels are handed to it (splicer.ts). */
  helperPath?: string;
  /** Resolves when the proxy should stop; default: the first SIGINT or SIGTERM. */
  stop?: Promise<unknown>;
}

function untilSignal(): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    const on = (sig: NodeJS.Signals) => {
      process.off('SIGINT', on);
      process.off('SIGTERM', on);
      resolve(sig);
    };
    process.on('SIGINT', on);
    process.on('SIGTERM', on);
  });
}

export async function runStandaloneProxy(opts: StandaloneOptions): Promise<number> {
  const { httpProxyPort: _h, socksProxyPort: _s, ...network } = opts.network;
  const stop = opts.stop ?? untilSignal();
  // With network.tlsTerminate, clients must trust srt's CA: its certificate (public) goes to a
  // private temporary directory for as long as the proxy runs.
  let termination: Termination | undefined;
  let caDir: string | undefined;
  if (network.tlsTerminate) {
    const { prepareTermination } = await import('./trust.js');
    try {
      termination = prepareTermination(network.tlsTerminate);
    } catch (e) {
      opts.err(`srt: ${(e as Error).message}`);
      return 125;
    }
    caDir = mkdtempSync(join(tmpdir(), 'srt-proxy-ca-'));
    writeFileSync(join(caDir, 'ca.pem'), termination.ca.certPem, { mode: 0o444 });
  }
  try {
    const proxy = await startProxy({
      network,
      listen: { http: { host: '127.0.0.1', port: opts.httpPort }, socks: { host: '127.0.0.1', port: opts.socksPort } },
      ...(opts.debug ? { log: (l: string) => opts.err(`srt[debug]: ${l}`) } : {}),
      ...(termination ? { termination } : {}),
      ...(opts.helperPath ? { splicer: { helperPath: opts.helperPath } } : {}),
    });
    opts.out(`HTTP proxy:   http://127.0.0.1:${proxy.httpPort}`);
    opts.out(`SOCKS5 proxy: socks5h://127.0.0.1:${proxy.socksPort}`);
    if (caDir) opts.out(`TLS CA:       ${join(caDir, 'ca.pem')} (clients must trust it; TLS is terminated)`);
    await stop;
    await proxy.close();
    for (const v of proxy.violations()) opts.err(formatViolation(v));
    return 0;
  } finally {
    if (caDir) rmSync(caDir, { recursive: true, force: true });
  }
}
