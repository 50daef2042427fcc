// The upstream connections the HTTP proxy holds per client connection (upstream-send.ts,
// HeldConnections): a held connection carries the next request only to its own destination,
// each request is judged again before it may use one, a connection the origin closed between
// requests is replaced, pipelined requests share at most eight, and all go with the client.
import http from 'node:http';
import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Transform } from 'node:stream';
import { RefusedError, through, type Stage } from '../../src/proxy/pipeline.js';
import { startProxy, type ProxyHandle } from '../../src/proxy/server.js';
import { closeServer, listenOn, network } from './proxy-fixtures.js';

/** An origin that names itself and the upstream connection (numbered in order) each answer came on. */
class Origin {
  readonly server: http.Server;
  port = 0;
  requests: string[] = [];
  open = new Set<Socket>();
  maxOpen = 0;
  private ids = new WeakMap<Socket, number>();
  private next = 0;
  constructor(readonly name: string) {
    this.server = http.createServer({ keepAliveTimeout: 30_000 }, (req, res) => {
      this.requests.push(req.url!);
      const body = `${this.name} conn=${this.ids.get(req.socket)} ${req.url}\n`;
      if (req.method === 'POST') {
        let n = 0;
        req.on('data', (d: Buffer) => (n += d.length));
        req.on('end', () => res.end(`${body.trim()} got ${n}\n`));
        req.on('close', () => void (req.complete || this.requests.push(`${req.url} cut`)));
      } else if (req.url === '/slow') setTimeout(() => res.end(body), 100);
      else if (req.url === '/last') res.setHeader('Connection', 'close').end(body);
      else res.end(body);
    });
    this.server.on('connection', (s: Socket) => {
      this.ids.set(s, ++this.next);
      this.open.add(s);
      this.maxOpen = Math.max(this.maxOpen, this.open.size);
      s.on('close', () => this.open.delete(s));
    });
  }
  async start(): Promise<this> {
    this.port = await listenOn(this.server);
    return this;
  }
  get connections(): number {
    return this.next;
  }
}

let a: Origin, b: Origin;
beforeAll(async () => {
  [a, b] = await Promise.all([new Origin('a').start(), new Origin('b').start()]);
});
afterAll(async () => {
  await Promise.all([a, b].map((o) => closeServer(o.server)));
});

/** One client connection to the proxy; each `get` waits for its answer before the next is sent. */
function clientConnection(p: ProxyHandle) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const sockets = new Set<Socket>();
  const get = (url: string, post?: string[]) =>
    new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = http.request({ host: '127.0.0.1', port: p.httpPort, path: url, agent, method: post ? 'POST' : 'GET' }, (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (d) => (body += d));
        res.on('end', () => resolve({ status: res.statusCode!, body }));
      });
      req.on('socket', (s: Socket) => sockets.add(s));
      req.on('error', reject);
      // A body in chunks, each written once the one before has left.
      const send = async () => {
        for (const chunk of post ?? []) {
          await new Promise<void>((r) => req.write(chunk, () => r()));
          await new Promise((r) => setTimeout(r, 50));
        }
        req.end();
      };
      void send();
    });
  return { get, sockets, close: () => agent.destroy() };
}

