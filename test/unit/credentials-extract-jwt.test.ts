import * as jose from 'jose';
import { parse as parseYaml } from 'yaml';
import { describe, expect, it } from 'vitest';
import { extract } from '../../src/credentials/extract.js';
import { fakeJwt, parseJwt } from '../../src/credentials/jwt.js';
import { cryptoRandom, SentinelMint } from '../../src/credentials/sentinels.js';

const upper = (v: string) => v.toUpperCase();

describe('extract', () => {
  it('replaces group 1 of every match and keeps the rest, so the file still parses', () => {
    const yml = 'github.com:\n    user: me\n    oauth_token: gho_aaaa\n    git_protocol: https\nghe.example:\n    oauth_token: gho_bbbb\n';
    const x = extract(yml, 'oauth_token:\\s*(\\S+)', false)!;
    expect(x.values).toEqual(['gho_aaaa', 'gho_bbbb']);
    const out = x.render(upper);
    expect(parseYaml(out)).toEqual({ 'github.com': { user: 'me', oauth_token: 'GHO_AAAA', git_protocol: 'https' }, 'ghe.example': { oauth_token: 'GHO_BBBB' } });
  });

  it('.netrc and JSON', () => {
    const netrc = 'machine api.example.com login me password s3cretvalue\nmachine other login you password another1\n';
    expect(extract(netrc, 'password\\s+(\\S+)', false)!.render(upper)).toBe('machine api.example.com login me password S3CRETVALUE\nmachine other login you password ANOTHER1\n');
    const json = JSON.stringify({ auths: { a: { token: 'tok-1' }, b: { token: 'tok-2' } } }, null, 2);
    const out = extract(json, '"token":\\s*"([^"]+)"', false)!.render(upper);
    expect(JSON.parse(out)).toEqual({ auths: { a: { token: 'TOK-1' }, b: { token: 'TOK-2' } } });
  });

  it('no match → null; empty or absent group 1 is skipped; an empty-matching pattern terminates', () => {
    expect(extract('nothing here', 'token=(\\S+)', false)).toBeNull();
    expect(extract('a=\nb=x', '\\w=(\\S*)', false)!.values).toEqual(['x']);
    expect(extract('abc', '(x)?', false)).toBeNull();
  });

  it('without a pattern the whole value is the secret, surrounding whitespace kept', () => {
    const x = extract('  tok\n', undefined, false)!;
    expect(x.values).toEqual(['tok']);
    expect(x.render(upper)).toBe('  TOK\n');
    expect(extract(' \n', undefined, false)).toBeNull();
  });

  it('maskDuplicates also replaces verbatim copies elsewhere', () => {
    const text = 'token: abcdef\n# backup copy: abcdef\nother: abcdefgh\n';
    expect(extract(text, 'token: (\\S+)', false)!.render(upper)).toBe('token: ABCDEF\n# backup copy: abcdef\nother: abcdefgh\n');
    expect(extract(text, 'token: (\\S+)', true)!.render(upper)).toBe('token: ABCDEF\n# backup copy: ABCDEF\nother: ABCDEFgh\n');
  });
});

describe('fake JWTs', () => {
  async function realJwt(claims: Record<string, unknown>, alg = 'HS256'): Promise<string> {
    const key = alg.startsWith('HS') ? new TextEncoder().encode('k'.repeat(64)) : (await jose.generateKeyPair(alg)).privateKey;
    return new jose.SignJWT(claims).setProtectedHeader({ alg, typ: 'JWT', kid: 'key-1' }).sign(key);
  }

  it('same alg/typ, sentinel claims, real exp/nbf/iat, signature of the same length; decodes with jose', async () => {
    const claims = { sub: 'user-1234567', name: 'Ada Lovelace', admin: true, n: 42, iat: 1700000000, nbf: 1700000000, exp: 4000000000, scopes: ['repo', 'gist'] };
    for (const alg of ['HS256', 'RS256', 'ES256']) {
      const real = await realJwt(claims, alg);
      const parsed = parseJwt(jose, real, undefined);
      if (typeof parsed === 'string') throw new Error(parsed);
      const fake = fakeJwt(parsed, new SentinelMint([real]), cryptoRandom);
      expect(jose.decodeProtectedHeader(fake)).toEqual({ alg, typ: 'JWT' });
      const p = jose.decodeJwt(fake);
      expect(p).toMatchObject({ iat: 1700000000, nbf: 1700000000, exp: 4000000000, admin: true });
      expect(p.sub).not.toBe('user-1234567');
      expect(String(p.sub)).toMatch(/^[a-z0-9]{4}-[a-z0-9]{7}$/);
      expect(p.name).not.toBe('Ada Lovelace');
      expect(String(p.n)).toMatch(/^\d\d$/);
      expect((p.scopes as string[]).length).toBe(2);
      expect(Buffer.from(fake.split('.')[2]!, 'base64url').length).toBe(Buffer.from(real.split('.')[2]!, 'base64url').length);
      expect(fake.split('.')[2]).not.toBe(real.split('.')[2]);
    }
  });

  it('maskClaims: the real payload with only the listed claims replaced', async () => {
    const real = await realJwt({ sub: 'user-1', email: 'a@example.com', iss: 'https://issuer.example', exp: 4000000000 });
    const parsed = parseJwt(jose, real, ['sub', 'email']);
    if (typeof parsed === 'string') throw new Error(parsed);
    const p = jose.decodeJwt(fakeJwt(parsed, new SentinelMint([real]), cryptoRandom));
    expect(p.iss).toBe('https://issuer.example');
    expect(p.exp).toBe(4000000000);
    expect(p.sub).not.toBe('user-1');
    expect(p.email).not.toBe('a@example.com');
    expect(String(p.email)).toMatch(/^[a-z]@[a-z]+\.[a-z]+$/);
  });

  it('not a JWT, or a listed claim missing → the reason', async () => {
    expect(parseJwt(jose, 'ghp_notajwt', undefined)).toBe('the value is not a JWT');
    expect(parseJwt(jose, 'a.b.c', undefined)).toBe('the value is not a JWT');
    expect(parseJwt(jose, await realJwt({ sub: 'x' }), ['email', 'org'])).toBe('the JWT has no "email", "org" claim');
  });
});
