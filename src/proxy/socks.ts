// SOCKS5 proxy (SPEC §6): CONNECT only (BIND/UDP ASSOCIATE → "command not supported"),
// domain, IPv4 and IPv6 address types. @pondwader/socks5-server speaks the protocol; every
// connection is judged by the same Gate as HTTP (decide + address guard), a refusal is reply
// 0x02 (connection not allowed by ruleset), and the upstream is dialed before the reply so a
// dial failure is reported with the matching SOCKS status.

import { createServer, type Server, type Socket } from 'node:net';
import { Socks5Server } from '@pondwader/socks5-server';
import { upstreamErrorReason, type Gate } from './gate.js';
import type { AdmittedTunnel, Tunnels } from './tunnel.js';

type Status = 'CONNECTION_REFUSED' | 'HOST_UNREACHABLE' | 'NETWORK_UNREACHABLE' | 'GENERAL_FAILURE';

function failureStatus(e: unknown): Status {
  switch ((e as NodeJS.ErrnoException).code) {
    case 'ECONNREFUSED':
      return 'CONNECTION_REFUSED';
    case 'ENETUNREACH':
      return 'NETWORK_UNREACHABLE';
    case 'ETIMEDOUT':
    case 'EHOSTUNREACH':
      return 'HOST_UNREACHABLE';
    default:
      return 'GENERAL_FAILURE';
  }
}

interface Meta {
  upstream?: Socket;
  tunnel?: AdmittedTunnel;
  failure?: Status;
}

export function createSocksProxy(gate: Gate, tunnels: Tunnels, opts: { handshakeTimeoutMs: number }): Server {
  const socks = new Socks5Server();
  socks.setRulesetValidator(async (conn) => {
    const meta = conn.metadata as Meta;
    try {
      const auth = await gate.authorize(conn.destAddress, conn.destPort, 'socks');
      if (!auth.ok) return false;
      const admitted = tunnels.admit(auth.target, 'socks');
      if (!admitted.ok) {
        if (admitted.refusal.proxyError !== 'too-many-tunnels') return false; // a stage refused it: 0x02
        // Over the tunnel cap: a server failure (0x01), not a ruleset refusal.
        meta.failure = 'GENERAL_FAILURE';
        return true;
      }
      if (conn.socket.destroyed) {
        admitted.slot.release();
        return false;
      }
      try {
        meta.upstream = await gate.dial(auth.target);
        meta.tunnel = admitted.slot;
      } catch (e) {
        admitted.slot.release();
        gate.log(`proxy: socks upstream ${auth.target.display}: ${upstreamErrorReason(e)}`);
        meta.failure = failureStatus(e);
      }
      return true;
    } catch {
      return false;
    }
  });
  socks.setConnectionHandler((conn, sendStatus) => {
    const meta = conn.metadata as Meta;
    const client = conn.socket as Socket;
    const upstream = meta.upstream;
    const tunnel = meta.tunnel;
    if (!upstream || !tunnel) return sendStatus(meta.failure ?? 'GENERAL_FAILURE');
    if (client.destroyed) {
      tunnel.release();
      upstream.destroy();
      return;
    }
    client.setTimeout(0);
    sendStatus('REQUEST_GRANTED');
    tunnels.serve(client, upstream, tunnel, Buffer.alloc(0));
  });

  return createServer((socket) => {
    gate.track(socket);
    socket.setNoDelay(true);
    socket.on('error', () => socket.destroy());
    // The library has no handshake timeout: a client that never finishes the greeting is dropped.
    socket.setTimeout(opts.handshakeTimeoutMs, () => socket.destroy());
    socks._handleConnection(socket);
  });
}