async function until(cond: () => boolean, what: string): Promise<void> {
  for (const end = Date.now() + 20_000; !cond(); ) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

async function proxyFor(allow: string[], stages: Stage[] = []): Promise<ProxyHandle> {
  return startProxy({ network: network({ allow }), stages, listen: { http: { host: '127.0.0.1', port: 0 }, socks: { host: '127.0.0.1', port: 0 } }, upstreamEnv: {} });
}

describe('upstream connections held per client connection', () => {
  it('a second request to another host:port is judged and dialled on its own; the held one serves only its destination', async () => {
    const p = await proxyFor([`127.0.0.1:${a.port}`, `127.0.0.1:${b.port}`, `localhost:${a.port}`]);
    const c = clientConnection(p);
    const [ca, cb] = [a.connections, b.connections];
    try {
      const r1 = await c.get(`http://127.0.0.1:${a.port}/1`);
      const r2 = await c.get(`http://127.0.0.1:${b.port}/2`);
      const r3 = await c.get(`http://127.0.0.1:${a.port}/3`);
      // The same address and port under another name is another destination.
      const r4 = await c.get(`http://localhost:${a.port}/4`);
      const r5 = await c.get(`http://127.0.0.1:${b.port}/5`);
      expect(c.sockets.size).toBe(1); // one client connection throughout
      expect([r1, r2, r3, r4, r5].map((r) => r.status)).toEqual([200, 200, 200, 200, 200]);
      expect(r1.body).toBe(`a conn=${ca + 1} /1\n`);
      expect(r2.body).toBe(`b conn=${cb + 1} /2\n`);
      expect(r3.body).toBe(`a conn=${ca + 1} /3\n`); // the held connection to a, reused
      expect(r4.body).toBe(`a conn=${ca + 2} /4\n`);
      expect(r5.body).toBe(`b conn=${cb + 1} /5\n`);
    } finally {
      c.close();
      await p.close();
    }
  });

  it('a request the policy now refuses is refused on a connection that holds an upstream to it, and reaches nothing', async () => {
    const allowA = network({ allow: [`127.0.0.1:${a.port}`] });
    const p = await proxyFor([`127.0.0.1:${a.port}`]);
    const c = clientConnection(p);
    try {
      expect((await c.get(`http://127.0.0.1:${a.port}/before`)).status).toBe(200);
      const seen = a.requests.length;
      p.setNetwork(network({}));
      const refused = await c.get(`http://127.0.0.1:${a.port}/refused`);
      expect(refused.status).toBe(403);
      expect(refused.body).toContain('blocked');
      // The address guard too: the host is still listed, its address is not.
      p.setNetwork(network({ allow: [`127.0.0.1:${a.port}`], deniedResolvedAddresses: ['127.0.0.1/32'] }));
      expect((await c.get(`http://127.0.0.1:${a.port}/guarded`)).status).toBe(403);
      expect(a.requests.length).toBe(seen);
      p.setNetwork(allowA);
      const after = await c.get(`http://127.0.0.1:${a.port}/after`);
      expect(after.status).toBe(200);
      expect(c.sockets.size).toBe(1);
      expect(a.requests.slice(seen)).toEqual(['/after']);
    } finally {
      c.close();
      await p.close();
    }
  });

  it('a request a stage refuses mid-body ends its upstream connection; the next request gets a new one', async () => {
    // Refuses a request body at the first STOP, after the bytes before it went upstream.
    const stop: Stage = {
      name: 'stop',
      request: (req) => {
        if (!req.body) return;
        req.body = through(req.body, new Transform({
          transform(chunk: Buffer, _e, cb) {
            const at = chunk.indexOf('STOP');
            if (at === -1) return cb(null, chunk);
            this.push(chunk.subarray(0, at));
            cb(new RefusedError({ refuse: 'a STOP in the body' }));
          },
        }));
      },
    };
    const p = await proxyFor([`127.0.0.1:${a.port}`], [stop]);
    const c = clientConnection(p);
    try {
      const first = await c.get(`http://127.0.0.1:${a.port}/first`);
      const conn = Number(/conn=(\d+)/.exec(first.body)![1]);
      const ok = await c.get(`http://127.0.0.1:${a.port}/upload`, ['aaaa', 'bbbb']);
      expect(ok.body).toBe(`a conn=${conn} /upload got 8\n`); // a whole body, on the held connection
      const refused = await c.get(`http://127.0.0.1:${a.port}/upload`, ['aaaa', 'bbSTOPbb', 'cccc']);
      expect(refused.status).toBe(403);
      expect(refused.body).toContain('a STOP in the body');
      await until(() => a.requests.includes('/upload cut'), 'the origin to see the cut request');
      const next = await c.get(`http://127.0.0.1:${a.port}/next`);
      expect(next).toEqual({ status: 200, body: `a conn=${conn + 1} /next\n` });
      expect(p.violations()).toEqual([{ host: '127.0.0.1', port: a.port, reason: 'a STOP in the body' }]);
    } finally {
      c.close();
      await p.close();
    }
  });

  it('an upstream that closes between requests is replaced for the next one', async () => {
    const p = await proxyFor([`127.0.0.1:${a.port}`]);
    const c = clientConnection(p);
    try {
      const first = await c.get(`http://127.0.0.1:${a.port}/first`);
      const conn = Number(/conn=(\d+)/.exec(first.body)![1]);
      // The origin drops its idle connections (a keep-alive timeout, a restart).
      for (const s of a.open) s.destroy();
      await until(() => a.open.size === 0, 'the origin to drop its connections');
      await new Promise((r) => setTimeout(r, 100)); // the proxy sees the close
      const second = await c.get(`http://127.0.0.1:${a.port}/second`);
      expect(second).toEqual({ status: 200, body: `a conn=${conn + 1} /second\n` });
      // An answer with Connection: close is not held either.
      const last = await c.get(`http://127.0.0.1:${a.port}/last`);
      expect(last.body).toBe(`a conn=${conn + 1} /last\n`);
      const third = await c.get(`http://127.0.0.1:${a.port}/third`);
      expect(third).toEqual({ status: 200, body: `a conn=${conn + 2} /third\n` });
      expect(c.sockets.size).toBe(1);
    } finally {
      c.close();
      await p.close();
    }
  });

  it('pipelined requests use at most eight upstream connections, answered in order; they close with the client', async () => {
    const p = await proxyFor([`127.0.0.1:${a.port}`]);
    const before = a.connections;
    a.maxOpen = a.open.size;
    const s = connect(p.httpPort!, '127.0.0.1');
    s.on('error', () => undefined);
    let out = '';
    s.on('data', (d) => (out += d.toString()));
    try {
      s.write(Array.from({ length: 12 }, () => `GET http://127.0.0.1:${a.port}/slow HTTP/1.1\r\nHost: x\r\n\r\n`).join(''));
      await until(() => (out.match(/\/slow\n/g) ?? []).length === 12, 'twelve answers');
      expect(out.match(/^HTTP\/1\.1 \d+/gm)).toEqual(Array(12).fill('HTTP/1.1 200'));
      expect(a.connections - before).toBe(8);
      expect(a.maxOpen).toBe(8);
      s.destroy();
      await until(() => a.open.size === 0, 'the upstream connections to close with the client');
    } finally {
      s.destroy();
      await p.close();
    }
  });
});
