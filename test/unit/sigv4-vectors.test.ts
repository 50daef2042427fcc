// The official AWS SigV4/SigV4a signing test suite (aws-c-auth, test/fixtures/aws-signing-test-suite),
// run the way the proxy uses the signer: each case's signed request is turned into the request a
// sandboxed client would send (sentinel key id, sentinel session token, a signature made with a
// sentinel secret), re-signed with the case's real credentials, and compared with the suite's
// canonical request, string to sign, signature and signed request.
import { describe, expect, it } from 'vitest';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { findClientAuth, resign, sha256Hex, type Header } from '../../src/credentials/sigv4.js';
import { derivedPublicKey, verifyV4a } from '../../src/credentials/sigv4a.js';

const SUITE = join(import.meta.dirname, '..', 'fixtures', 'aws-signing-test-suite');
const SENTINEL_KEY = 'AKIA2SENTINEL7ABCDEF';
const SENTINEL_TOKEN = 'SENTINELTOKEN0123456789';

interface Context {
  credentials: { access_key_id: string; secret_access_key: string; token?: string };
  normalize: boolean;
  omit_session_token?: boolean;
}

interface RawRequest {
  method: string;
  target: string;
  authority: string;
  headers: Header[];
  body: Buffer;
}

/** A request file of the suite, read as node:http presents a request (latin1, one char per byte). */
function parseRequest(bytes: Buffer): RawRequest {
  const text = bytes.toString('latin1');
  const blank = text.indexOf('\n\n');
  const head = blank === -1 ? text : text.slice(0, blank);
  const body = blank === -1 ? Buffer.alloc(0) : Buffer.from(text.slice(blank + 2), 'latin1');
  const [line, ...rest] = head.split('\n');
  const m = /^(\S+) (.*) HTTP\/1\.1$/.exec(line!)!;
  const headers: Header[] = [];
  for (const l of rest) {
    if (l === '') continue;
    if (/^\s/.test(l)) headers[headers.length - 1]![1] += `\n${l}`;
    else {
      const c = l.indexOf(':');
      headers.push([l.slice(0, c), l.slice(c + 1)]);
    }
  }
  const host = headers.find(([k]) => k.toLowerCase() === 'host')![1];
  return { method: m[1]!, target: m[2]!, authority: host, headers: headers.filter(([k]) => k.toLowerCase() !== 'host'), body };
}

/** What a sandboxed client holding only sentinels would have sent instead of `signed`. */
function asSentinelRequest(signed: RawRequest, ctx: Context): RawRequest {
  const swap = (s: string) => {
    let out = s.split(ctx.credentials.access_key_id).join(SENTINEL_KEY);
    if (ctx.credentials.token) {
      out = out.split(ctx.credentials.token).join(SENTINEL_TOKEN);
      out = out.split(encodeURIComponent(ctx.credentials.token)).join(SENTINEL_TOKEN);
    }
    return out.replace(/(Signature=)[0-9a-f]+/, '$1' + '0'.repeat(64));
  };
  return { ...signed, target: swap(signed.target), headers: signed.headers.map(([k, v]) => [k, swap(v)]) };
}

const read = (dir: string, f: string) => readFileSync(join(dir, f), 'latin1');
const lower = (h: Header[]) => h.map(([k, v]) => `${k.toLowerCase()}:${v}`).sort();

for (const version of ['v4', 'v4a'] as const) {
  describe(`official ${version} test suite`, () => {
    const cases = readdirSync(join(SUITE, version)).sort();
    it('is present', () => expect(cases.length).toBeGreaterThan(30));
    for (const name of cases) {
      const dir = join(SUITE, version, name);
      const ctx = JSON.parse(read(dir, 'context.json')) as Context;
      for (const form of ['header', 'query'] as const) {
        if (!existsSync(join(dir, `${form}-signed-request.txt`))) continue;
        it(`${name} (${form})`, () => {
          const signed = parseRequest(readFileSync(join(dir, `${form}-signed-request.txt`)));
          const sent = asSentinelRequest(signed, ctx);
          const auth = findClientAuth(sent.target, sent.headers)!;
          expect(auth.form).toBe(form);
          expect(auth.accessKeyId).toBe(SENTINEL_KEY);
          const given = sent.headers.find(([k]) => k.toLowerCase() === 'x-amz-content-sha256')?.[1];
          const keys = { accessKeyId: ctx.credentials.access_key_id, secretAccessKey: ctx.credentials.secret_access_key, ...(ctx.credentials.token ? { sessionToken: ctx.credentials.token } : {}) };
          const out = resign({
            method: sent.method,
            target: sent.target,
            authority: sent.authority,
            headers: sent.headers,
            auth,
            keys,
            payloadHash: given ?? sha256Hex(sent.body),
            rules: { normalize: ctx.normalize, encode: true },
            unsignedQueryToken: ctx.omit_session_token === true,
          });
          expect(out.canonicalRequest).toBe(read(dir, `${form}-canonical-request.txt`));
          expect(out.stringToSign).toBe(read(dir, `${form}-string-to-sign.txt`));
          if (version === 'v4') {
            expect(out.signature).toBe(read(dir, `${form}-signature.txt`).trim());
            expect(out.target).toBe(signed.target);
            expect(lower(out.headers)).toEqual(lower(signed.headers));
          } else {
            const pub = JSON.parse(read(dir, 'public-key.json')) as { X: string; Y: string };
            const key = { x: pub.X.toLowerCase(), y: pub.Y.toLowerCase() };
            expect(derivedPublicKey(keys)).toEqual(key);
            // Ours verifies with the suite's public key, and the suite's with ours.
            expect(verifyV4a(key, out.stringToSign, out.signature)).toBe(true);
            expect(verifyV4a(key, out.stringToSign, read(dir, `${form}-signature.txt`).trim())).toBe(true);
            const mine = (s: string) => s.replace(/([?&]X-Amz-Signature=|Signature=)[0-9a-f]+/, '$1SIG');
            expect(mine(out.target)).toBe(mine(signed.target));
            expect(lower(out.headers).map(mine)).toEqual(lower(signed.headers).map(mine));
          }
        });
      }
    }
  });
}
