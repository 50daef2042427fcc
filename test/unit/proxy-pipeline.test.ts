// The request/response pipeline on its own: exchange() with a recording frontend and a fake
// upstream, and stages that rewrite, refuse and stream.
import { describe, expect, it } from 'vitest';
import { PassThrough, Readable, Transform } from 'node:stream';
import { createServer, connect, type AddressInfo } from 'node:net';
import { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib';
import { exchange, Stopper, type Frontend, type Upstream, type UpstreamReply } from '../../src/proxy/exchange.js';
import { HeldConnections, sendH1 } from '../../src/proxy/upstream-send.js';
import { endToEndHeaders, formatAuthority, RefusedError, upgradeToForward, type Header, type ProxyRequest, type ProxyResponse, type Refusal, type Stage } from '../../src/proxy/pipeline.js';
import type { Target } from '../../src/proxy/gate.js';

const target: Target = { host: { host: 'api.example' }, port: 443, addresses: ['192.0.2.1'], display: 'api.example:443' };

function request(over: Partial<ProxyRequest> = {}): ProxyRequest {
  return { scheme: 'https', target, method: 'POST', path: '/v1', authority: 'api.example', headers: [['Content-Type', 'text/plain']], body: Readable.from([Buffer.from('hello '), Buffer.from('world')]), upgrade: undefined, ...over };
}

async function text(body: NodeJS.ReadableStream | null): Promise<string> {
  if (!body) return '';
  let out = '';
  for await (const c of body) out += String(c);
  return out;
}

/** A frontend that records what the client would have received. */
function recorder() {
  const stopper = new Stopper();
  const got: { status?: number; phrase?: string; headers?: Header[] | Record<string, string>; body?: Promise<string> } = {};
  let settle!: () => void;
  const done = new Promise<void>((r) => (settle = r));
  const front: Frontend = {
    stopper,
    reply(status, phrase, body, headers) {
      Object.assign(got, { status, phrase, headers, body: Promise.resolve(body) });
      settle();
    },
    respond(res) {
      Object.assign(got, { status: res.status, headers: res.headers, body: text(res.body) });
      settle();
    },
    upgrade() {
      throw new Error('not an upgrade');
    },
    reset() {
      throw new Error('no answer was begun');
    },
  };
  return { front, got, done, abort: () => stopper.stop() };
}

/** An upstream that echoes what it received: the request line, headers and body. */
function echoUpstream(log: ProxyRequest[] = []): Upstream {
  return {
    async send(req): Promise<UpstreamReply> {
      log.push(req);
      const body = await text(req.body);
      const res: ProxyResponse = {
        status: 200,
        statusMessage: 'OK',
        headers: [['X-Seen-Headers', req.headers.map(([k, v]) => `${k}=${v}`).join(';')], ['Content-Type', 'text/plain']],
        body: Readable.from([Buffer.from(`${req.method} ${req.authority}${req.path} ${body}`)]),
        trailers: () => [],
      };
      return { kind: 'response', res };
    },
  };
}

function ctx(stages: Stage[], upstream: Upstream, refusals: string[] = []) {
  return { stages, upstream, refused: (_t: Target, r: Refusal) => refusals.push(r.refuse), log: () => undefined };
}

describe('exchange through stages', () => {
  it('forwards unchanged without stages', async () => {
    const r = recorder();
    await exchange(r.front, request(), ctx([], echoUpstream()));
    await r.done;
    expect(r.got.status).toBe(200);
    expect(await r.got.body).toBe('POST api.example/v1 hello world');
  });

  it('lets request stages rewrite method, path and headers, in order', async () => {
    const order: string[] = [];
    const stages: Stage[] = [
      { name: 'a', request: (req) => void (order.push('a'), req.headers.push(['Authorization', 'Bearer REAL'])) },
      {
        name: 'b',
        request: async (req) => {
          order.push('b');
          await new Promise((res) => setTimeout(res, 5));
          req.path = `${req.path}?signed=1`;
          req.headers = req.headers.filter(([k]) => k !== 'Content-Type');
        },
      },
    ];
    const r = recorder();
    await exchange(r.front, request(), ctx(stages, echoUpstream()));
    await r.done;
    expect(order).toEqual(['a', 'b']);
    expect(await r.got.body).toBe('POST api.example/v1?signed=1 hello world');
    expect(r.got.headers).toContainEqual(['X-Seen-Headers', 'Authorization=Bearer REAL']);
  });

  it('a refusing stage answers 403 with the reason, records it, and nothing goes upstream', async () => {
    const sent: ProxyRequest[] = [];
    const refusals: string[] = [];
    const later: string[] = [];
    const stages: Stage[] = [
      { name: 'no', request: () => ({ refuse: 'sentinel on its way to api.example' }) },
      { name: 'later', request: () => void later.push('ran') },
    ];
    const r = recorder();
    await exchange(r.front, request(), ctx(stages, echoUpstream(sent), refusals));
    await r.done;
    expect(r.got.status).toBe(403);
    expect(r.got.phrase).toBe('Blocked by srt: sentinel on its way to api.example');
    expect(r.got.headers).toMatchObject({ 'X-Proxy-Error': 'blocked-by-srt' });
    expect(await r.got.body).toBe('srt: blocked api.example:443 — sentinel on its way to api.example\n');
    expect(sent).toEqual([]);
    expect(later).toEqual([]);
    expect(refusals).toEqual(['sentinel on its way to api.example']);
  });

  it('a refusal may carry its own status and X-Proxy-Error', async () => {
    const r = recorder();
    await exchange(r.front, request(), ctx([{ name: 'x', request: () => ({ refuse: 'nope', status: 429, proxyError: 'sentinel-not-allowed-here' }) }], echoUpstream()));
    await r.done;
    expect([r.got.status, r.got.phrase]).toEqual([429, 'nope']);
    expect(r.got.headers).toMatchObject({ 'X-Proxy-Error': 'sentinel-not-allowed-here' });
  });

  it('streams a body through a transforming stage chunk by chunk (never buffered whole)', async () => {
    const source = new PassThrough();
    const seenChunks: string[] = [];
    const upper: Stage = {
      name: 'upper',
      request: (req) => {
        req.body = req.body!.pipe(
          new Transform({
            transform(chunk: Buffer, _e, cb) {
              seenChunks.push(chunk.toString());
              cb(null, Buffer.from(chunk.toString().toUpperCase()));
            },
          }),
        );
      },
    };
    const received: string[] = [];
    const upstream: Upstream = {
      send: (req) =>
        new Promise((resolve) => {
          req.body!.on('data', (c: Buffer) => {
            received.push(c.toString());
            // The first chunk arrives before the client has sent the second one.
            if (received.length === 1) source.write('second');
          });
          req.body!.on('end', () =>
            resolve({ kind: 'response', res: { status: 200, statusMessage: 'OK', headers: [], body: Readable.from([Buffer.from(received.join('|'))]), trailers: () => [] } }),
          );
        }),
    };
    const r = recorder();
    const p = exchange(r.front, request({ body: source }), ctx([upper], upstream));
    source.write('first');
    setTimeout(() => source.end(), 20);
    await p;
    await r.done;
    expect(await r.got.body).toBe('FIRST|SECOND');
    expect(seenChunks).toEqual(['first', 'second']);
  });

  it('a body transform that refuses mid-stream aborts the upstream request and answers the refusal', async () => {
    let upstreamSaw = '';
    let aborted = false;
    const tripwire: Stage = {
      name: 'tripwire',
      request: (req) => {
        req.body = req.body!.pipe(
          new Transform({
            transform(chunk: Buffer, _e, cb) {
              if (chunk.includes('SENTINEL')) cb(new RefusedError({ refuse: 'a sentinel in the body', proxyError: 'sentinel-not-allowed-here' }));
              else cb(null, chunk);
            },
          }),
        );
      },
    };
    const upstream: Upstream = {
      send: (req) =>
        new Promise((_resolve, reject) => {
          req.body!.on('data', (c: Buffer) => (upstreamSaw += c.toString()));
          req.body!.on('error', (e) => {
            aborted = true;
            reject(e);
          });
        }),
    };
    // exchange wires body errors into the upstream (sendH1/sendH2 destroy their request with it);
    // here the fake upstream sees the transform's error directly.
    const r = recorder();
    await exchange(r.front, request({ body: Readable.from([Buffer.from('ok part '), Buffer.from('SENTINEL rest')]) }), ctx([tripwire], upstream));
    await r.done;
    expect(aborted).toBe(true);
    expect(upstreamSaw).toBe('ok part ');
    expect(r.got.status).toBe(403);
    expect(r.got.headers).toMatchObject({ 'X-Proxy-Error': 'sentinel-not-allowed-here' });
  });

  it('response stages run in reverse order and may rewrite head and stream the body', async () => {
    const order: string[] = [];
    const stages: Stage[] = [
      {
        name: 'outer',
        response: (res) => {
          order.push('outer');
          res.headers.push(['X-Outer', '1']);
        },
      },
      {
        name: 'inner',
        response: (res) => {
          order.push('inner');
          res.status = 299;
          res.body = res.body!.pipe(
            new Transform({
              transform(chunk: Buffer, _e, cb) {
                cb(null, Buffer.from(chunk.toString().replace('world', '*****')));
              },
            }),
          );
        },
      },
    ];
    const r = recorder();
    await exchange(r.front, request(), ctx(stages, echoUpstream()));
    await r.done;
    expect(order).toEqual(['inner', 'outer']);
    expect(r.got.status).toBe(299);
    expect(r.got.headers).toContainEqual(['X-Outer', '1']);
    expect(await r.got.body).toBe('POST api.example/v1 hello *****');
  });

  it('a response stage may refuse: the upstream body is dropped and the client gets the refusal', async () => {
    const body = new PassThrough();
    const upstream: Upstream = { send: async () => ({ kind: 'response', res: { status: 200, statusMessage: 'OK', headers: [], body, trailers: () => [] } }) };
    const r = recorder();
    await exchange(r.front, request({ body: null }), ctx([{ name: 'r', response: () => ({ refuse: 'response refused' }) }], upstream));
    await r.done;
    expect(r.got.status).toBe(403);
    expect(body.destroyed).toBe(true);
  });

  it('an upstream failure is a 502 with the reason', async () => {
    const upstream: Upstream = { send: async () => Promise.reject(Object.assign(new Error('x'), { code: 'ECONNREFUSED' })) };
    const r = recorder();
    await exchange(r.front, request({ body: null }), ctx([], upstream));
    await r.done;
    expect([r.got.status, r.got.phrase]).toEqual([502, 'upstream api.example:443: ECONNREFUSED']);
    expect(r.got.headers).toMatchObject({ 'X-Proxy-Error': 'upstream-error' });
  });

  it('does not forward a request whose client has already gone', async () => {
    const sent: ProxyRequest[] = [];
    const r = recorder();
    r.abort();
    await exchange(r.front, request({ body: null }), ctx([{ name: 'slow', request: () => undefined }], echoUpstream(sent)));
    expect(sent).toEqual([]);
  });
});

describe('transfer codings from an HTTP/1.1 upstream', () => {
  it('a transfer coding other than chunked is removed (it is hop-by-hop); one srt cannot decode is an upstream error', async () => {
    const plain = 'plaintext body';
    const gz = gzipSync(plain);
    const chunked = (b: Buffer) => Buffer.concat([Buffer.from(`${b.length.toString(16)}\r\n`), b, Buffer.from('\r\n0\r\n\r\n')]);
    const answers: Record<string, Buffer> = {
      '/gzip-chunked': Buffer.concat([Buffer.from('HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n'), chunked(gz)]),
      '/two-lines': Buffer.concat([Buffer.from('HTTP/1.1 200 OK\r\nTransfer-Encoding: br\r\nTransfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n'), chunked(gzipSync(brotliCompressSync(plain)))]),
      '/until-close': Buffer.concat([Buffer.from('HTTP/1.1 200 OK\r\nTransfer-Encoding: deflate\r\nConnection: close\r\n\r\n'), deflateSync(plain)]),
      '/compress': Buffer.concat([Buffer.from('HTTP/1.1 200 OK\r\nTransfer-Encoding: compress, chunked\r\n\r\n'), chunked(Buffer.from('x'))]),
    };
    const server = createServer((socket) => socket.once('data', (d: Buffer) => socket.end(answers[d.toString('latin1').split(' ')[1]!])));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const held = new HeldConnections(async () => connect((server.address() as AddressInfo).port, '127.0.0.1'));
    try {
      for (const path of ['/gzip-chunked', '/two-lines', '/until-close']) {
        const reply = await sendH1(request({ method: 'GET', path, body: null }), held, new Stopper());
        expect(reply.res.headers.map(([k]) => k.toLowerCase()), path).not.toContain('transfer-encoding');
        expect(await text(reply.res.body), path).toBe(plain);
      }
      await expect(sendH1(request({ method: 'GET', path: '/compress', body: null }), held, new Stopper())).rejects.toThrow('Transfer-Encoding compress, which srt cannot decode (it decodes gzip, deflate, br)');
    } finally {
      held.destroy();
      server.close();
    }
  });
});

describe('header helpers', () => {
  it('keep end-to-end headers only: hop-by-hop, Connection-named, Host and pseudo-headers go', () => {
    const raw = ['Host', 'x', 'Connection', 'keep-alive, X-Secret-Hop', 'X-Secret-Hop', '1', 'Keep-Alive', '5', 'Transfer-Encoding', 'chunked',
      'Proxy-Authorization', 'Basic Zm9v', 'TE', 'gzip', ':path', '/', 'Accept', '*/*', 'Set-Cookie', 'a', 'Set-Cookie', 'b', 'Upgrade', 'websocket'];
    expect(endToEndHeaders(raw)).toEqual([['Accept', '*/*'], ['Set-Cookie', 'a'], ['Set-Cookie', 'b']]);
    expect(endToEndHeaders(['TE', 'trailers'])).toEqual([['te', 'trailers']]);
  });

  it('never forwards an upgrade to HTTP itself (what follows would bypass the pipeline)', () => {
    expect(upgradeToForward('websocket')).toBe('websocket');
    expect(upgradeToForward('h2c')).toBeUndefined();
    expect(upgradeToForward('H2C, websocket')).toBe('websocket');
    expect(upgradeToForward('HTTP/2.0')).toBeUndefined();
    expect(upgradeToForward('')).toBeUndefined();
    expect(upgradeToForward(undefined)).toBeUndefined();
  });

  it('formats an authority without the default port, IPv6 bracketed', () => {
    expect(formatAuthority({ host: 'example.com' }, 443, 443)).toBe('example.com');
    expect(formatAuthority({ host: 'example.com' }, 8443, 443)).toBe('example.com:8443');
    expect(formatAuthority({ host: '::1', ip: 6 }, 443, 443)).toBe('[::1]');
    expect(formatAuthority({ host: '::1', ip: 6 }, 80, 443)).toBe('[::1]:80');
  });
});

describe('Stopper', () => {
  it('runs each listener once when stopped, at once when added after, and never one taken off', () => {
    const s = new Stopper();
    const ran: string[] = [];
    const off = () => ran.push('off');
    s.on(() => ran.push('a'));
    s.on(off);
    s.off(off);
    s.stop();
    s.stop();
    s.on(() => ran.push('late'));
    expect(ran).toEqual(['a', 'late']);
    expect(s.stopped).toBe(true);
  });
});
