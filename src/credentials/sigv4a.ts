// SigV4a (AWS4-ECDSA-P256-SHA256): the request is signed with an ECDSA P-256 key that both sides
// derive from the access key pair, so the signature holds in every region of X-Amz-Region-Set.
// The derivation is NIST SP 800-108's KDF in counter mode with HMAC-SHA256, keyed with
// "AWS4A" + secret, as AWS specifies it: the first candidate that is at most n-2 is the private
// scalar minus one. Everything else is node:crypto.

import { createECDH, createHmac, createPrivateKey, createPublicKey, sign, verify, type KeyObject } from 'node:crypto';
import type { AwsKeys } from './sigv4.js';

/** n − 2 for P-256 (n: the order of the curve's base point). */
const N_MINUS_2 = BigInt('0xffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc63254f');
const LABEL = Buffer.from('AWS4-ECDSA-P256-SHA256', 'latin1');

const b64url = (b: Buffer) => b.toString('base64url');

const cache = new Map<string, KeyObject>();
const CACHE_MAX = 16;

/** The private scalar d of an access key pair (32 bytes, big-endian). */
export function deriveScalar(accessKeyId: string, secretAccessKey: string): Buffer {
  const key = Buffer.from(`AWS4A${secretAccessKey}`, 'utf8');
  const id = Buffer.from(accessKeyId, 'utf8');
  for (let counter = 1; counter <= 254; counter++) {
    const fixed = Buffer.concat([Buffer.from([0, 0, 0, 1]), LABEL, Buffer.from([0]), id, Buffer.from([counter]), Buffer.from([0, 0, 1, 0])]);
    const k0 = BigInt(`0x${createHmac('sha256', key).update(fixed).digest('hex')}`);
    if (k0 <= N_MINUS_2) return Buffer.from((k0 + 1n).toString(16).padStart(64, '0'), 'hex');
  }
  // Each candidate fails with probability ~2^-32: 254 in a row do not happen.
  throw new Error('SigV4a key derivation found no key');
}

/** The derived key pair as a node:crypto private key. */
export function deriveKey(keys: Pick<AwsKeys, 'accessKeyId' | 'secretAccessKey'>): KeyObject {
  const id = `${keys.accessKeyId}\0${keys.secretAccessKey}`;
  let k = cache.get(id);
  if (!k) {
    const d = deriveScalar(keys.accessKeyId, keys.secretAccessKey);
    const ecdh = createECDH('prime256v1');
    ecdh.setPrivateKey(d);
    const pub = ecdh.getPublicKey(); // 04 || X || Y
    k = createPrivateKey({ key: { kty: 'EC', crv: 'P-256', d: b64url(d), x: b64url(pub.subarray(1, 33)), y: b64url(pub.subarray(33, 65)) }, format: 'jwk' });
    if (cache.size >= CACHE_MAX) cache.delete(cache.keys().next().value!);
    cache.set(id, k);
  }
  return k;
}

/** The public point of the derived key, as hex X and Y (how AWS's test suite publishes it). */
export function derivedPublicKey(keys: Pick<AwsKeys, 'accessKeyId' | 'secretAccessKey'>): { x: string; y: string } {
  const jwk = createPublicKey(deriveKey(keys)).export({ format: 'jwk' });
  return { x: Buffer.from(jwk.x!, 'base64url').toString('hex'), y: Buffer.from(jwk.y!, 'base64url').toString('hex') };
}

/** hex(DER(ECDSA-P256-SHA256(string to sign))). */
export function signV4a(keys: AwsKeys, stringToSign: string): string {
  return sign('sha256', Buffer.from(stringToSign, 'utf8'), { key: deriveKey(keys), dsaEncoding: 'der' }).toString('hex');
}

/** Check a SigV4a signature against a public point (tests, and a server's view of a request). */
export function verifyV4a(publicKey: { x: string; y: string }, stringToSign: string, signatureHex: string): boolean {
  const key = createPublicKey({ key: { kty: 'EC', crv: 'P-256', x: b64url(Buffer.from(publicKey.x, 'hex')), y: b64url(Buffer.from(publicKey.y, 'hex')) }, format: 'jwk' });
  return verify('sha256', Buffer.from(stringToSign, 'utf8'), { key, dsaEncoding: 'der' }, Buffer.from(signatureHex, 'hex'));
}
