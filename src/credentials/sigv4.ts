// AWS Signature Version 4 (and 4a), as the proxy needs it: a request the command signed with
// sentinel credentials is signed again, with the real ones, exactly as AWS will check it (SPEC §7).
// The client's choices are kept — its credential scope, its SignedHeaders, its x-amz-date, its
// payload hash — and only the key id, the session token and the signature change. Pure: no I/O;
// strings that carry request bytes (paths, header values) are latin1, one character per byte, as
// node:http hands them over.
//
//   canonical request = METHOD \n canonical URI \n canonical query \n canonical headers \n
//                       signed headers \n payload hash
//   string to sign    = algorithm \n x-amz-date \n scope \n hex(sha256(canonical request))
//   signature         = hex(HMAC(signing key, string to sign))             SigV4
//                       hex(DER(ECDSA-P256-SHA256(derived key, string)))    SigV4a (sigv4a.ts)

import { createHash, createHmac } from 'node:crypto';
import type { Header } from '../proxy/pipeline.js';
import { signV4a } from './sigv4a.js';

export type { Header };

export const HMAC_ALGORITHM = 'AWS4-HMAC-SHA256';
export const ECDSA_ALGORITHM = 'AWS4-ECDSA-P256-SHA256';
export type Algorithm = typeof HMAC_ALGORITHM | typeof ECDSA_ALGORITHM;

export const UNSIGNED_PAYLOAD = 'UNSIGNED-PAYLOAD';
export const EMPTY_SHA256 = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855';

/** The real credentials a request is signed with. */
export interface AwsKeys {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
}

/** A signing failure the proxy answers with a clear error instead of forwarding the request. */
export class SigV4Error extends Error {}

export function sha256Hex(data: string | Buffer): string {
  return createHash('sha256').update(typeof data === 'string' ? Buffer.from(data, 'latin1') : data).digest('hex');
}

function hmac(key: Buffer | string, data: string): Buffer {
  return createHmac('sha256', key).update(data, 'utf8').digest();
}

// --- encoding ---------------------------------------------------------------------------------

/** AWS's URI encoding of one byte: unreserved characters stay, everything else is %XX (upper case). */
const ENCODED: string[] = Array.from({ length: 256 }, (_, b) => {
  const c = String.fromCharCode(b);
  return /[A-Za-z0-9\-._~]/.test(c) ? c : `%${b.toString(16).toUpperCase().padStart(2, '0')}`;
});

export function uriEncode(bytes: Buffer, keepSlash = false): string {
  let out = '';
  for (const b of bytes) out += keepSlash && b === 0x2f ? '/' : ENCODED[b]!;
  return out;
}

const latin1 = (s: string) => Buffer.from(s, 'latin1');
const isHex = (c: number) => (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x46) || (c >= 0x61 && c <= 0x66);

/** Percent-decoding to bytes; a `%` not followed by two hex digits is a literal `%` (as AWS reads it). */
export function percentDecode(text: string): Buffer {
  const src = latin1(text);
  const out = Buffer.allocUnsafe(src.length);
  let n = 0;
  for (let i = 0; i < src.length; i++) {
    const c = src[i]!;
    if (c === 0x25 && i + 2 < src.length && isHex(src[i + 1]!) && isHex(src[i + 2]!)) {
      out[n++] = parseInt(String.fromCharCode(src[i + 1]!, src[i + 2]!), 16);
      i += 2;
    } else out[n++] = c;
  }
  return out.subarray(0, n);
}

// --- canonical request ------------------------------------------------------------------------

/** How a service builds the canonical URI: S3 signs the path as sent; every other service
 *  removes dot segments and empty segments, then encodes the (already encoded) path again. */
export interface UriRules {
  normalize: boolean;
  encode: boolean;
}

const S3_SERVICES = new Set(['s3', 's3express', 's3-outposts', 's3-object-lambda']);
export const isS3 = (service: string) => S3_SERVICES.has(service);

export function uriRules(service: string): UriRules {
  return isS3(service) ? { normalize: false, encode: false } : { normalize: true, encode: true };
}

/** RFC 3986 dot-segment removal plus empty-segment removal, as AWS normalises paths. */
function normalizePath(path: string): string {
  const out: string[] = [];
  for (const seg of path.split('/')) {
    if (seg === '' || seg === '.') continue;
    if (seg === '..') out.pop();
    else out.push(seg);
  }
  return `/${out.join('/')}${out.length > 0 && path.endsWith('/') ? '/' : ''}`;
}

