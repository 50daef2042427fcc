// A loopback HTTPS "AWS" for the SigV4 tests: just enough S3 (path-style buckets, PutObject,
// multipart uploads, GetObject with ranges, HeadObject, ListObjectsV2, ListBuckets) and STS
// (GetCallerIdentity) for the AWS SDK for JavaScript, the AWS CLI and boto3 to do their everyday
// work. Every request must verify with one of the REAL credentials the server is given
// (aws-verifier.ts: @smithy/signature-v4, not srt's signer); one that does not gets AWS's
// SignatureDoesNotMatch. Everything received is recorded, so a test can check that no sentinel
// ever arrived.
import { randomUUID, createHash } from 'node:crypto';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { verifyRequest, type AwsCreds, type Received, type Verified } from './aws-verifier.js';

export interface Recorded extends Received {
  verified?: Verified;
  error?: string;
  status: number;
}

interface Obj {
  data: Buffer;
  etag: string;
  modified: Date;
}

const xml = (body: string) => `<?xml version="1.0" encoding="UTF-8"?>\n${body}`;
const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
const md5 = (b: Buffer) => `"${createHash('md5').update(b).digest('hex')}"`;

export interface AwsServer {
  port: number;
  url: string;
  received: Recorded[];
  objects: Map<string, Obj>;
  close(): Promise<void>;
}

