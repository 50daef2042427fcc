// Proxy behaviour a review found untested (deleting the code left every test green): request
// framing that keeps a body from being read as a second request upstream, and the request
// inspection point every forwarded request passes (rewrite, refuse, body replaced).
import http from 'node:http';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startProxy, type ProxyHandle } from '../../src/proxy/server.js';
import { closeServer, exchange, listenOn, network } from './proxy-fixtures.js';

let origin: http.Server;
let A = 0;
const seen: Array<{ method: string; url: string; headers: http.IncomingHttpHeaders; body: string }> = [];
let proxy: ProxyHandle;

beforeAll(async () => {
  origin = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString('latin1')));
    req.on('end', () => {
      seen.push({ method: req.method!, url: req.url!, headers: req.headers, body });
      if (req.url === '/no-content') res.writeHead(204).end();
      // What a GET would get, announced: S3's HEAD Object, say.
      else if (req.method === 'HEAD') res.writeHead(200, { 'Content-Length': Buffer.byteLength(`ok ${req.url}`) }).end();
      else res.end(`ok ${req.url}`);
    });
  });
  A = await listenOn(origin);
  proxy = await startProxy({
    network: network({ allow: [`127.0.0.1:${A}`] }),
    listen: { http: { host: '127.0.0.1', port: 0 }, socks: { host: '127.0.0.1', port: 0 } },
    upstreamEnv: {},
    // The inspection point (a pipeline stage): rewrite one header, refuse on another, replace a body.
    stages: [
      {
        name: 'test',
        request: (req) => {
          const get = (name: string) => req.headers.find(([k]) => k.toLowerCase() === name)?.[1];
          if (get('x-refuse') !== undefined) return { refuse: 'refused by the inspection hook' };
          req.headers = req.headers.map(([k, v]): [string, string] => (k.toLowerCase() === 'x-rewrite' ? [k, 'rewritten'] : [k, v]));
          if (get('x-drop-length-of-bodies') !== undefined) dropLength.add(req);
          if (get('x-replace-body') !== undefined) {
            req.headers = req.headers.filter(([k]) => k.toLowerCase() !== 'content-length');
            req.body = Readable.from([Buffer.from('replaced body')]);
          }
        },
        // A response stage that rewrites bodies drops their Content-Length (as the credential stage
        // does when its rewrites change lengths): bodiless responses must keep theirs.
        response: (res, req) => {
          if (dropLength.has(req) && res.body) res.headers = res.headers.filter(([k]) => k.toLowerCase() !== 'content-length');
        },
      },
    ],
  });
});
const dropLength = new WeakSet<object>();

afterAll(async () => {
  await proxy?.close();
  await closeServer(origin);
});

describe('request framing', () => {
  it('a GET with a chunked body reaches the upstream as one framed request, never as a smuggled second one', async () => {
    seen.length = 0;
    const inner = 'GET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n';
    const req = `GET http://127.0.0.1:${A}/first HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n`
      + `${inner.length.toString(16)}\r\n${inner}\r\n0\r\n\r\n`;
    const reply = await exchange(proxy.httpPort!, req);
    expect(reply).toMatch(/^HTTP\/1\.1 200 /);
    expect(seen.map((r) => r.url)).toEqual(['/first']);
    expect(seen[0]!.body).toBe(inner);
  });
});

describe('bodiless responses', () => {
  it('a HEAD response (and a 204) reaches the response stages without a body and keeps its Content-Length', async () => {
    const head = await exchange(proxy.httpPort!, `HEAD http://127.0.0.1:${A}/x HTTP/1.1\r\nHost: 127.0.0.1:${A}\r\nX-Drop-Length-Of-Bodies: 1\r\nConnection: close\r\n\r\n`);
    expect(head).toMatch(/^HTTP\/1\.1 200 /);
    expect(head).toMatch(/\r\ncontent-length: 5\r\n/i);
    const get = await exchange(proxy.httpPort!, `GET http://127.0.0.1:${A}/x HTTP/1.1\r\nHost: 127.0.0.1:${A}\r\nX-Drop-Length-Of-Bodies: 1\r\nConnection: close\r\n\r\n`);
    expect(get).not.toMatch(/\r\ncontent-length:/i);
    expect(get).toMatch(/ok \/x/);
    const empty = await exchange(proxy.httpPort!, `GET http://127.0.0.1:${A}/no-content HTTP/1.1\r\nHost: 127.0.0.1:${A}\r\nX-Drop-Length-Of-Bodies: 1\r\nConnection: close\r\n\r\n`);
    expect(empty).toMatch(/^HTTP\/1\.1 204 /);
  });
});

describe('the request inspection point', () => {
  const send = (headers: Record<string, string>, body?: string) => new Promise<{ status: number; text: string; reason: string }>((resolve, reject) => {
    const r = http.request({ host: '127.0.0.1', port: proxy.httpPort!, method: body ? 'POST' : 'GET', path: `http://127.0.0.1:${A}/hook`, headers }, (res) => {
      let text = '';
      res.on('data', (c) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode!, text, reason: res.statusMessage ?? '' }));
    });
    r.on('error', reject);
    r.end(body);
  });

  it('sees every forwarded request: what it rewrites is what the upstream gets', async () => {
    seen.length = 0;
    const r = await send({ 'X-Rewrite': 'original', 'X-Other': 'kept' });
    expect(r.status).toBe(200);
    expect(seen[0]!.headers['x-rewrite']).toBe('rewritten');
    expect(seen[0]!.headers['x-other']).toBe('kept');
  });

  it('a refusal answers 403 with the reason and nothing reaches the upstream', async () => {
    seen.length = 0;
    const r = await send({ 'X-Refuse': '1' }, 'secret body');
    expect(r.status).toBe(403);
    expect(r.reason).toContain('refused by the inspection hook');
    expect(seen).toEqual([]);
  });

  it('a replaced body is what the upstream receives, framed', async () => {
    seen.length = 0;
    const r = await send({ 'X-Replace-Body': '1' }, 'original body');
    expect(r.status).toBe(200);
    expect(seen[0]!.body).toBe('replaced body');
  });
});
