// A client for the forms the AWS CLI and SDK for JavaScript do not send by default, signed by the
// SDK's own signers (@smithy/signature-v4, @smithy/signature-v4a) with the credentials of its
// environment (inside srt: sentinels):
//   chunked | chunked-trailer  PUT with aws-chunked STREAMING-AWS4-HMAC-SHA256-PAYLOAD[-TRAILER]:
//                              every chunk (and the trailer) signed, chained to the request's signature
//   sigv4a                     GET signed with SigV4a (AWS4-ECDSA-P256-SHA256, region set "*")
// usage: node signed-chunked.mjs ENDPOINT MODE KEY [BYTES] [CHUNK]
// The data is generated as it is sent (BYTES of a repeating pattern), so gigabytes need no memory.
// Prints one JSON line: status, response body, bytes sent, seconds, and the credentials it held.
import { createHash, createHmac } from 'node:crypto';
import https from 'node:https';
import * as zlib from 'node:zlib';
import { SignatureV4 } from '@smithy/signature-v4';
import { SignatureV4a } from '@smithy/signature-v4a';

const [endpoint, mode, key, bytesArg = '300000', chunkArg = '65536'] = process.argv.slice(2);
const BYTES = Number(bytesArg);
const CHUNK = Number(chunkArg);
const url = new URL(endpoint);
const credentials = { accessKeyId: process.env.AWS_ACCESS_KEY_ID, secretAccessKey: process.env.AWS_SECRET_ACCESS_KEY, ...(process.env.AWS_SESSION_TOKEN ? { sessionToken: process.env.AWS_SESSION_TOKEN } : {}) };

/** node:crypto behind the hash interface smithy takes (fast enough for gigabytes). */
class NodeSha256 {
  constructor(secret) { this.h = secret ? createHmac('sha256', Buffer.from(secret)) : createHash('sha256'); }
  update(d) { this.h.update(typeof d === 'string' ? Buffer.from(d) : d); }
  async digest() { return new Uint8Array(this.h.digest()); }
}

const pattern = Buffer.alloc(CHUNK);
for (let i = 0; i < CHUNK; i++) pattern[i] = (i * 31 + 7) & 0xff;
const piece = (at) => pattern.subarray(0, Math.min(CHUNK, BYTES - at));

function send(method, path, headers, body) {
  return new Promise((resolve, reject) => {
    const t0 = process.hrtime.bigint();
    const req = https.request({ method, host: url.hostname, port: url.port, path, headers }, (res) => {
      const parts = [];
      res.on('data', (c) => parts.push(c));
      res.on('end', () => {
        // An early answer (a refusal) ends the upload, as real clients do.
        if (!req.writableFinished) req.destroy();
        resolve({ status: res.statusCode, proxyError: res.headers['x-proxy-error'], body: Buffer.concat(parts).toString(), seconds: Number(process.hrtime.bigint() - t0) / 1e9 });
      });
    });
    req.on('error', (e) => {
      if (!done) reject(e);
    });
    let done = false;
    req.on('response', () => (done = true));
    if (body) body(req).catch(() => undefined);
    else req.end();
  });
}

const held = [credentials.accessKeyId, credentials.secretAccessKey, credentials.sessionToken].filter(Boolean);
const date = new Date();
let result;
if (mode === 'sigv4a') {
  const signer = new SignatureV4a({ credentials, region: '*', service: 's3', sha256: NodeSha256, uriEscapePath: false });
  const r = await signer.sign({ method: 'GET', protocol: 'https:', hostname: url.hostname, port: Number(url.port), path: `/bucket/${key}`, query: {}, headers: { host: url.host, 'x-amz-content-sha256': 'UNSIGNED-PAYLOAD' } }, { signingDate: date, signingRegion: '*' });
  result = await send('GET', `/bucket/${key}`, r.headers);
} else {
  const trailer = mode === 'chunked-trailer';
  const payload = `STREAMING-AWS4-HMAC-SHA256-PAYLOAD${trailer ? '-TRAILER' : ''}`;
  const signer = new SignatureV4({ credentials, region: 'us-east-1', service: 's3', sha256: NodeSha256, uriEscapePath: false });
  // The encoded length: each chunk's header line, data and CRLF, the final chunk, the trailer.
  const sigLine = (n) => `${n.toString(16)};chunk-signature=${'0'.repeat(64)}\r\n`.length;
  let length = 0;
  for (let at = 0; at < BYTES; at += CHUNK) length += sigLine(Math.min(CHUNK, BYTES - at)) + Math.min(CHUNK, BYTES - at) + 2;
  length += sigLine(0);
  const trailerName = 'x-amz-checksum-crc32';
  length += trailer ? `${trailerName}:AAAAAA==\r\nx-amz-trailer-signature:${'0'.repeat(64)}\r\n\r\n`.length : 2;
  const headers = { host: url.host, 'x-amz-content-sha256': payload, 'content-encoding': 'aws-chunked', 'x-amz-decoded-content-length': String(BYTES), 'content-length': String(length) };
  if (trailer) headers['x-amz-trailer'] = trailerName;
  const r = await signer.sign({ method: 'PUT', protocol: 'https:', hostname: url.hostname, port: Number(url.port), path: `/bucket/${key}`, query: {}, headers }, { signingDate: date });
  const seed = /Signature=([0-9a-f]{64})/.exec(r.headers.authorization)[1];
  const [, scope] = /Credential=[^/]+\/([^,]+),/.exec(r.headers.authorization);
  const amzDate = r.headers['x-amz-date'];
  const signingKey = await (async () => {
    const mac = (k, d) => createHmac('sha256', k).update(d).digest();
    const [day, region, service] = scope.split('/');
    return mac(mac(mac(mac(`AWS4${credentials.secretAccessKey}`, day), region), service), 'aws4_request');
  })();
  const EMPTY = createHash('sha256').digest('hex');
  const sign = (sts) => createHmac('sha256', signingKey).update(sts).digest('hex');
  const crc = zlib.crc32 ? { v: 0 } : null;
  result = await send('PUT', `/bucket/${key}`, r.headers, async (req) => {
    let prev = seed;
    const write = (b) => {
      if (req.destroyed) throw new Error('upload ended');
      return req.write(b) ? Promise.resolve() : new Promise((ok) => req.once('drain', ok));
    };
    for (let at = 0; ; at += CHUNK) {
      const d = at < BYTES ? piece(at) : Buffer.alloc(0);
      if (crc && d.length) crc.v = zlib.crc32(d, crc.v);
      prev = sign(['AWS4-HMAC-SHA256-PAYLOAD', amzDate, scope, prev, EMPTY, createHash('sha256').update(d).digest('hex')].join('\n'));
      await write(`${d.length.toString(16)};chunk-signature=${prev}\r\n`);
      if (d.length === 0) break;
      await write(d);
      await write('\r\n');
    }
    if (trailer) {
      const b = Buffer.alloc(4);
      b.writeUInt32BE(crc ? crc.v >>> 0 : 0);
      const line = `${trailerName}:${b.toString('base64')}`;
      const sig = sign(['AWS4-HMAC-SHA256-TRAILER', amzDate, scope, prev, createHash('sha256').update(`${line}\n`).digest('hex')].join('\n'));
      req.end(`${line}\r\nx-amz-trailer-signature:${sig}\r\n\r\n`);
    } else req.end('\r\n');
  });
  result.bytes = BYTES;
}
// Exit once the line is out: an upload cut short by a refusal may leave a write pending.
process.stdout.write(`${JSON.stringify({ ...result, body: result.body.slice(0, 4000), held })}\n`, () => process.exit(0));