export async function startAwsServer(opts: { cert: string; key: string; creds: AwsCreds[]; host?: string }): Promise<AwsServer> {
  const received: Recorded[] = [];
  const objects = new Map<string, Obj>();
  const buckets = new Set<string>(['bucket']);
  const uploads = new Map<string, Map<number, Buffer>>();

  const server = https.createServer({ cert: opts.cert, key: opts.key }, (req, res) => {
    const parts: Buffer[] = [];
    req.on('data', (c: Buffer) => parts.push(c));
    req.on('end', () => {
      const headers: Array<[string, string]> = [];
      for (let i = 0; i < req.rawHeaders.length; i += 2) headers.push([req.rawHeaders[i]!, req.rawHeaders[i + 1]!]);
      const rec: Recorded = { method: req.method!, target: req.url!, host: req.headers.host ?? '', headers, body: Buffer.concat(parts), status: 0 };
      received.push(rec);
      void handle(rec).then(({ status, headers: h, body }) => {
        rec.status = status;
        res.writeHead(status, { 'x-amz-request-id': randomUUID(), ...h, ...(body !== undefined && !('content-length' in h) ? { 'content-length': Buffer.byteLength(body) } : {}) });
        res.end(req.method === 'HEAD' ? undefined : body);
      });
    });
  });

  type Reply = { status: number; headers: Record<string, string>; body?: string | Buffer };
  const error = (status: number, code: string, message: string): Reply => ({ status, headers: { 'content-type': 'application/xml' }, body: xml(`<Error><Code>${code}</Code><Message>${esc(message)}</Message></Error>`) });

  async function handle(rec: Recorded): Promise<Reply> {
    const keyId = /Credential=([^/]+)\//.exec(rec.headers.find(([k]) => k.toLowerCase() === 'authorization')?.[1] ?? '')?.[1] ?? /X-Amz-Credential=([^%&/]+)/.exec(rec.target)?.[1];
    const creds = opts.creds.find((c) => c.accessKeyId === keyId);
    if (!creds) {
      rec.error = `unknown access key id ${keyId ?? '(none)'}`;
      return error(403, 'InvalidAccessKeyId', 'The AWS Access Key Id you provided does not exist in our records.');
    }
    let v: Verified;
    try {
      v = await verifyRequest(rec, creds);
      rec.verified = v;
    } catch (e) {
      rec.error = (e as Error).message;
      return error(403, 'SignatureDoesNotMatch', `The request signature we calculated does not match the signature you provided. (${rec.error})`);
    }
    return v.service === 'sts' ? sts(rec, creds) : s3(rec, v);
  }

  function sts(rec: Recorded, creds: AwsCreds): Reply {
    const form = new URLSearchParams(rec.body.toString('utf8'));
    if (form.get('Action') !== 'GetCallerIdentity') return error(400, 'InvalidAction', `unsupported ${form.get('Action')}`);
    const arn = creds.sessionToken ? 'arn:aws:sts::123456789012:assumed-role/srt-test/session' : 'arn:aws:iam::123456789012:user/srt-test';
    return {
      status: 200,
      headers: { 'content-type': 'text/xml' },
      body: xml(`<GetCallerIdentityResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><GetCallerIdentityResult><Arn>${arn}</Arn><UserId>AIDASRTTEST</UserId><Account>123456789012</Account></GetCallerIdentityResult><ResponseMetadata><RequestId>${randomUUID()}</RequestId></ResponseMetadata></GetCallerIdentityResponse>`),
    };
  }

  function s3(rec: Recorded, v: Verified): Reply {
    const url = new URL(rec.target, 'https://s3.test');
    const q = url.searchParams;
    const [, bucket = '', ...rest] = decodeURIComponent(url.pathname).split('/');
    const key = rest.join('/');
    const id = `${bucket}/${key}`;
    const ok = (body = '', headers: Record<string, string> = {}): Reply => ({ status: 200, headers: body ? { 'content-type': 'application/xml', ...headers } : headers, body });
    if (bucket === '') {
      return ok(xml(`<ListAllMyBucketsResult><Owner><ID>srt</ID></Owner><Buckets>${[...buckets].map((b) => `<Bucket><Name>${b}</Name><CreationDate>2026-01-01T00:00:00.000Z</CreationDate></Bucket>`).join('')}</Buckets></ListAllMyBucketsResult>`));
    }
    if (!buckets.has(bucket) && !(rec.method === 'PUT' && key === '')) return error(404, 'NoSuchBucket', bucket);
    if (key === '') {
      if (rec.method === 'PUT') {
        buckets.add(bucket);
        return ok();
      }
      if (rec.method === 'GET' && q.has('location')) return ok(xml('<LocationConstraint/>'));
      if (rec.method === 'GET') {
        const prefix = q.get('prefix') ?? '';
        const delimiter = q.get('delimiter');
        const keys = [...objects.keys()].filter((k) => k.startsWith(`${bucket}/${prefix}`)).map((k) => k.slice(bucket.length + 1)).sort();
        const prefixes = new Set<string>();
        const contents: string[] = [];
        for (const k of keys) {
          const after = k.slice(prefix.length);
          if (delimiter && after.includes(delimiter)) prefixes.add(prefix + after.slice(0, after.indexOf(delimiter) + 1));
          else {
            const o = objects.get(`${bucket}/${k}`)!;
            contents.push(`<Contents><Key>${esc(k)}</Key><LastModified>${o.modified.toISOString()}</LastModified><ETag>${esc(o.etag)}</ETag><Size>${o.data.length}</Size><StorageClass>STANDARD</StorageClass></Contents>`);
          }
        }
        return ok(xml(`<ListBucketResult><Name>${bucket}</Name><Prefix>${esc(prefix)}</Prefix><KeyCount>${contents.length + prefixes.size}</KeyCount><MaxKeys>1000</MaxKeys><IsTruncated>false</IsTruncated>${contents.join('')}${[...prefixes].map((p) => `<CommonPrefixes><Prefix>${esc(p)}</Prefix></CommonPrefixes>`).join('')}</ListBucketResult>`));
      }
      return error(405, 'MethodNotAllowed', rec.method);
    }
    if (rec.method === 'POST' && q.has('uploads')) {
      const uploadId = randomUUID();
      uploads.set(uploadId, new Map());
      return ok(xml(`<InitiateMultipartUploadResult><Bucket>${bucket}</Bucket><Key>${esc(key)}</Key><UploadId>${uploadId}</UploadId></InitiateMultipartUploadResult>`));
    }
    if (q.has('uploadId')) {
      const parts = uploads.get(q.get('uploadId')!);
      if (!parts) return error(404, 'NoSuchUpload', q.get('uploadId')!);
      if (rec.method === 'PUT') {
        parts.set(Number(q.get('partNumber')), v.data);
        return ok('', { etag: md5(v.data) });
      }
      if (rec.method === 'POST') {
        const numbers = [...rec.body.toString('utf8').matchAll(/<PartNumber>(\d+)<\/PartNumber>/g)].map((m) => Number(m[1]));
        const data = Buffer.concat(numbers.map((n) => parts.get(n)!));
        uploads.delete(q.get('uploadId')!);
        const etag = `"${createHash('md5').update(data).digest('hex')}-${numbers.length}"`;
        objects.set(id, { data, etag, modified: new Date() });
        return ok(xml(`<CompleteMultipartUploadResult><Bucket>${bucket}</Bucket><Key>${esc(key)}</Key><ETag>${esc(etag)}</ETag></CompleteMultipartUploadResult>`));
      }
      if (rec.method === 'DELETE') {
        uploads.delete(q.get('uploadId')!);
        return { status: 204, headers: {} };
      }
    }
    if (rec.method === 'PUT') {
      const o = { data: v.data, etag: md5(v.data), modified: new Date() };
      objects.set(id, o);
      return ok('', { etag: o.etag });
    }
    const o = objects.get(id);
    if (rec.method === 'DELETE') {
      objects.delete(id);
      return { status: 204, headers: {} };
    }
    if (!o) return error(404, 'NoSuchKey', key);
    const common = { etag: o.etag, 'last-modified': o.modified.toUTCString(), 'content-type': 'application/octet-stream', 'accept-ranges': 'bytes' };
    if (rec.method === 'HEAD') return { status: 200, headers: { ...common, 'content-length': String(o.data.length) } };
    const range = /^bytes=(\d+)-(\d*)$/.exec(rec.headers.find(([k]) => k.toLowerCase() === 'range')?.[1] ?? '');
    if (range) {
      const start = Number(range[1]);
      const end = range[2] ? Math.min(Number(range[2]), o.data.length - 1) : o.data.length - 1;
      return { status: 206, headers: { ...common, 'content-range': `bytes ${start}-${end}/${o.data.length}` }, body: o.data.subarray(start, end + 1) };
    }
    return { status: 200, headers: common, body: o.data };
  }

  const host = opts.host ?? '127.0.0.1';
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    url: `https://${host}:${port}`,
    received,
    objects,
    close: () => {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}