export function canonicalUri(path: string, rules: UriRules): string {
  let p = path === '' ? '/' : path;
  if (rules.normalize) p = normalizePath(p);
  return rules.encode ? uriEncode(latin1(p), true) : p;
}

/** One `name=value` pair of a query string, raw and canonical. */
interface QueryParam {
  raw: string;
  name: string;
  key: string;
  value: string;
}

function parseQuery(query: string): QueryParam[] {
  const out: QueryParam[] = [];
  for (const raw of query.split('&')) {
    if (raw === '') continue;
    const eq = raw.indexOf('=');
    const name = eq === -1 ? raw : raw.slice(0, eq);
    const value = eq === -1 ? '' : raw.slice(eq + 1);
    out.push({ raw, name: percentDecode(name).toString('latin1'), key: uriEncode(percentDecode(name)), value: uriEncode(percentDecode(value)) });
  }
  return out;
}

/** Canonical query: every parameter except `exclude`d ones, decoded and strictly re-encoded, sorted by name then value. */
export function canonicalQuery(query: string, exclude: ReadonlySet<string> = new Set()): string {
  return parseQuery(query)
    .filter((p) => !exclude.has(p.name))
    .map((p) => [p.key, p.value] as const)
    .sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0))
    .map(([k, v]) => `${k}=${v}`)
    .join('&');
}

/** A header value as it is signed: trimmed, every run of whitespace one space. */
function canonicalValue(value: string): string {
  return value.trim().replace(/\s+/g, ' ');
}

export interface CanonicalInput {
  method: string;
  /** Origin-form target as it goes upstream: path, then `?query` if any. */
  target: string;
  /** Host / :authority as it goes upstream; it is what `host` signs. */
  authority: string;
  headers: readonly Header[];
  signedHeaders: readonly string[];
  payloadHash: string;
  rules: UriRules;
  /** Query parameters left out of the canonical query (X-Amz-Signature for presigned URLs). */
  unsignedQuery?: ReadonlySet<string>;
}

export function splitTarget(target: string): { path: string; query: string } {
  const q = target.indexOf('?');
  return q === -1 ? { path: target, query: '' } : { path: target.slice(0, q), query: target.slice(q + 1) };
}

export function canonicalRequest(c: CanonicalInput): string {
  const { path, query } = splitTarget(c.target);
  const lines: string[] = [];
  for (const name of c.signedHeaders) {
    let value: string;
    if (name === 'host') value = c.authority;
    else {
      const values = c.headers.filter(([k]) => k.toLowerCase() === name).map(([, v]) => canonicalValue(v));
      if (values.length === 0) throw new SigV4Error(`the signed header ${name} is not in the request`);
      value = values.join(',');
    }
    lines.push(`${name}:${value}\n`);
  }
  return [c.method, canonicalUri(path, c.rules), canonicalQuery(query, c.unsignedQuery), lines.join(''), c.signedHeaders.join(';'), c.payloadHash].join('\n');
}

// --- credentials, scope, keys -----------------------------------------------------------------

/** The credential scope after the key id: `20150830/us-east-1/s3/aws4_request` (SigV4) or
 *  `20150830/s3/aws4_request` (SigV4a, whose regions are in X-Amz-Region-Set). */
export interface Scope {
  text: string;
  date: string;
  region?: string;
  service: string;
}

export function parseScope(text: string, algorithm: Algorithm): Scope {
  const parts = text.split('/');
  const ok = algorithm === HMAC_ALGORITHM ? parts.length === 4 : parts.length === 3;
  if (!ok || parts[parts.length - 1] !== 'aws4_request' || !/^\d{8}$/.test(parts[0]!) || parts.some((p) => p === '')) {
    throw new SigV4Error(`malformed credential scope "${text}"`);
  }
  return algorithm === HMAC_ALGORITHM ? { text, date: parts[0]!, region: parts[1]!, service: parts[2]! } : { text, date: parts[0]!, service: parts[1]! };
}

/** SigV4 signing keys, derived once per secret, day, region and service. */
const keyCache = new Map<string, Buffer>();
const KEY_CACHE_MAX = 64;

