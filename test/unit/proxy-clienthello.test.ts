// The ClientHello reader: SNI and ALPN out of well-formed hellos (however they are split), a
// clear verdict on broken ones, and never an exception, whatever the bytes.
import { describe, expect, it } from 'vitest';
import { looksLikeTls, MAX_CLIENT_HELLO, parseClientHello } from '../../src/proxy/clienthello.js';

const u16 = (n: number) => Buffer.from([n >> 8, n & 255]);
const u24 = (n: number) => Buffer.from([n >> 16, (n >> 8) & 255, n & 255]);
const vec16 = (b: Buffer) => Buffer.concat([u16(b.length), b]);
const vec8 = (b: Buffer) => Buffer.concat([Buffer.from([b.length]), b]);
const ext = (type: number, data: Buffer) => Buffer.concat([u16(type), vec16(data)]);
const sni = (...names: Array<string | [number, string]>) =>
  ext(0, vec16(Buffer.concat(names.map((n) => (typeof n === 'string' ? [0, n] : n) as [number, string]).map(([t, n]) => Buffer.concat([Buffer.from([t]), vec16(Buffer.from(n, 'latin1'))])))));
const alpn = (...protos: string[]) => ext(16, vec16(Buffer.concat(protos.map((p) => vec8(Buffer.from(p))))));

function body(extensions: Buffer[] | null): Buffer {
  return Buffer.concat([
    Buffer.from([3, 3]), // legacy_version
    Buffer.alloc(32, 7), // random
    vec8(Buffer.alloc(32, 1)), // session id
    vec16(Buffer.from([0x13, 0x01, 0x13, 0x02])), // cipher suites
    vec8(Buffer.from([0])), // compression
    ...(extensions ? [vec16(Buffer.concat(extensions))] : []),
  ]);
}

function hello(extensions: Buffer[] | null, recordSize = 16384): Buffer {
  const b = body(extensions);
  const hs = Buffer.concat([Buffer.from([1]), u24(b.length), b]);
  const records: Buffer[] = [];
  for (let i = 0; i < hs.length; i += recordSize) {
    const frag = hs.subarray(i, i + recordSize);
    records.push(Buffer.concat([Buffer.from([0x16, 3, 1]), u16(frag.length), frag]));
  }
  return Buffer.concat(records);
}

const typical = () => hello([ext(0x2b, Buffer.from([4, 3, 4, 3, 3])), sni('api.example.com'), alpn('h2', 'http/1.1'), ext(0x33, Buffer.alloc(40, 9))]);

