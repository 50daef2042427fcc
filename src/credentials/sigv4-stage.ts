// The SigV4 stage of the proxy's request pipeline (SPEC §7, AWS bullet). A request signed with
// a masked AWS credential is recognised by the access key's sentinel in its signature (the
// Authorization header's Credential, or a presigned URL's X-Amz-Credential), and — toward the
// access key's injectHosts, over terminated TLS or with allowPlaintextInject — signed again
// with the real credential: real key id, real session token, new signature. Every form current
// AWS clients send is re-signed: header and presigned (query) signatures, SigV4 and SigV4a,
// payloads given, unsigned, hashed here, or aws-chunked with chunk and trailer signatures
// re-signed as the body streams. `credentials.sigv4.<form>` may refuse a form ("deny") or let it
// through untouched ("passthrough") instead.
//
// This stage runs before the credential stage: it takes the AWS sentinels out of the request,
// so the credential stage sees none of them there (elsewhere in the request, or toward another
// host, the credential stage's injection and tripwire apply as to any secret). The secret key's
// sentinel is never swapped for anything: it is only ever an input of signatures.
//
// A request that names the sentinel but cannot be re-signed exactly as AWS will check it fails
// here with a clear error; it is never forwarded half re-signed.

import { Readable } from 'node:stream';
import type { SigV4Form, SigV4Handling } from '../policy.js';
import { ruleMatches } from '../proxy/domains.js';
import { isHopByHop, readBounded, RefusedError, type ProxyRequest, type Refusal, type Stage } from '../proxy/pipeline.js';
import { ChunkResigner } from './aws-chunked.js';
import type { UseSink } from './mint-stage.js';
import { MAX_FORM, mintingCall } from './minted.js';
import type { AwsCredential } from './plan.js';
import {
  ECDSA_ALGORITHM,
  EMPTY_SHA256,
  findClientAuth,
  isS3,
  percentDecode,
  queryParameter,
  resign,
  sha256Hex,
  SigV4Error,
  splitTarget,
  UNSIGNED_PAYLOAD,
  type AwsKeys,
  type ClientAuth,
  type Header,
} from './sigv4.js';

const FORM_NAMES: Record<SigV4Form, string> = {
  presigned: 'a presigned URL (X-Amz-Signature in the query)',
  streaming: 'an aws-chunked streaming upload (x-amz-content-sha256: STREAMING-…)',
  sigv4a: 'a SigV4a request (AWS4-ECDSA-P256-SHA256)',
};

/** The largest body srt holds to hash it, for a request whose payload hash is not given. */
export const MAX_HASHED_BODY = 16 * 1024 * 1024;

export interface SigV4StageOptions {
  sigv4: Record<SigV4Form, SigV4Handling>;
  /** Told which credential signed each request and what the call is (mint-stage.ts). */
  uses?: UseSink;
  allowPlaintextInject: boolean;
  log?: (line: string) => void;
  maxHashedBody?: number;
}

const HEX64 = /^[0-9a-f]{64}$/;
const STREAMING_SIGNED: Record<string, { algorithm: string; trailer: boolean }> = {
  'STREAMING-AWS4-HMAC-SHA256-PAYLOAD': { algorithm: 'AWS4-HMAC-SHA256', trailer: false },
  'STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER': { algorithm: 'AWS4-HMAC-SHA256', trailer: true },
  'STREAMING-AWS4-ECDSA-P256-SHA256-PAYLOAD': { algorithm: ECDSA_ALGORITHM, trailer: false },
  'STREAMING-AWS4-ECDSA-P256-SHA256-PAYLOAD-TRAILER': { algorithm: ECDSA_ALGORITHM, trailer: true },
};
/** Payload hashes that sign nothing of the body: the body goes as it is. */
const BODY_UNSIGNED = new Set([UNSIGNED_PAYLOAD, 'STREAMING-UNSIGNED-PAYLOAD-TRAILER']);

function headerValues(headers: readonly Header[], name: string): string[] {
  return headers.filter(([k]) => k.toLowerCase() === name).map(([, v]) => v);
}

const CANNOT = 'sigv4-cannot-resign';

export class SigV4Stage implements Stage {
  readonly name = 'sigv4';
  private readonly credentials: AwsCredential[];

  constructor(
    credentials: readonly AwsCredential[],
    private readonly opts: SigV4StageOptions,
  ) {
    this.credentials = [...credentials];
  }