export function signingKey(secret: string, scope: Scope): Buffer {
  const id = `${secret}\0${scope.text}`;
  let key = keyCache.get(id);
  if (!key) {
    key = hmac(hmac(hmac(hmac(`AWS4${secret}`, scope.date), scope.region ?? ''), scope.service), 'aws4_request');
    if (keyCache.size >= KEY_CACHE_MAX) keyCache.delete(keyCache.keys().next().value!);
    keyCache.set(id, key);
  }
  return key;
}

/** What signs one request and everything chained to it (chunks, trailer). */
export interface Signer {
  algorithm: Algorithm;
  amzDate: string;
  scope: Scope;
  keys: AwsKeys;
  sign(stringToSign: string): string;
}

export function makeSigner(algorithm: Algorithm, amzDate: string, scope: Scope, keys: AwsKeys): Signer {
  if (!/^\d{8}T\d{6}Z$/.test(amzDate)) throw new SigV4Error(`malformed x-amz-date "${amzDate}"`);
  if (algorithm === HMAC_ALGORITHM) {
    const key = signingKey(keys.secretAccessKey, scope);
    return { algorithm, amzDate, scope, keys, sign: (s) => createHmac('sha256', key).update(s, 'utf8').digest('hex') };
  }
  return { algorithm, amzDate, scope, keys, sign: (s) => signV4a(keys, s) };
}

export function stringToSign(algorithm: string, amzDate: string, scope: string, canonical: string): string {
  return `${algorithm}\n${amzDate}\n${scope}\n${sha256Hex(canonical)}`;
}

// --- the two places a signature lives ---------------------------------------------------------

/** The signature of a request as the client made it, wherever it is. */
export interface ClientAuth {
  form: 'header' | 'query';
  algorithm: Algorithm;
  accessKeyId: string;
  scope: Scope;
  signedHeaders: string[];
  signature: string;
  amzDate: string;
}

const algorithms: readonly string[] = [HMAC_ALGORITHM, ECDSA_ALGORITHM];

/** `AWS4-HMAC-SHA256 Credential=AKID/scope, SignedHeaders=a;b, Signature=hex` (null: not SigV4). */
export function parseAuthorization(value: string): { algorithm: Algorithm; accessKeyId: string; scope: string; signedHeaders: string; signature: string } | null {
  const m = /^\s*(AWS4-[A-Z0-9-]+)\s+(.*)$/s.exec(value);
  if (!m || !algorithms.includes(m[1]!)) return null;
  const fields = new Map<string, string>();
  for (const part of m[2]!.split(',')) {
    const p = part.trim();
    if (p === '') continue;
    const eq = p.indexOf('=');
    if (eq === -1) throw new SigV4Error(`malformed Authorization header (component "${p}")`);
    const k = p.slice(0, eq).trim();
    if (fields.has(k)) throw new SigV4Error(`malformed Authorization header (${k} twice)`);
    fields.set(k, p.slice(eq + 1).trim());
  }
  const credential = fields.get('Credential');
  const signedHeaders = fields.get('SignedHeaders');
  const signature = fields.get('Signature');
  if (credential === undefined || signedHeaders === undefined || signature === undefined) {
    throw new SigV4Error('malformed Authorization header (Credential, SignedHeaders and Signature are all required)');
  }
  const slash = credential.indexOf('/');
  if (slash <= 0) throw new SigV4Error('malformed Authorization header (Credential has no scope)');
  return { algorithm: m[1] as Algorithm, accessKeyId: credential.slice(0, slash), scope: credential.slice(slash + 1), signedHeaders, signature };
}