describe('parseClientHello', () => {
  it('reads SNI and ALPN', () => {
    expect(parseClientHello(typical())).toEqual({ status: 'ok', sni: 'api.example.com', alpn: ['h2', 'http/1.1'] });
  });

  it('accepts a hello without extensions, without SNI, or without ALPN', () => {
    expect(parseClientHello(hello(null))).toEqual({ status: 'ok' });
    expect(parseClientHello(hello([alpn('http/1.1')]))).toEqual({ status: 'ok', alpn: ['http/1.1'] });
    expect(parseClientHello(hello([sni('x.test')]))).toEqual({ status: 'ok', sni: 'x.test' });
  });

  it('reads a hello split across several records, and asks for more while any is incomplete', () => {
    const split = hello([sni('split.example'), alpn('h2'), ext(0x15, Buffer.alloc(200))], 50);
    expect(parseClientHello(split)).toEqual({ status: 'ok', sni: 'split.example', alpn: ['h2'] });
    for (let i = 0; i < split.length; i++) expect(parseClientHello(split.subarray(0, i)).status, `prefix ${i}`).toBe('incomplete');
  });

  it('skips server_name entries of unknown type but takes exactly one host_name', () => {
    expect(parseClientHello(hello([sni([7, 'opaque'], 'real.example')]))).toMatchObject({ status: 'ok', sni: 'real.example' });
    expect(parseClientHello(hello([sni('a.example', 'b.example')]))).toEqual({ status: 'invalid', reason: 'two host names in server_name' });
    expect(parseClientHello(hello([sni([7, 'opaque'])]))).toEqual({ status: 'invalid', reason: 'no host name in server_name' });
  });

  it.each([
    ['an empty name', hello([sni('')]), 'invalid SNI host name'],
    ['a name with a space', hello([sni('evil example')]), 'invalid SNI host name'],
    ['a name with a NUL', hello([sni('allowed.example\0.evil')]), 'invalid SNI host name'],
    ['a name with a slash', hello([sni('a/b')]), 'invalid SNI host name'],
    ['a 254-byte name', hello([sni(`${'a'.repeat(250)}.com`)]), 'invalid SNI host name'],
    ['a duplicated extension', hello([sni('a.example'), sni('b.example')]), 'extension 0 appears twice'],
    ['an empty ALPN list', hello([ext(16, vec16(Buffer.alloc(0)))]), 'invalid ALPN extension'],
    ['an empty ALPN protocol', hello([ext(16, vec16(Buffer.from([0])))]), 'invalid ALPN extension'],
    ['a non-handshake record', Buffer.from([0x17, 3, 3, 0, 1, 0]), 'not a TLS handshake record'],
    ['a record of length 0', Buffer.from([0x16, 3, 1, 0, 0]), 'invalid TLS record length'],
    ['an oversized record', Buffer.concat([Buffer.from([0x16, 3, 1]), u16(16385)]), 'invalid TLS record length'],
    ['an unknown record version', Buffer.from([0x16, 9, 9, 0, 4, 1, 0, 0, 0]), 'unknown TLS record version'],
    ['a ServerHello', Buffer.from([0x16, 3, 3, 0, 4, 2, 0, 0, 0]), 'the first handshake message is not a ClientHello'],
    ['a truncated body', Buffer.from([0x16, 3, 1, 0, 8, 1, 0, 0, 4, 3, 3, 0, 0]), 'truncated ClientHello'],
    ['an odd cipher suite list', (() => { const h = typical(); h[5 + 4 + 2 + 32 + 33 + 1] = 3; return h; })(), 'invalid cipher suite list'],
  ])('refuses %s', (_name, bytes, reason) => {
    expect(parseClientHello(bytes)).toEqual({ status: 'invalid', reason });
  });

  it('refuses an alert record in the middle of a split hello', () => {
    const split = hello([sni('x.example'), ext(0x15, Buffer.alloc(100))], 40);
    const alert = Buffer.from([0x15, 3, 3, 0, 2, 2, 40]);
    expect(parseClientHello(Buffer.concat([split.subarray(0, 45), alert, split.subarray(45)]))).toEqual({ status: 'invalid', reason: 'a non-handshake record inside the ClientHello' });
  });

  it('refuses a hello that claims more than the bound', () => {
    const claim = Buffer.concat([Buffer.from([0x16, 3, 1, 0, 4, 1]), u24(MAX_CLIENT_HELLO + 1)]);
    expect(parseClientHello(claim)).toEqual({ status: 'invalid', reason: 'ClientHello too large' });
  });

  it('never throws: every truncation and every single-byte change gets a verdict', () => {
    const h = typical();
    for (let i = 0; i <= h.length; i++) expect(['incomplete', 'ok', 'invalid']).toContain(parseClientHello(h.subarray(0, i)).status);
    for (let i = 0; i < h.length; i++) {
      for (const v of [0x00, 0xff, h[i]! ^ 0x01]) {
        const m = Buffer.from(h);
        m[i] = v;
        expect(() => parseClientHello(m)).not.toThrow();
      }
    }
  });

  it('tells a TLS start from anything else by its first byte', () => {
    expect(looksLikeTls(0x16)).toBe(true);
    for (const b of [...'GET CONNECT SSH-2.0'].map((c) => c.charCodeAt(0)).concat([0x80, 0x00, 0x17])) expect(looksLikeTls(b)).toBe(false);
  });
});
