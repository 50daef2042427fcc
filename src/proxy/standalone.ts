// `srt proxy`: srt's filtering proxies alone, on loopback, with the merged policy, until
// SIGINT/SIGTERM. Always srt's own filter (httpProxyPort/socksProxyPort are ignored here: they
// say which proxy a *sandbox* should use, and this command is that proxy).

import type { Policy } from '../policy.js';
import { formatViolation, startProxy } from './server.js';

export interface StandaloneOptions {
  network: Policy['network'];
  /** 0 = any free port. */
  httpPort: number;
  socksPort: number;
  debug: boolean;
  /** Where the URLs go (stdout) and where refusals/debug go (stderr). */
  out: (line: string) => void;
  err: (line: string) => void;
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
  const proxy = await startProxy({
    network,
    listen: { http: { host: '127.0.0.1', port: opts.httpPort }, socks: { host: '127.0.0.1', port: opts.socksPort } },
    ...(opts.debug ? { log: (l: string) => opts.err(`srt[debug]: ${l}`) } : {}),
  });
  opts.out(`HTTP proxy:   http://127.0.0.1:${proxy.httpPort}`);
  opts.out(`SOCKS5 proxy: socks5h://127.0.0.1:${proxy.socksPort}`);
  await stop;
  await proxy.close();
  for (const v of proxy.violations()) opts.err(formatViolation(v));
  return 0;
}
