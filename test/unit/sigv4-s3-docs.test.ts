// Re-signing against the worked examples of the S3 documentation: the header-signed GET/PUT/list
// requests and the presigned GET ("Signature Calculations for the Authorization Header", "Query
// String Authentication"), and aws-chunked uploads ("Transferring payload in multiple chunks" and
// its trailing-headers variant: a PUT of 66560 bytes of "a" in chunks of 65536, 1024 and 0 bytes
// with the published seed, chunk and trailer signatures). Each request arrives signed with a
// sentinel key id and garbage signatures; re-signed with the example's real credentials it must
// become exactly the published request and body, however the body is split.
import { describe, expect, it } from 'vitest';
import { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { canonicalTrailers, ChunkResigner, chunkStringToSign, trailerStringToSign } from '../../src/credentials/aws-chunked.js';
import { ECDSA_ALGORITHM, EMPTY_SHA256, findClientAuth, makeSigner, parseScope, resign, sha256Hex, UNSIGNED_PAYLOAD, type Header } from '../../src/credentials/sigv4.js';
import { derivedPublicKey, verifyV4a } from '../../src/credentials/sigv4a.js';


const KEYS = { accessKeyId: 'AKIAIOSFODNN7EXAMPLE', secretAccessKey: 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY' };
const SENTINEL = 'AKIAZZZZZZZZZZZZZZZZ';
const junk = (c: string) => c.repeat(64);
const SIGNED = 'content-encoding;content-length;host;x-amz-content-sha256;x-amz-date;x-amz-decoded-content-length;x-amz-storage-class';

function request(payload: string, seed: string, extra: Header[] = [], signed = SIGNED): Header[] {
  return [
    ['x-amz-date', '20130524T000000Z'],
    ['x-amz-storage-class', 'REDUCED_REDUNDANCY'],
    ['authorization', `AWS4-HMAC-SHA256 Credential=${SENTINEL}/20130524/us-east-1/s3/aws4_request,SignedHeaders=${signed},Signature=${seed}`],
    ['x-amz-content-sha256', payload],
    ['content-encoding', 'aws-chunked'],
    ['x-amz-decoded-content-length', '66560'],
    ['content-length', '66824'],
    ...extra,
  ];
}

function body(sigs: string[], tail: string): Buffer {
  return Buffer.concat([
    Buffer.from(`10000;chunk-signature=${sigs[0]}\r\n`),
    Buffer.alloc(65536, 'a'),
    Buffer.from(`\r\n400;chunk-signature=${sigs[1]}\r\n`),
    Buffer.alloc(1024, 'a'),
    Buffer.from(`\r\n0;chunk-signature=${sigs[2]}\r\n${tail}`),
  ]);
}

/** Run `input` through a resigner, split into pieces of the given sizes (cycled). */
async function run(t: ChunkResigner, input: Buffer, sizes: number[]): Promise<Buffer> {
  const pieces: Buffer[] = [];
  for (let at = 0, i = 0; at < input.length; i++) {
    const n = sizes[i % sizes.length]!;
    pieces.push(input.subarray(at, at + n));
    at += n;
  }
  const out: Buffer[] = [];
  await pipeline(Readable.from(pieces), t, new Writable({ write(c: Buffer, _e, cb) { out.push(c); cb(); } }));
  return Buffer.concat(out);
}

const fail = (why: string) => new Error(why);

function resignSeed(headers: Header[]) {
  const target = '/examplebucket/chunkObject.txt';
  const auth = findClientAuth(target, headers)!;
  const payload = headers.find(([k]) => k === 'x-amz-content-sha256')![1];
  return resign({ method: 'PUT', target, authority: 's3.amazonaws.com', headers, auth, keys: KEYS, payloadHash: payload });
}

describe('S3 documentation: header and presigned examples', () => {
  const HOST = 'examplebucket.s3.amazonaws.com';
  const cases: Array<[string, string, string, Header[], string, string]> = [
    ['GET Object', 'GET', '/test.txt', [['range', 'bytes=0-9']], EMPTY_SHA256, 'f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41'],
    ['PUT Object', 'PUT', '/test%24file.text', [['date', 'Fri, 24 May 2013 00:00:00 GMT'], ['x-amz-storage-class', 'REDUCED_REDUNDANCY']], sha256Hex('Welcome to Amazon S3.'), '98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd'],
    ['GET Bucket lifecycle', 'GET', '/?lifecycle', [], EMPTY_SHA256, 'fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543'],
    ['GET Bucket (list objects)', 'GET', '/?max-keys=2&prefix=J', [], EMPTY_SHA256, '34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7'],
  ];
  for (const [name, method, target, extra, payload, signature] of cases) {
    it(name, () => {
      const headers: Header[] = [...extra, ['x-amz-content-sha256', payload], ['x-amz-date', '20130524T000000Z']];
      const names = ['host', ...headers.map(([k]) => k)].sort().join(';');
      headers.push(['authorization', `AWS4-HMAC-SHA256 Credential=${SENTINEL}/20130524/us-east-1/s3/aws4_request,SignedHeaders=${names},Signature=${junk('0')}`]);
      const auth = findClientAuth(target, headers)!;
      const r = resign({ method, target, authority: HOST, headers, auth, keys: KEYS, payloadHash: payload });
      expect(r.signature).toBe(signature);
    });
  }

  it('presigned GET Object', () => {
    const target = `/test.txt?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=${SENTINEL}%2F20130524%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=20130524T000000Z&X-Amz-Expires=86400&X-Amz-SignedHeaders=host&X-Amz-Signature=${junk('0')}`;
    const auth = findClientAuth(target, [])!;
    expect(auth.form).toBe('query');
    const r = resign({ method: 'GET', target, authority: HOST, headers: [], auth, keys: KEYS, payloadHash: UNSIGNED_PAYLOAD });
    expect(r.target).toBe(target.replace(SENTINEL, KEYS.accessKeyId).replace(junk('0'), 'aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404'));
  });
});

const SPLITS = [[1 << 20], [1], [7], [4096], [70000], [3, 65537, 2, 91]];

describe('STREAMING-AWS4-HMAC-SHA256-PAYLOAD (S3 documentation example)', () => {
  const headers = request('STREAMING-AWS4-HMAC-SHA256-PAYLOAD', junk('0'));
  const published = body(
    ['ad80c730a21e5b8d04586a2213dd63b9a0e99e0e2307b0ade35a65485a288648', '0055627c9e194cb4542bae2aa5492e3c1575bbb81b612b7d234b86a503ef5497', 'b6c6ea8a5354eaf15b3cb7646744f4275b71ea724fed81ceb9323e279d449df9'],
    '\r\n',
  );
  const sent = body([junk('1'), junk('2'), junk('3')], '\r\n');

  it('re-signs the seed to the published signature', () => {
    const r = resignSeed(headers);
    expect(r.signature).toBe('4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9');
    expect(r.headers.find(([k]) => k === 'authorization')![1]).toContain(`Credential=${KEYS.accessKeyId}/20130524/us-east-1/s3/aws4_request`);
  });

  for (const sizes of SPLITS) {
    it(`re-signs every chunk to the published body (pieces of ${sizes.join(',')})`, async () => {
      const r = resignSeed(headers);
      const out = await run(new ChunkResigner(r.signer, { seed: r.signature, trailer: false, fail }), sent, sizes);
      expect(out.length).toBe(66824);
      expect(out.equals(published)).toBe(true);
    });
  }

  const broken: Array<[string, Buffer]> = [
    ['a truncated body', sent.subarray(0, 60000)],
    ['a body cut inside the final chunk', sent.subarray(0, sent.length - 1)],
    ['no final chunk', sent.subarray(0, sent.indexOf('0;chunk-signature'))],
    ['a chunk without a signature', Buffer.from('10\r\naaaaaaaaaaaaaaaa\r\n0;chunk-signature=' + junk('0') + '\r\n\r\n')],
    ['a short signature', Buffer.from('10;chunk-signature=abc\r\naaaaaaaaaaaaaaaa\r\n')],
    ['a chunk longer than its size', Buffer.from(`2;chunk-signature=${junk('0')}\r\naaaa\r\n`)],
    ['data after the final chunk', Buffer.concat([sent, Buffer.from('more')])],
    ['a bare LF', Buffer.from(`2;chunk-signature=${junk('0')}\naa\r\n`)],
    ['a huge chunk size', Buffer.from(`ffffffffffff;chunk-signature=${junk('0')}\r\n`)],
    ['an endless line', Buffer.alloc(10000, '1')],
  ];
  it('fails the stream on a chunk larger than it holds', async () => {
    const r = resignSeed(headers);
    await expect(run(new ChunkResigner(r.signer, { seed: r.signature, trailer: false, fail, maxChunk: 1024 }), sent, [100000])).rejects.toThrow(/65536 bytes is larger than srt re-signs \(1024 bytes\)/);
  });
  it('fails the stream on chunk data not followed by CRLF', async () => {
    const r = resignSeed(headers);
    await expect(run(new ChunkResigner(r.signer, { seed: r.signature, trailer: false, fail }), Buffer.from(`2;chunk-signature=${junk('0')}\r\naaaa\r\n`), [1])).rejects.toThrow(/not followed by CRLF/);
  });
  for (const [what, input] of broken) {
    it(`fails the stream on ${what}`, async () => {
      const r = resignSeed(headers);
      await expect(run(new ChunkResigner(r.signer, { seed: r.signature, trailer: false, fail }), input, [1000])).rejects.toThrow(/aws-chunked|chunk/);
    });
  }
});

describe('STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER (S3 documentation example)', () => {
  // This example signs x-amz-trailer and not Content-Length.
  const headers = request('STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER', junk('0'), [['x-amz-trailer', 'x-amz-checksum-crc32c']], 'content-encoding;host;x-amz-content-sha256;x-amz-date;x-amz-decoded-content-length;x-amz-storage-class;x-amz-trailer');
  const chunkSigs = ['b474d8862b1487a5145d686f57f013e54db672cee1c953b3010fb58501ef5aa2', '1c1344b170168f8e65b41376b44b20fe354e373826ccbbe2c1d40a8cae51e5c7', '2ca2aba2005185cf7159c6277faf83795951dd77a3a99e6e65d5c9f85863f992'];
  const trailerSig = 'd81f82fc3505edab99d459891051a732e8730629a2e4a59689829ca17fe2e435';

  it('re-signs the seed to the published signature', () => {
    expect(resignSeed(headers).signature).toBe('106e2a8a18243abcf37539882f36619c00e2dfc72633413f02d3b74544bfeb8e');
  });

  // Clients frame the trailer both ways: straight after the final chunk's line, or after an
  // empty line that closes the final chunk; some leave out the last CRLF.
  for (const [framing, lead, end] of [['direct', '', '\r\n'], ['after an empty line', '\r\n', ''], ['direct, no last CRLF', '', '']] as const) {
    for (const sizes of SPLITS) {
      it(`re-signs chunks and trailer to the published ones (${framing}; pieces of ${sizes.join(',')})`, async () => {
        const r = resignSeed(headers);
        const sent = body([junk('1'), junk('2'), junk('3')], `${lead}x-amz-checksum-crc32c:sOO8/Q==\r\nx-amz-trailer-signature:${junk('4')}\r\n${end}`);
        const want = body(chunkSigs, `${lead}x-amz-checksum-crc32c:sOO8/Q==\r\nx-amz-trailer-signature:${trailerSig}\r\n${end}`);
        const out = await run(new ChunkResigner(r.signer, { seed: r.signature, trailer: true, fail }), sent, sizes);
        expect(out.toString('latin1')).toBe(want.toString('latin1'));
      });
    }
  }

  it('fails the stream when the trailer signature is missing or the trailer is malformed', async () => {
    const r = resignSeed(headers);
    for (const tail of ['x-amz-checksum-crc32c:sOO8/Q==\r\n', 'not a header\r\n', `x-amz-trailer-signature:${junk('4')}\r\n`, `x-amz-checksum-crc32c:sOO8/Q==\r\nx-amz-trailer-signature:abc\r\n`]) {
      const sent = body([junk('1'), junk('2'), junk('3')], tail);
      await expect(run(new ChunkResigner(r.signer, { seed: r.signature, trailer: true, fail }), sent, [4096])).rejects.toThrow();
    }
  });
});

describe('SigV4a aws-chunked (STREAMING-AWS4-ECDSA-P256-SHA256-PAYLOAD)', () => {
  const signer = makeSigner(ECDSA_ALGORITHM, '20130524T000000Z', parseScope('20130524/s3/aws4_request', ECDSA_ALGORITHM), KEYS);
  const pub = derivedPublicKey(KEYS);
  const seed = signer.sign('seed');

  async function chain(width: number, pad: boolean, trailer: boolean) {
    const sig = (c: string) => (pad ? c.repeat(width - 4) + '****' : c.repeat(width));
    const tail = trailer ? `x-amz-checksum-crc32:AAAAAA==\r\nx-amz-trailer-signature:${sig('4')}\r\n\r\n` : '\r\n';
    const sent = body([sig('1'), sig('2'), sig('3')], tail);
    const out = await run(new ChunkResigner(signer, { seed, trailer, fail }), sent, [5000]);
    expect(out.length).toBe(sent.length);
    // Every new signature verifies with the derived public key, in chain order.
    const text = out.toString('latin1');
    const sigs = [...text.matchAll(/chunk-signature=([0-9a-f]+)\**\r\n/g)].map((m) => m[1]!);
    const hashes = ['a'.repeat(65536), 'a'.repeat(1024), ''].map((d) => sha256Hex(d));
    let prev = seed;
    sigs.forEach((s, i) => {
      expect(verifyV4a(pub, chunkStringToSign(signer, prev, hashes[i]!), s)).toBe(true);
      prev = s;
    });
    if (trailer) {
      const t = /x-amz-trailer-signature:([0-9a-f]+)\**\r\n/.exec(text)![1]!;
      expect(verifyV4a(pub, trailerStringToSign(signer, prev, canonicalTrailers(['x-amz-checksum-crc32:AAAAAA=='])), t)).toBe(true);
    }
  }

  it('pads each signature to the client\'s padded width', () => chain(144, true, false));
  it('draws unpadded signatures until they have the client\'s width', () => chain(142, false, false));
  it('re-signs the trailer too', () => chain(144, true, true));
});

