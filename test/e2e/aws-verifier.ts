// An AWS-side view of a request: does its signature verify with the REAL credentials? Built on
// @smithy/signature-v4 and @smithy/signature-v4a (the AWS SDK's own signers), never on srt's
// signer: a request is verified by signing its received form again with smithy and comparing.
// What smithy does not cover is done here from the S3 documentation and checked against its
// published examples (test/unit/sigv4-stage.test.ts): aws-chunked chunk and trailer signatures
// (their strings to sign, HMAC'd by smithy's signString) and SigV4a (smithy's canonical request
// and derived key, node's ECDSA verification).
import { Sha256 } from '@aws-crypto/sha256-js';
import { SignatureV4 } from '@smithy/signature-v4';
import { SignatureV4a } from '@smithy/signature-v4a';
import type { HttpRequest } from '@smithy/types';
import { createECDH, createHash, createPublicKey, verify } from 'node:crypto';
import * as zlib from 'node:zlib';

export interface AwsCreds {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
}

/** A request as the server received it: raw target, headers in order, whole body. */
export interface Received {
  method: string;
  target: string;
  /** The Host header. */
  host: string;
  headers: Array<[string, string]>;
  body: Buffer;
}

export interface Verified {
  form: 'header' | 'query';
  algorithm: string;
  service: string;
  payload: string;
  /** The decoded object data of an aws-chunked body (else the body itself). */
  data: Buffer;
  chunks: number;
  trailers: Record<string, string>;
}

const EMPTY = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855';

function header(r: Received, name: string): string | undefined {
  return r.headers.find(([k]) => k.toLowerCase() === name)?.[1];
}

function parseQuery(q: string): Array<[string, string]> {
  return q === '' ? [] : q.split('&').filter(Boolean).map((p) => {
    const i = p.indexOf('=');
    const d = (s: string) => decodeURIComponent(s);
    return i === -1 ? [d(p), ''] : [d(p.slice(0, i)), d(p.slice(i + 1))];
  });
}

function amzDate(s: string): Date {
  const m = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(s);
  if (!m) throw new Error(`bad x-amz-date ${s}`);
  return new Date(Date.UTC(+m[1]!, +m[2]! - 1, +m[3]!, +m[4]!, +m[5]!, +m[6]!));
}

/** A smithy HttpRequest of what was received, without the query parameters in `drop`. */
function smithyRequest(r: Received, drop: (name: string) => boolean, headerDrop: (name: string) => boolean): HttpRequest {
  const q = r.target.indexOf('?');
  const path = q === -1 ? r.target : r.target.slice(0, q);
  const query: Record<string, string | string[]> = {};
  for (const [k, v] of parseQuery(q === -1 ? '' : r.target.slice(q + 1))) {
    if (drop(k)) continue;
    const had = query[k];
    query[k] = had === undefined ? v : Array.isArray(had) ? [...had, v] : [had, v];
  }
  const headers: Record<string, string> = { host: r.host };
  for (const [k, v] of r.headers) {
    const n = k.toLowerCase();
    if (n === 'host' || headerDrop(n)) continue;
    headers[n] = headers[n] === undefined ? v : `${headers[n]},${v}`;
  }
  const [hostname, port] = r.host.split(':');
  return { method: r.method, protocol: 'https:', hostname: hostname!, ...(port ? { port: Number(port) } : {}), path, query, headers, body: r.body.length > 0 ? r.body : undefined } as HttpRequest;
}

/** A smithy SigV4a signer that hands over its derived private key and string to sign instead of signing. */
function v4aProbe(init: ConstructorParameters<typeof SignatureV4a>[0]) {
  const signer = new SignatureV4a(init);
  const seen: { key?: Uint8Array; stringToSign?: string } = {};
  (signer as unknown as { getSignature(key: Uint8Array, sts: string): Promise<string> }).getSignature = async (key, stringToSign) => {
    Object.assign(seen, { key, stringToSign });
    return '00';
  };
  return { signer, seen };
}

function ecdsaVerify(privateKey: Uint8Array, stringToSign: string, signatureHex: string): boolean {
  const ecdh = createECDH('prime256v1');
  ecdh.setPrivateKey(Buffer.from(privateKey));
  const pub = ecdh.getPublicKey();
  const key = createPublicKey({ key: { kty: 'EC', crv: 'P-256', x: pub.subarray(1, 33).toString('base64url'), y: pub.subarray(33).toString('base64url') }, format: 'jwk' });
  return verify('sha256', Buffer.from(stringToSign), { key, dsaEncoding: 'der' }, Buffer.from(signatureHex.replace(/\*+$/, ''), 'hex'));
}

const S3 = new Set(['s3', 's3express', 's3-outposts', 's3-object-lambda']);

