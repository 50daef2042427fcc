// Forwarded host loopback ports (SPEC §6 "Local services"; the listeners: local-services.ts).
// The relay inside the sandbox hands every connection to 127.0.0.1:PORT / [::1]:PORT to a Unix
// socket served here. Each is a plain TCP stream with no proxy protocol, judged by the gate like
// any other connection (decision, address guard, log, violations; a --control-fd update applies
// to the next one), dialled to the host's loopback, and then treated exactly like a CONNECT
// tunnel to the same host and port (tunnel.ts): with TLS termination on, a client that starts
// TLS is terminated, so an inject host reached as `localhost:PORT` gets its credentials injected
// and every other sentinel is stopped by the tripwire (SPEC §7); anything else is relayed with
// its client bytes under the stages' tunnel guard. A refused one is closed at once.

import { createServer, type Server, type Socket } from 'node:net';
import { upstreamErrorReason, type Gate } from './gate.js';
import type { Tunnels } from './tunnel.js';

export function createForwardServer(gate: Gate, tunnels: Tunnels, host: string, port: number): Server {
  return createServer({ allowHalfOpen: true, pauseOnConnect: true }, (client: Socket) => {
    gate.track(client);
    client.on('error', () => client.destroy());
    void (async () => {
      const auth = await gate.authorize(host, port, 'forward');
      if (!auth.ok) return void client.destroy();
      const admitted = tunnels.admit(auth.target, 'forward');
      if (!admitted.ok) return void client.destroy();
      let upstream: Socket;
      try {
        upstream = await gate.dial(auth.target);
      } catch (e) {
        admitted.slot.release();
        gate.log(`proxy: forward upstream ${auth.target.display}: ${upstreamErrorReason(e)}`);
        return void client.destroy();
      }
      if (client.destroyed) {
        admitted.slot.release();
        return void upstream.destroy();
      }
      tunnels.serve(client, upstream, admitted.slot, Buffer.alloc(0));
    })();
  });
}
