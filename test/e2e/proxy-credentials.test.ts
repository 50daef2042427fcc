// The credential stage inside the real proxy (no sandbox): a sentinel in a host name is refused
// before the name is resolved, a WebSocket handshake is injected, plaintext through SOCKS is
// stopped, and a sentinel after the ClientHello of an opaque TLS tunnel passes (srt cannot read it).
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Secret } from '../../src/credentials/plan.js';
import { CredentialStage } from '../../src/credentials/stage.js';
import { parseDomainEntry } from '../../src/proxy/domains.js';
import { startProxy, type ProxyHandle } from '../../src/proxy/server.js';
import { closeServer, exchange, listenOn, network } from './proxy-fixtures.js';

const rule = (e: string) => {
  const p = parseDomainEntry(e, 'allow');
  if (!p.ok) throw new Error(p.error);
  return p.rules[0]!;
};
const GH: Secret = { label: 'GH_TOKEN', real: 'ghp_REALREALREALREALREALREALREALREAL00', sentinel: 'ghp_SENTSENTSENTSENTSENTSENTSENTSENT11', injectHosts: [rule('inject.test')], injectInto: ['headers'], inject: true };

let origin: http.Server;
let raw: Server;
let A = 0;
let R = 0;
const rawSeen: Buffer[] = [];
const upgrades: http.IncomingHttpHeaders[] = [];
const resolved: string[] = [];
let proxy: ProxyHandle;
/** A forwarded host loopback port (SPEC §6 local services) to the raw server, as the sandbox's relay uses it. */
const fwdDir = mkdtempSync(join(tmpdir(), 'srt-fwd-'));
const fwdSocket = join(fwdDir, 'fwd.sock');

beforeAll(async () => {
  origin = http.createServer((_req, res) => res.end('ok'));
  origin.on('upgrade', (req, socket: Socket) => {
    upgrades.push(req.headers);
    socket.end('HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n');
  });
  A = await listenOn(origin);
  raw = createServer((s) => s.on('data', (d: Buffer) => rawSeen.push(d)));
  await new Promise<void>((r) => raw.listen(0, '127.0.0.1', r));
  R = (raw.address() as { port: number }).port;
  proxy = await startProxy({
    network: network({ allow: [`inject.test:${A}`, `other.test:${R}`, '*.wild.test', `127.0.0.1:${R}`] }),
    listen: { http: { host: '127.0.0.1', port: 0 }, socks: { host: '127.0.0.1', port: 0 }, forwards: [{ socketPath: fwdSocket, host: '127.0.0.1', port: R }] },
    resolver: async (h) => { resolved.push(h); return ['127.0.0.1']; },
    upstreamEnv: {},
    testOnlyExemptAddresses: ['127.0.0.1'],
    stages: [new CredentialStage([GH], { allowPlaintextInject: true })],
  });
});

afterAll(async () => {
  await proxy?.close();
  await closeServer(origin);
  await new Promise((r) => raw.close(r));
  rmSync(fwdDir, { recursive: true, force: true });
});

const u16 = (n: number): Buffer => Buffer.from([n >> 8, n & 255]);

