// Differential tests of the re-signer against the AWS SDK's signer (@smithy/signature-v4):
// random requests — paths with reserved, unicode and percent characters, repeated and empty
// query parameters, header values with runs of spaces, repeated headers — signed by smithy with
// sentinel credentials, re-signed by srt, must equal what smithy signs with the real ones; and
// aws-chunked bodies cut into random chunks and fed in random pieces must come out exactly as a
// client holding the real secret would have signed them.
import { describe, expect, it } from 'vitest';
import { Sha256 } from '@aws-crypto/sha256-js';
import { SignatureV4 } from '@smithy/signature-v4';
import type { HttpRequest } from '@smithy/types';
import { createHash, createHmac } from 'node:crypto';
import { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { ChunkResigner } from '../../src/credentials/aws-chunked.js';
import { findClientAuth, resign, type Header } from '../../src/credentials/sigv4.js';

const REAL = { accessKeyId: 'AKIAREALREALREAL2345', secretAccessKey: 'realSecretKeyrealSecretKeyrealSecret/+AB' };
const FAKE = { accessKeyId: 'AKIASENTINELSENT2345', secretAccessKey: 'sentinelSecretsentinelSecretsentinel/+AB' };
const DATE = new Date('2026-03-01T12:00:00Z');

/** A small deterministic PRNG, so a failure can be replayed from its seed. */
function prng(seed: number) {
  let s = seed >>> 0;
  const next = () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return { int: (n: number) => Math.floor(next() * n), pick: <T>(xs: readonly T[]) => xs[Math.floor(next() * xs.length)]! };
}

const CHARS = [...'abcXYZ019-._~ !*\'();:@&=+$,?#[]%/é☃ሴ'];
const escape = (s: string) => encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
/** As node:http hands a header value over: one latin1 character per byte. */
const asWire = (s: string) => Buffer.from(s, 'utf8').toString('latin1');

function randomRequest(r: ReturnType<typeof prng>, service: string): { req: HttpRequest; target: string } {
  const word = (max: number) => Array.from({ length: r.int(max) }, () => r.pick(CHARS)).join('');
  const segments = Array.from({ length: 1 + r.int(4) }, () => (r.int(6) === 0 ? r.pick(['', '.', '..']) : word(8)));
  const path = `/${segments.map(escape).join('/')}`;
  const query: Record<string, string | string[]> = {};
  for (let i = r.int(4); i > 0; i--) {
    const k = word(5) || 'k';
    const v = r.int(4) === 0 ? '' : word(6);
    const had = query[k];
    query[k] = had === undefined ? v : Array.isArray(had) ? [...had, v] : [had, v];
  }
  const headers: Record<string, string> = { host: 'svc.example.test', 'x-amz-meta-a': `  ${word(4)}   ${word(4)}  `, 'x-custom': `${r.pick(['a', 'b c', '  d  '])}` };
  if (service === 's3') headers['x-amz-content-sha256'] = 'UNSIGNED-PAYLOAD';
  const q = Object.entries(query).flatMap(([k, v]) => (Array.isArray(v) ? v : [v]).map((x) => `${escape(k)}=${escape(x)}`));
  return { req: { method: r.pick(['GET', 'PUT', 'POST', 'DELETE']), protocol: 'https:', hostname: 'svc.example.test', path, query, headers } as HttpRequest, target: q.length ? `${path}?${q.join('&')}` : path };
}

describe('re-signing equals the AWS SDK signing with the real credentials (random requests)', () => {
  for (const service of ['s3', 'lambda']) {
    it(`${service}: 300 random requests`, async () => {
      const fake = new SignatureV4({ credentials: FAKE, region: 'eu-west-1', service, sha256: Sha256, uriEscapePath: service !== 's3', applyChecksum: false });
      const real = new SignatureV4({ credentials: REAL, region: 'eu-west-1', service, sha256: Sha256, uriEscapePath: service !== 's3', applyChecksum: false });
      for (let seed = 1; seed <= 300; seed++) {
        const r = prng(seed * 7919 + service.length);
        const { req, target } = randomRequest(r, service);
        const sent = await fake.sign(req, { signingDate: DATE });
        const want = await real.sign(req, { signingDate: DATE });
        const headers: Header[] = Object.entries(sent.headers).filter(([k]) => k !== 'host').map(([k, v]) => [k, asWire(String(v))]);
        const auth = findClientAuth(target, headers)!;
        const out = resign({ method: req.method, target, authority: 'svc.example.test', headers, auth, keys: REAL, payloadHash: service === 's3' ? 'UNSIGNED-PAYLOAD' : createHash('sha256').update('').digest('hex') });
        const got = out.headers.find(([k]) => k === 'authorization')![1];
        expect({ seed, got }).toEqual({ seed, got: String(want.headers['authorization']) });
      }
    });
  }
});

describe('aws-chunked re-signing equals a client signing with the real secret (random chunkings)', () => {
  const scope = '20260301/us-east-1/s3/aws4_request';
  const amzDate = '20260301T120000Z';
  const key = (secret: string) => {
    const mac = (k: Buffer | string, d: string) => createHmac('sha256', k).update(d).digest();
    return mac(mac(mac(mac(`AWS4${secret}`, '20260301'), 'us-east-1'), 's3'), 'aws4_request');
  };
  const EMPTY = createHash('sha256').digest('hex');
  /** The body a client holding `secret` sends, seeded with `seed`, cut at `sizes`. */
  function body(secret: string, seed: string, data: Buffer, sizes: number[], trailer: boolean): { bytes: Buffer } {
    const k = key(secret);
    const sign = (s: string) => createHmac('sha256', k).update(s).digest('hex');
    const parts: Buffer[] = [];
    let prev = seed;
    let at = 0;
    for (const n of [...sizes, 0]) {
      const d = data.subarray(at, at + n);
      at += n;
      prev = sign(['AWS4-HMAC-SHA256-PAYLOAD', amzDate, scope, prev, EMPTY, createHash('sha256').update(d).digest('hex')].join('\n'));
      parts.push(Buffer.from(`${n.toString(16)};chunk-signature=${prev}\r\n`), d, Buffer.from(n ? '\r\n' : ''));
    }
    if (trailer) {
      const line = 'x-amz-checksum-sha256:' + createHash('sha256').update(data).digest('base64');
      const t = sign(['AWS4-HMAC-SHA256-TRAILER', amzDate, scope, prev, createHash('sha256').update(`${line}\n`).digest('hex')].join('\n'));
      parts.push(Buffer.from(`${line}\r\nx-amz-trailer-signature:${t}\r\n\r\n`));
    } else parts.push(Buffer.from('\r\n'));
    return { bytes: Buffer.concat(parts) };
  }

  it('100 random bodies, chunkings and splits, with and without a trailer', async () => {
    const seedSig = 'f'.repeat(64);
    const signer = { algorithm: 'AWS4-HMAC-SHA256' as const, amzDate, scope: { text: scope, date: '20260301', region: 'us-east-1', service: 's3' }, keys: { accessKeyId: REAL.accessKeyId, secretAccessKey: REAL.secretAccessKey }, sign: (s: string) => createHmac('sha256', key(REAL.secretAccessKey)).update(s).digest('hex') };
    for (let seed = 1; seed <= 100; seed++) {
      const r = prng(seed);
      const data = Buffer.from(Array.from({ length: r.int(5000) }, () => r.int(256)));
      const sizes: number[] = [];
      for (let left = data.length; left > 0; ) {
        const n = Math.min(left, 1 + r.int(1500));
        sizes.push(n);
        left -= n;
      }
      const trailer = r.int(2) === 1;
      const sent = body(FAKE.secretAccessKey, seedSig, data, sizes, trailer).bytes;
      const want = body(REAL.secretAccessKey, seedSig, data, sizes, trailer).bytes;
      const pieces: Buffer[] = [];
      for (let at = 0; at < sent.length; ) {
        const n = 1 + r.int(700);
        pieces.push(sent.subarray(at, at + n));
        at += n;
      }
      const out: Buffer[] = [];
      await pipeline(Readable.from(pieces), new ChunkResigner(signer, { seed: seedSig, trailer, fail: (w) => new Error(w) }), new Writable({ write(c: Buffer, _e, cb) { out.push(c); cb(); } }));
      expect({ seed, equal: Buffer.concat(out).equals(want) }).toEqual({ seed, equal: true });
    }
  });
});
