// The client side of an exchange (exchange.ts): an HTTP/1.1 response, an HTTP/1.1 upgrade on a
// raw socket, or an HTTP/2 stream. Every body is pumped with backpressure.

import http from 'node:http';
import type { OutgoingHttpHeaders, ServerHttp2Stream } from 'node:http2';
import type { Duplex, Readable } from 'node:stream';
import { bulkCounter } from './bulk.js';
import { Stopper, type Frontend } from './exchange.js';
import { toH2Headers } from './h2-headers.js';
import { upgradedTo } from './upstream-send.js';

/** ASCII-only, short: for status lines and header values that echo input. */
function phrase(text: string): string {
  return text.replace(/[^\x20-\x7e]/g, '?').slice(0, 200);
}

/**
 * Pump `from` into `to` with backpressure (a fraction of pipe()'s per-request listeners, on the
 * path every body takes); `onEnd` when `from` ends. A failure of `from` is the exchange's to
 * answer (it watches every body).
 */
function pump(from: Readable, to: NodeJS.WritableStream & { on(e: 'drain', l: () => void): unknown }, onEnd: () => void): void {
  const count = bulkCounter(from);
  from.on('data', (chunk: Buffer) => {
    count(chunk.length);
    if (!to.write(chunk)) from.pause();
  });
  to.on('drain', () => from.resume());
  from.once('end', onEnd);
}

/** An HTTP/1.1 response (plain proxy requests and terminated HTTP/1.1 connections). */
export function h1Frontend(res: http.ServerResponse): Frontend {
  const stopper = new Stopper();
  let body: Readable | null = null;
  res.on('close', () => {
    if (res.writableFinished) return;
    stopper.stop();
    body?.destroy();
  });
  const reply: Frontend['reply'] = (status, statusPhrase, body, headers) => {
    if (res.headersSent) {
      res.destroy();
      return;
    }
    if (res.destroyed) return;
    res.writeHead(status, phrase(statusPhrase), { ...headers, 'Content-Type': 'text/plain; charset=utf-8', 'Content-Length': Buffer.byteLength(body) });
    res.end(body);
  };
  return {
    stopper,
    reply,
    respond(r) {
      if (res.destroyed) {
        r.body?.destroy();
        return;
      }
      res.writeHead(r.status, r.statusMessage || undefined, r.headers.flat() as unknown as http.OutgoingHttpHeaders);
      body = r.body;
      if (!body) {
        res.end();
        return;
      }
      // The head goes out now, not with the first body chunk: a server-sent event stream's
      // client needs it before the first event, which may be seconds away. A body that has
      // bytes or its end already buffered takes the head out with them at once.
      if (body.readableLength === 0 && !body.readableEnded) {
        let wrote = false;
        body.once('data', () => (wrote = true));
        setImmediate(() => {
          if (!wrote && !res.destroyed && !res.writableEnded) res.flushHeaders();
        });
      }
      // The client going away destroys it (the close listener above); a stop by the exchange
      // comes with the exchange destroying it.
      pump(body, res, () => res.end());
    },
    upgrade(_r, socket) {
      socket.destroy();
      res.destroy();
    },
    reset: () => res.destroy(),
  };
}

/** Serialize a small response on a raw socket (CONNECT/upgrade/parse failures) and close it. */
export function rawReply(socket: Duplex, status: number, statusPhrase: string, body: string, headers: Record<string, string> = {}): void {
  if (socket.destroyed) return;
  const head = [`HTTP/1.1 ${status} ${phrase(statusPhrase)}`];
  for (const [k, v] of Object.entries({ ...headers, 'Content-Type': 'text/plain; charset=utf-8', 'Content-Length': String(Buffer.byteLength(body)), Connection: 'close' })) {
    head.push(`${k}: ${v}`);
  }
  socket.end(`${head.join('\r\n')}\r\n\r\n${body}`);
  setTimeout(() => socket.destroy(), 1000).unref();
}

/**
 * The client of an HTTP/1.1 upgrade request (node:http hands it over as a raw socket): a 101
 * from upstream splices the two sockets; any other answer is written out and the connection
 * closed (it can carry nothing else after an upgrade request).
 */
export function upgradeFrontend(client: Duplex, splice: (a: Duplex, b: Duplex) => void): Frontend {
  const stopper = new Stopper();
  client.on('close', () => stopper.stop());
  return {
    stopper,
    reply: (status, statusPhrase, body, headers) => rawReply(client, status, statusPhrase, body, headers),
    respond(r) {
      if (client.destroyed) {
        r.body?.destroy();
        return;
      }
      const lines = [`HTTP/1.1 ${r.status} ${phrase(r.statusMessage || http.STATUS_CODES[r.status] || '')}`];
      for (const [k, v] of r.headers) lines.push(`${k}: ${v}`);
      lines.push('Connection: close');
      client.write(`${lines.join('\r\n')}\r\n\r\n`);
      if (!r.body) {
        client.end();
        return;
      }
      const body = r.body;
      stopper.on(() => body.destroy());
      pump(body, client, () => client.end());
    },
    upgrade(r, socket, head) {
      if (client.destroyed) {
        socket.destroy();
        return;
      }
      const lines = [`HTTP/1.1 101 ${phrase(r.statusMessage || 'Switching Protocols')}`];
      for (const [k, v] of r.headers) lines.push(`${k}: ${v}`);
      lines.push('Connection: Upgrade');
      const proto = upgradedTo.get(r);
      if (proto) lines.push(`Upgrade: ${proto}`);
      client.write(`${lines.join('\r\n')}\r\n\r\n`);
      if (head.length > 0) client.write(head);
      splice(client, socket);
    },
    reset: () => client.destroy(),
  };
}

/** One HTTP/2 stream of a terminated connection. */
export function h2Frontend(stream: ServerHttp2Stream): Frontend {
  const stopper = new Stopper();
  stream.on('close', () => {
    if (!stream.writableFinished || stream.rstCode !== 0) stopper.stop();
  });
  stream.on('error', () => undefined); // a reset by the client; 'close' follows
  return {
    stopper,
    reply(status, _statusPhrase, body, headers) {
      if (stream.destroyed || stream.closed) return;
      if (stream.headersSent) {
        stream.close(0x2); // INTERNAL_ERROR
        return;
      }
      const h: OutgoingHttpHeaders = { ':status': status, 'content-type': 'text/plain; charset=utf-8', 'content-length': Buffer.byteLength(body) };
      for (const [k, v] of Object.entries(headers)) h[k.toLowerCase()] = v;
      stream.respond(h);
      stream.end(body);
    },
    respond(r) {
      if (stream.destroyed || stream.closed) {
        r.body?.destroy();
        return;
      }
      const h = toH2Headers(r.headers);
      h[':status'] = r.status;
      const body = r.body;
      if (!body) {
        stream.respond(h, { endStream: true });
        return;
      }
      // Trailers (gRPC's status) are known only once the body has ended.
      stream.respond(h, { waitForTrailers: true });
      // With none, an empty trailer block ends the stream (close() would reset it instead).
      stream.once('wantTrailers', () => stream.sendTrailers(toH2Headers(r.trailers())));
      stopper.on(() => body.destroy());
      pump(body, stream, () => stream.end());
    },
    upgrade(_r, socket) {
      socket.destroy();
      stream.close(0x2);
    },
    reset() {
      if (!stream.destroyed && !stream.closed) stream.close(0x2); // INTERNAL_ERROR
    },
  };
}