  /** A credential minted during the run (mint-stage.ts): requests signed with its key id's
   *  sentinel are re-signed with it. */
  add(c: AwsCredential): void {
    this.credentials.push(c);
  }

  private mayGo(c: AwsCredential, t: ProxyRequest['target']): boolean {
    return c.accessKeyId.injectHosts.some((r) => ruleMatches(r, t.host.host, t.port));
  }

  /** The credential whose key-id sentinel the request's signature (header or query) names. */
  private find(req: ProxyRequest): AwsCredential | undefined {
    const authorization = headerValues(req.headers, 'authorization');
    const { query } = splitTarget(req.path);
    const decoded = query === '' ? '' : percentDecode(query).toString('latin1');
    return this.credentials.find((c) => authorization.some((v) => v.includes(c.accessKeyId.sentinel)) || decoded.includes(c.accessKeyId.sentinel));
  }

  async request(req: ProxyRequest): Promise<Refusal | undefined> {
    if (this.credentials.length === 0) return undefined;
    const cred = this.find(req);
    if (!cred) return undefined;
    // Toward another host the sentinel is the credential stage's business (its tripwire); over
    // plain HTTP without allowPlaintextInject no real value is sent anywhere.
    if (!this.mayGo(cred, req.target)) return undefined;
    if (req.scheme !== 'https' && !this.opts.allowPlaintextInject) return undefined;
    const label = cred.accessKeyId.label;
    const host = req.target.host.host;
    const cannot = (why: string, status = 400): Refusal => {
      this.opts.log?.(`sigv4: ${req.method} ${host}: not re-signed: ${why}`);
      return { refuse: `cannot re-sign this AWS request signed with ${label}'s sentinel: ${why}`, status, proxyError: CANNOT };
    };

    let auth: ClientAuth | null;
    try {
      auth = findClientAuth(req.path, req.headers);
    } catch (e) {
      if (e instanceof SigV4Error) return cannot(e.message);
      throw e;
    }
    const sentinel = cred.accessKeyId.sentinel;
    if (!auth || auth.accessKeyId !== sentinel) {
      const authorization = headerValues(req.headers, 'authorization');
      if (authorization.some((v) => /^\s*AWS\s/.test(v) && v.includes(sentinel)) || /(^|[?&])AWSAccessKeyId=/.test(splitTarget(req.path).query)) {
        return cannot('it is signed with AWS Signature Version 2, which srt does not re-sign (configure the client for SigV4: s3v4)');
      }
      if (authorization.some((v) => v.includes(sentinel))) return cannot('its Authorization header is not a SigV4 signature srt can read');
      if (auth?.form === 'query' || /(^|[?&])X-Amz-Credential=/i.test(splitTarget(req.path).query)) return cannot('its X-Amz-Credential does not name the key id');
      return undefined; // the key id elsewhere in the target (an IAM call naming it): not a signature
    }

    const payloadHeader = headerValues(req.headers, 'x-amz-content-sha256');
    if (payloadHeader.length > 1) return cannot('it has several x-amz-content-sha256 headers');
    // A presigned URL may carry its payload hash in the query (the S3 presigner puts UNSIGNED-PAYLOAD there).
    let given: string | undefined;
    try {
      given = (payloadHeader[0] ?? (auth.form === 'query' ? queryParameter(req.path, 'X-Amz-Content-Sha256') : undefined))?.trim();
    } catch (e) {
      if (e instanceof SigV4Error) return cannot(e.message);
      throw e;
    }
    const forms: SigV4Form[] = [];
    if (auth.form === 'query') forms.push('presigned');
    if (given?.startsWith('STREAMING-')) forms.push('streaming');
    if (auth.algorithm === ECDSA_ALGORITHM) forms.push('sigv4a');
    // Every form is re-signed (SPEC §7); credentials.sigv4.<form> decides only what becomes of a
    // request of that form srt cannot re-sign: "deny" (default) answers 403 naming the form and
    // the key, "passthrough" forwards it unchanged so the tool gets AWS's own refusal.
    const fallback = (why: string, status = 400): Refusal | undefined => {
      const pass = forms.find((f) => this.opts.sigv4[f] === 'passthrough');
      if (pass) {
        this.opts.log?.(`sigv4: ${req.method} ${host}: forwarded without re-signing (${why}; credentials.sigv4.${pass} is "passthrough")`);
        return undefined;
      }
      const f = forms[0];
      if (!f) return cannot(why, status);
      this.opts.log?.(`sigv4: ${req.method} ${host}: refused (${f}: ${why})`);
      return { refuse: `cannot re-sign ${FORM_NAMES[f]} signed with ${label}'s sentinel (${why}): credentials.sigv4.${f} is "deny"`, status: 403, proxyError: CANNOT };
    };

    // The payload hash that is signed: as the client gave it, or the body's own.
    let payloadHash: string;
    let chunked: { trailer: boolean } | undefined;
    if (given !== undefined) {
      const streaming = STREAMING_SIGNED[given];
      if (streaming) {
        if (streaming.algorithm !== auth.algorithm) return fallback(`x-amz-content-sha256 ${given} does not match its ${auth.algorithm} signature`);
        if (!req.body) return fallback(`x-amz-content-sha256 is ${given} but the request has no body`);
        chunked = { trailer: streaming.trailer };
      } else if (!HEX64.test(given) && !BODY_UNSIGNED.has(given)) {
        return fallback(`x-amz-content-sha256 "${given.slice(0, 60)}" is not a payload form srt can re-sign`);
      }
      payloadHash = given;
    } else if (auth.form === 'query' && isS3(auth.scope.service)) {
      payloadHash = UNSIGNED_PAYLOAD;
    } else if (!req.body) {
      payloadHash = EMPTY_SHA256;
    } else {
      const max = this.opts.maxHashedBody ?? MAX_HASHED_BODY;
      const length = Number(headerValues(req.headers, 'content-length')[0] ?? NaN);
      const tooLarge = () => fallback(`its payload is signed without x-amz-content-sha256, so srt must hash the body first, and it is larger than ${max} bytes`, 413);
      if (length > max) return tooLarge();
      const body = await readBounded(req.body, max);
      // Part of the body is read: it cannot be forwarded unchanged either.
      if (body === null) return cannot(`its payload is signed without x-amz-content-sha256, so srt must hash the body first, and it is larger than ${max} bytes`, 413);
      payloadHash = sha256Hex(body);
      req.body = Readable.from([body]);
    }

    // A small form body (the query protocol's Action) is read to tell what the call is.
    let form: string | undefined;
    const type = headerValues(req.headers, 'content-type')[0]?.toLowerCase() ?? '';
    if (req.body && type.startsWith('application/x-www-form-urlencoded') && !chunked && Number(headerValues(req.headers, 'content-length')[0] ?? NaN) <= MAX_FORM) {
      const body = await readBounded(req.body, MAX_FORM);
      if (body === null) return cannot(`its form-encoded body is longer than its Content-Length`);
      form = body.toString('latin1');
      req.body = Readable.from([body]);
    }
    const call = mintingCall({ service: auth.scope.service, method: req.method, path: req.path, host, ...(form !== undefined ? { form } : {}), ...(headerValues(req.headers, 'x-amz-target')[0] ? { amzTarget: headerValues(req.headers, 'x-amz-target')[0]! } : {}) });

    const keys: AwsKeys = { accessKeyId: cred.accessKeyId.real, secretAccessKey: cred.secretAccessKey.real };
    if (cred.sessionToken) keys.sessionToken = cred.sessionToken.real;
    // The response could echo the real key id or token: it must come back readable to be re-masked.
    const headers: Header[] = [...req.headers.filter(([k]) => k.toLowerCase() !== 'accept-encoding'), ['accept-encoding', 'identity']];
    let out;
    try {
      out = resign({ method: req.method, target: req.path, authority: req.authority, headers, auth, keys, payloadHash, strippedByProxy: isHopByHop });
    } catch (e) {
      if (e instanceof SigV4Error) return fallback(e.message);
      throw e;
    }
    req.path = out.target;
    req.headers = out.headers;
    if (chunked) {
      // Mid-body: the pipeline aborts the upstream request and answers the client if it still can.
      const fail = (why: string) => new RefusedError(cannot(why));
      const t = new ChunkResigner(out.signer, { seed: out.signature, trailer: chunked.trailer, fail });
      const body = req.body!;
      body.on('error', (e) => t.destroy(e));
      t.on('close', () => {
        if (!body.readableEnded) body.destroy();
      });
      req.body = body.pipe(t);
    }
    this.opts.uses?.used(req, new Set([cred.accessKeyId]), call ?? null);
    this.opts.log?.(`sigv4: ${req.method} ${host}: re-signed with ${label} (${[auth.form, ...forms.filter((f) => f !== 'presigned'), given ?? payloadHash.slice(0, 12)].join(', ')})`);
    return undefined;
  }
}