/** Throws with the reason when the request does not verify with `creds`. */
export async function verifyRequest(r: Received, creds: AwsCreds): Promise<Verified> {
  const authorization = header(r, 'authorization');
  const q = r.target.indexOf('?');
  const query = new Map(parseQuery(q === -1 ? '' : r.target.slice(q + 1)));
  let form: 'header' | 'query';
  let algorithm: string, credential: string, signedHeaders: string[], signature: string, date: string;
  if (authorization) {
    const m = /^(AWS4-[A-Z0-9-]+) Credential=([^,\s]+),\s*SignedHeaders=([^,\s]+),\s*Signature=([0-9a-f]+)$/.exec(authorization);
    if (!m) throw new Error(`unreadable Authorization: ${authorization}`);
    form = 'header';
    [algorithm, credential, signature] = [m[1]!, m[2]!, m[4]!];
    signedHeaders = m[3]!.split(';');
    date = header(r, 'x-amz-date') ?? '';
  } else if (query.has('X-Amz-Credential')) {
    form = 'query';
    algorithm = query.get('X-Amz-Algorithm')!;
    credential = query.get('X-Amz-Credential')!;
    signedHeaders = query.get('X-Amz-SignedHeaders')!.split(';');
    signature = query.get('X-Amz-Signature')!;
    date = query.get('X-Amz-Date')!;
  } else throw new Error('the request is not signed');
  const [keyId, ...scope] = credential.split('/');
  if (keyId !== creds.accessKeyId) throw new Error(`signed with key id ${keyId}, not the real one`);
  const v4a = algorithm === 'AWS4-ECDSA-P256-SHA256';
  const service = v4a ? scope[1]! : scope[2]!;
  const region = v4a ? '' : scope[1]!;
  const signed = new Set(signedHeaders);
  const names = new Set(r.headers.map(([k]) => k.toLowerCase()));
  const unsignable = new Set([...names, 'host'].filter((n) => !signed.has(n)));
  if (creds.sessionToken && form === 'header' && !signed.has('x-amz-security-token')) unsignable.add('x-amz-security-token');
  const init = { credentials: creds, region: region || 'us-east-1', service, sha256: Sha256, uriEscapePath: !S3.has(service), applyChecksum: false };
  const queryPayload = form === 'query' ? query.get('X-Amz-Content-Sha256') : undefined;
  const payload = header(r, 'x-amz-content-sha256') ?? queryPayload ?? (form === 'query' && S3.has(service) ? 'UNSIGNED-PAYLOAD' : createHash('sha256').update(r.body).digest('hex'));

  if (form === 'header' && !v4a) {
    if (creds.sessionToken && header(r, 'x-amz-security-token') !== creds.sessionToken) throw new Error('the session token is not the real one');
    const signer = new SignatureV4(init);
    const req = smithyRequest(r, () => false, (n) => n === 'authorization');
    const out = await signer.sign(req, { signingDate: amzDate(date), signableHeaders: signed, unsignableHeaders: unsignable });
    const expect = /Signature=([0-9a-f]+)/.exec(String(out.headers['authorization']))![1]!;
    if (expect !== signature) throw new Error(`signature mismatch (smithy: ${String(out.headers['authorization'])}; got: ${authorization})`);
  } else if (form === 'query' && !v4a) {
    if (creds.sessionToken && query.get('X-Amz-Security-Token') !== creds.sessionToken) throw new Error('the session token is not the real one');
    const signer = new SignatureV4(init);
    const presigned = new Set(['X-Amz-Algorithm', 'X-Amz-Credential', 'X-Amz-Date', 'X-Amz-Expires', 'X-Amz-SignedHeaders', 'X-Amz-Signature', 'X-Amz-Security-Token']);
    const req = smithyRequest(r, (k) => presigned.has(k), () => false);
    if (queryPayload !== undefined || S3.has(service)) req.headers['x-amz-content-sha256'] = payload;
    unsignable.add('x-amz-content-sha256');
    const out = await signer.presign(req, { signingDate: amzDate(date), expiresIn: Number(query.get('X-Amz-Expires')), signableHeaders: signed, unsignableHeaders: unsignable, unhoistableHeaders: new Set([...names, 'x-amz-content-sha256']) });
    const want = out.query?.['X-Amz-Signature'];
    if (want !== signature) throw new Error(`presigned signature mismatch (smithy ${String(want)}, got ${signature})`);
  } else if (form === 'header' && v4a) {
    const probe = v4aProbe(init);
    const req = smithyRequest(r, () => false, (n) => n === 'authorization');
    await probe.signer.sign(req, { signingDate: amzDate(date), signingRegion: header(r, 'x-amz-region-set'), signableHeaders: signed, unsignableHeaders: unsignable });
    if (!ecdsaVerify(probe.seen.key!, probe.seen.stringToSign!, signature)) throw new Error('SigV4a signature does not verify');
  } else {
    throw new Error('presigned SigV4a is not verified by this test server');
  }

  // The body: as it is, or aws-chunked (its chunk and trailer signatures checked).
  const result: Verified = { form, algorithm, service, payload, data: r.body, chunks: 0, trailers: {} };
  if (payload.startsWith('STREAMING-')) {
    const chunkSigner = new SignatureV4(init);
    const signedChunks = payload !== 'STREAMING-UNSIGNED-PAYLOAD-TRAILER';
    if (v4a && signedChunks) throw new Error('SigV4a chunk signatures are not verified by this test server');
    const stringSig = (sts: string) => chunkSigner.sign(sts, { signingDate: amzDate(date), signingRegion: region, signingService: service });
    Object.assign(result, await decodeChunked(r.body, { seed: signature, date, scope: scope.join('/'), signedChunks, trailer: payload.endsWith('-TRAILER'), sign: stringSig }));
    const decoded = header(r, 'x-amz-decoded-content-length');
    if (decoded !== undefined && Number(decoded) !== result.data.length) throw new Error(`x-amz-decoded-content-length ${decoded} but ${result.data.length} bytes`);
  } else if (payload !== 'UNSIGNED-PAYLOAD' && createHash('sha256').update(r.body).digest('hex') !== payload) {
    throw new Error('the body does not match x-amz-content-sha256');
  }
  const crc = header(r, 'x-amz-checksum-crc32') ?? result.trailers['x-amz-checksum-crc32'];
  if (crc !== undefined && 'crc32' in zlib) {
    const mine = Buffer.alloc(4);
    mine.writeUInt32BE((zlib as unknown as { crc32(b: Buffer): number }).crc32(result.data));
    if (mine.toString('base64') !== crc) throw new Error(`CRC32 mismatch (${crc} sent, ${mine.toString('base64')} computed)`);
  }
  return result;
}