describe('the credential stage in the proxy', () => {
  it('a sentinel in a CONNECT host, an absolute URL or a SOCKS name is refused before it is resolved', async () => {
    resolved.length = 0;
    const host = `${GH.sentinel.toLowerCase()}.wild.test`;
    const connectReply = await exchange(proxy.httpPort!, `CONNECT ${host}:443 HTTP/1.1\r\nHost: ${host}:443\r\n\r\n`);
    expect(connectReply).toMatch(/^HTTP\/1\.1 403 /);
    expect(connectReply).toContain('X-Proxy-Error: sentinel-not-allowed-here');
    const getReply = await exchange(proxy.httpPort!, `GET http://${host}/ HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`);
    expect(getReply).toMatch(/^HTTP\/1\.1 403 /);
    expect(getReply).toContain('X-Proxy-Error: sentinel-not-allowed-here');
    // SOCKS5: greeting, then CONNECT to a domain name → reply 0x02 (not allowed).
    const name = Buffer.from(host);
    const socks = await new Promise<Buffer>((resolve, reject) => {
      const s = connect(proxy.socksPort!, '127.0.0.1');
      const got: Buffer[] = [];
      s.on('data', (d: Buffer) => {
        got.push(d);
        if (Buffer.concat(got).length === 2) s.write(Buffer.concat([Buffer.from([5, 1, 0, 3, name.length]), name, Buffer.from([1, 187])]));
        if (Buffer.concat(got).length >= 4) { s.destroy(); resolve(Buffer.concat(got)); }
      });
      s.on('error', reject);
      s.write(Buffer.from([5, 1, 0]));
    });
    expect(socks[3]).toBe(2);
    expect(resolved.filter((h) => h.includes('ghp_'))).toEqual([]);
    expect(proxy.violations().filter((v) => v.sentinel === 'GH_TOKEN').length).toBeGreaterThanOrEqual(1);
  });

  it('a WebSocket handshake to an inject host carries the real value; to another host the sentinel is refused', async () => {
    upgrades.length = 0;
    const ws = (host: string) => `GET http://${host}/ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\nAuthorization: Bearer ${GH.sentinel}\r\n\r\n`;
    expect(await exchange(proxy.httpPort!, ws(`inject.test:${A}`))).toMatch(/^HTTP\/1\.1 101 /);
    expect(upgrades[0]!.authorization).toBe(`Bearer ${GH.real}`);
    const refused = await exchange(proxy.httpPort!, ws(`other.test:${R}`));
    expect(refused).toMatch(/^HTTP\/1\.1 403 /);
    expect(refused).toContain('sentinel-not-allowed-here');
  });

  it('plaintext through a SOCKS tunnel is stopped at the sentinel; a sentinel after a TLS ClientHello passes unseen', async () => {
    rawSeen.length = 0;
    const viaSocks = (payload: Buffer[]) => new Promise<void>((resolve, reject) => {
      const s = connect(proxy.socksPort!, '127.0.0.1');
      let stage = 0;
      let got = 0;
      s.on('data', (d: Buffer) => {
        got += d.length; // 2 bytes answer the greeting, 10 more the CONNECT (maybe in one read)
        if (stage === 0 && got >= 2) { stage = 1; s.write(Buffer.concat([Buffer.from([5, 1, 0, 3, 10]), Buffer.from('other.test'), Buffer.from([R >> 8, R & 255])])); }
        if (stage === 1 && got >= 12) {
          expect(d[d.length - 9]).toBe(0); // REQUEST_GRANTED
          stage = 2;
          // The proxy may close the tunnel mid-way (that is the point): later writes may fail.
          s.removeListener('error', reject);
          s.on('error', () => {});
          void (async () => {
            for (const p of payload) {
              // Each piece arrives on its own (not coalesced with the next by a loaded machine):
              // the next one is written once the server has seen what srt forwarded of this one.
              const seen = rawSeen.length;
              s.write(p);
              for (let i = 0; i < 200 && rawSeen.length === seen && !s.destroyed; i++) await new Promise((r) => setTimeout(r, 10));
            }
            setTimeout(() => { s.destroy(); resolve(); }, 300);
          })();
        }
      });
      s.on('error', reject);
      s.write(Buffer.from([5, 1, 0]));
    });
    await viaSocks([Buffer.from(`POST / HTTP/1.1\r\n\r\nkey=${GH.sentinel.slice(0, 9)}`), Buffer.from(`${GH.sentinel.slice(9)}&more`)]);
    expect(Buffer.concat(rawSeen).toString('latin1')).toContain('POST / HTTP/1.1');
    expect(Buffer.concat(rawSeen).toString('latin1')).not.toContain(GH.sentinel.slice(0, 9));
    rawSeen.length = 0;
    // A minimal valid ClientHello naming the tunnel's host (one that is not valid closes the
    // tunnel, and one naming another host is domain fronting: both refused elsewhere).
    const name = Buffer.from('other.test');
    const sni = Buffer.concat([u16(0), u16(name.length + 5), u16(name.length + 3), Buffer.from([0]), u16(name.length), name]);
    const body = Buffer.concat([Buffer.from([3, 3]), Buffer.alloc(32), Buffer.from([0]), u16(2), Buffer.from([0x13, 0x01]), Buffer.from([1, 0]), u16(sni.length), sni]);
    const handshake = Buffer.concat([Buffer.from([1, 0, body.length >> 8, body.length & 255]), body]);
    const hello = Buffer.concat([Buffer.from([0x16, 0x03, 0x01]), u16(handshake.length), handshake]);
    await viaSocks([hello, Buffer.from(`ciphertext ${GH.sentinel}`)]);
    expect(Buffer.concat(rawSeen).toString('latin1')).toContain(`ciphertext ${GH.sentinel}`);
  });

  it('a forwarded host loopback port: plaintext is stopped at the sentinel and reported', async () => {
    rawSeen.length = 0;
    const before = proxy.violations().length;
    await new Promise<void>((resolve, reject) => {
      const s = connect(fwdSocket);
      s.on('error', () => {}); // the proxy closes it mid-way: that is the point
      s.on('connect', () => {
        s.write(`SET key ${GH.sentinel.slice(0, 12)}`);
        setTimeout(() => s.write(`${GH.sentinel.slice(12)} and more\r\n`), 50);
      });
      s.on('close', () => resolve());
      setTimeout(() => reject(new Error('the forward was not closed')), 5000);
    });
    await new Promise((r) => setTimeout(r, 100));
    expect(Buffer.concat(rawSeen).toString('latin1')).toContain('SET key ');
    expect(Buffer.concat(rawSeen).toString('latin1')).not.toContain(GH.sentinel.slice(0, 12));
    expect(proxy.violations().slice(before)).toEqual([expect.objectContaining({ sentinel: 'GH_TOKEN' })]);
  });
});