function signedHeaderList(text: string): string[] {
  const names = text.split(';').map((h) => h.trim().toLowerCase());
  if (names.some((n) => n === '' || !/^[!#$%&'*+\-.^_`|~0-9a-z]+$/.test(n))) throw new SigV4Error(`malformed SignedHeaders "${text}"`);
  if (!names.includes('host')) throw new SigV4Error('SignedHeaders does not include host');
  return names;
}

function headerValues(headers: readonly Header[], name: string): string[] {
  return headers.filter(([k]) => k.toLowerCase() === name).map(([, v]) => v);
}

function oneHeader(headers: readonly Header[], name: string): string | undefined {
  const v = headerValues(headers, name);
  if (v.length > 1) throw new SigV4Error(`the request has several ${name} headers`);
  return v[0];
}

/** The query parameters of presigned URLs (case-sensitive, as AWS reads them). */
export const Q = {
  algorithm: 'X-Amz-Algorithm',
  credential: 'X-Amz-Credential',
  date: 'X-Amz-Date',
  signedHeaders: 'X-Amz-SignedHeaders',
  signature: 'X-Amz-Signature',
  token: 'X-Amz-Security-Token',
} as const;

function queryValue(params: QueryParam[], name: string): string | undefined {
  const hits = params.filter((p) => p.name === name);
  if (hits.length > 1) throw new SigV4Error(`the query has several ${name} parameters`);
  if (hits.length === 0) return undefined;
  const raw = hits[0]!.raw;
  const eq = raw.indexOf('=');
  return eq === -1 ? '' : percentDecode(raw.slice(eq + 1)).toString('latin1');
}

/** The decoded value of one query parameter of `target` (undefined: absent). */
export function queryParameter(target: string, name: string): string | undefined {
  return queryValue(parseQuery(splitTarget(target).query), name);
}

/**
 * The SigV4 signature a request carries: in its Authorization header, or in its query (a
 * presigned URL). Null when it carries none. Throws SigV4Error for a signature srt cannot read.
 */
export function findClientAuth(target: string, headers: readonly Header[]): ClientAuth | null {
  const authorization = headerValues(headers, 'authorization');
  const { query } = splitTarget(target);
  const params = parseQuery(query);
  const qCredential = queryValue(params, Q.credential);
  const header = authorization.map(parseAuthorization).filter((a) => a !== null);
  if (header.length > 0 && qCredential !== undefined) throw new SigV4Error('the request is signed twice (Authorization header and X-Amz-Credential)');
  if (header.length > 0) {
    if (authorization.length > 1) throw new SigV4Error('the request has several Authorization headers');
    const a = header[0]!;
    const amzDate = oneHeader(headers, 'x-amz-date');
    if (amzDate === undefined) throw new SigV4Error('the request has no x-amz-date header (srt signs only with the client\'s own timestamp)');
    return { form: 'header', algorithm: a.algorithm, accessKeyId: a.accessKeyId, scope: parseScope(a.scope, a.algorithm), signedHeaders: signedHeaderList(a.signedHeaders), signature: a.signature, amzDate: amzDate.trim() };
  }
  if (qCredential === undefined) return null;
  const algorithm = queryValue(params, Q.algorithm);
  if (algorithm === undefined || !algorithms.includes(algorithm)) throw new SigV4Error(`unknown X-Amz-Algorithm "${algorithm ?? ''}"`);
  const amzDate = queryValue(params, Q.date);
  if (amzDate === undefined) throw new SigV4Error('the presigned URL has no X-Amz-Date');
  const signedHeaders = queryValue(params, Q.signedHeaders);
  if (signedHeaders === undefined) throw new SigV4Error('the presigned URL has no X-Amz-SignedHeaders');
  const signature = queryValue(params, Q.signature);
  if (signature === undefined) throw new SigV4Error('the presigned URL has no X-Amz-Signature');
  const slash = qCredential.indexOf('/');
  if (slash <= 0) throw new SigV4Error('malformed X-Amz-Credential (no scope)');
  const alg = algorithm as Algorithm;
  return { form: 'query', algorithm: alg, accessKeyId: qCredential.slice(0, slash), scope: parseScope(qCredential.slice(slash + 1), alg), signedHeaders: signedHeaderList(signedHeaders), signature, amzDate };
}

// --- re-signing -------------------------------------------------------------------------------

export interface ResignInput {
  method: string;
  target: string;
  authority: string;
  headers: readonly Header[];
  auth: ClientAuth;
  keys: AwsKeys;
  /** The payload hash to sign (the request's x-amz-content-sha256, UNSIGNED-PAYLOAD, or the
   *  body's own hash): the caller decides, since only it can read the body. */
  payloadHash: string;
  /** Signed header names the proxy itself removed (hop-by-hop): dropped from SignedHeaders. */
  strippedByProxy?: (name: string) => boolean;
  /** Test seam: URI rules other than the service's own (the official suite's `normalize: false`). */
  rules?: UriRules;
  /** Test seam: the session token goes into a presigned URL unsigned (the suite's
   *  `omit_session_token`; AWS IoT's convention, applied to its service name by default). */
  unsignedQueryToken?: boolean;
}

export interface Resigned {
  target: string;
  headers: Header[];
  signature: string;
  /** Signs what is chained to the request (aws-chunked chunks and trailer). */
  signer: Signer;
  canonicalRequest: string;
  stringToSign: string;
}

/** Services that expect the session token appended to a presigned URL after signing. */
const TOKEN_AFTER_SIGNING = new Set(['iotdevicegateway']);

function sortedUnique(names: string[]): string[] {
  return [...new Set(names)].sort();
}

/** Replace (or append) query parameters in a raw query string, keeping every other byte. */
function setQuery(query: string, values: ReadonlyMap<string, string | null>): string {
  const done = new Set<string>();
  const parts: string[] = [];
  for (const raw of query.split('&')) {
    if (raw === '') continue;
    const eq = raw.indexOf('=');
    const name = percentDecode(eq === -1 ? raw : raw.slice(0, eq)).toString('latin1');
    if (!values.has(name)) {
      parts.push(raw);
      continue;
    }
    const v = values.get(name)!;
    done.add(name);
    if (v !== null) parts.push(`${name}=${uriEncode(latin1(v))}`);
  }
  for (const [name, v] of values) if (!done.has(name) && v !== null) parts.push(`${name}=${uriEncode(latin1(v))}`);
  return parts.join('&');
}

/**
 * Sign `input`'s request with `keys`, keeping the client's scope, SignedHeaders (less what the
 * proxy stripped, plus x-amz-security-token when srt adds the session token) and timestamp.
 * Throws SigV4Error when the request cannot be signed as it stands.
 */
export function resign(input: ResignInput): Resigned {
  const { auth, keys } = input;
  const rules = input.rules ?? uriRules(auth.scope.service);
  const signer = makeSigner(auth.algorithm, auth.amzDate, auth.scope, keys);
  const present = (name: string) => name === 'host' || input.headers.some(([k]) => k.toLowerCase() === name);
  let signedHeaders = auth.signedHeaders.filter((h) => present(h) || !input.strippedByProxy?.(h));
  const credential = `${keys.accessKeyId}/${auth.scope.text}`;

  if (auth.form === 'header') {
    let headers = input.headers.filter(([k]) => k.toLowerCase() !== 'authorization');
    if (keys.sessionToken !== undefined) {
      const had = headers.some(([k]) => k.toLowerCase() === 'x-amz-security-token');
      headers = headers.filter(([k]) => k.toLowerCase() !== 'x-amz-security-token');
      headers.push(['x-amz-security-token', keys.sessionToken]);
      // A token the client did not sign stays unsigned (some services want it so); a token it
      // did not send at all is added and signed.
      if (!had) signedHeaders = [...signedHeaders, 'x-amz-security-token'];
    }
    signedHeaders = sortedUnique(signedHeaders);
    const canonical = canonicalRequest({ method: input.method, target: input.target, authority: input.authority, headers, signedHeaders, payloadHash: input.payloadHash, rules });
    const sts = stringToSign(auth.algorithm, auth.amzDate, auth.scope.text, canonical);
    const signature = signer.sign(sts);
    headers.push(['authorization', `${auth.algorithm} Credential=${credential}, SignedHeaders=${signedHeaders.join(';')}, Signature=${signature}`]);
    return { target: input.target, headers, signature, signer, canonicalRequest: canonical, stringToSign: sts };
  }

  // Presigned URL: everything is in the query; the signature itself is never signed.
  signedHeaders = sortedUnique(signedHeaders);
  const { path, query } = splitTarget(input.target);
  const tokenAfter = input.unsignedQueryToken ?? TOKEN_AFTER_SIGNING.has(auth.scope.service);
  const updates = new Map<string, string | null>([
    [Q.credential, credential],
    [Q.signedHeaders, signedHeaders.join(';')],
    [Q.signature, null],
  ]);
  if (keys.sessionToken !== undefined) updates.set(Q.token, keys.sessionToken);
  let newQuery = setQuery(query, updates);
  const unsigned = new Set<string>(tokenAfter ? [Q.signature, Q.token] : [Q.signature]);
  const canonical = canonicalRequest({ method: input.method, target: `${path}?${newQuery}`, authority: input.authority, headers: input.headers, signedHeaders, payloadHash: input.payloadHash, rules, unsignedQuery: unsigned });
  const sts = stringToSign(auth.algorithm, auth.amzDate, auth.scope.text, canonical);
  const signature = signer.sign(sts);
  newQuery = setQuery(newQuery, new Map([[Q.signature, signature]]));
  return { target: `${path}?${newQuery}`, headers: [...input.headers], signature, signer, canonicalRequest: canonical, stringToSign: sts };
}