/** Decode an aws-chunked body, checking every chunk and trailer signature when they are signed. */
export async function decodeChunked(
  body: Buffer,
  o: { seed: string; date: string; scope: string; signedChunks: boolean; trailer: boolean; sign: (stringToSign: string) => Promise<string> },
): Promise<{ data: Buffer; chunks: number; trailers: Record<string, string> }> {
  const text = body.toString('latin1');
  let at = 0;
  let prev = o.seed;
  const parts: Buffer[] = [];
  let chunks = 0;
  for (;;) {
    const eol = text.indexOf('\r\n', at);
    if (eol === -1) throw new Error('aws-chunked: no chunk header');
    const line = text.slice(at, eol);
    const m = o.signedChunks ? /^([0-9a-f]+);chunk-signature=([0-9a-f]{64})$/i.exec(line) : /^([0-9a-f]+)$/i.exec(line);
    if (!m) throw new Error(`aws-chunked: bad chunk header ${JSON.stringify(line.slice(0, 100))}`);
    const size = parseInt(m[1]!, 16);
    const data = body.subarray(eol + 2, eol + 2 + size);
    chunks++;
    if (o.signedChunks) {
      const sts = ['AWS4-HMAC-SHA256-PAYLOAD', o.date, o.scope, prev, EMPTY, createHash('sha256').update(data).digest('hex')].join('\n');
      const want = await o.sign(sts);
      if (want !== m[2]) throw new Error(`aws-chunked: chunk ${chunks} signature does not verify`);
      prev = want;
    }
    at = eol + 2 + size;
    if (size === 0) break;
    if (text.slice(at, at + 2) !== '\r\n') throw new Error('aws-chunked: chunk data not followed by CRLF');
    at += 2;
    parts.push(data);
  }
  const trailers: Record<string, string> = {};
  const rest = text.slice(at).split('\r\n').filter((l) => l !== '');
  if (o.trailer) {
    const lines: string[] = [];
    for (const l of rest) {
      const [k, v] = [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1)];
      if (k === 'x-amz-trailer-signature') {
        const canonical = lines.map((x) => `${x}\n`).join('');
        const sts = ['AWS4-HMAC-SHA256-TRAILER', o.date, o.scope, prev, createHash('sha256').update(canonical).digest('hex')].join('\n');
        if ((await o.sign(sts)) !== v) throw new Error('aws-chunked: the trailer signature does not verify');
        trailers[k] = v;
        continue;
      }
      lines.push(`${k}:${v.trim()}`);
      trailers[k] = v.trim();
    }
    if (o.signedChunks && trailers['x-amz-trailer-signature'] === undefined) throw new Error('aws-chunked: trailer signature missing');
  } else if (rest.length > 0) throw new Error('aws-chunked: data after the final chunk');
  return { data: Buffer.concat(parts), chunks, trailers };
}
