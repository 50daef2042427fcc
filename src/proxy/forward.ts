// Forwarded host loopback ports (SPEC §6 "Local services"; the listeners: local-services.ts).
// The relay inside the sandbox hands every connection to 127.0.0.1:PORT / [::1]:PORT to a Unix
// socket served here. Each is a plain TCP stream with no proxy protocol, judged by the gate like
// any other connection (decision, address guard, log, violations; a --control-fd update applies
// to the next one) and then spliced to the host's loopback. A refused one is closed at once.
// Its client bytes pass the stages' tunnel guard like an opaque tunnel's (the credential
// tripwire: a sentinel on its way to a local service is stopped too).

import { createServer, type Server, type Socket } from 'node:net';
import { upstreamErrorReason, type Gate } from './gate.js';
import type { Stage } from './pipeline.js';
import { guardTunnel, splice } from './tunnel.js';

export function createForwardServer(gate: Gate, host: string, port: number, stages: readonly Stage[]): Server {
  return createServer({ allowHalfOpen: true, pauseOnConnect: true }, (client: Socket) => {
    gate.track(client);
    client.on('error', () => client.destroy());
    void (async () => {
      const auth = await gate.authorize(host, port, 'forward');
      if (!auth.ok) return void client.destroy();
      let upstream: Socket;
      try {
        upstream = await gate.dial(auth.target);
      } catch (e) {
        gate.log(`proxy: forward upstream ${auth.target.display}: ${upstreamErrorReason(e)}`);
        return void client.destroy();
      }
      if (client.destroyed) return void upstream.destroy();
      splice(client, upstream, guardTunnel(gate, stages, { target: auth.target, via: 'forward' }));
    })();
  });
}
