import { describe, expect, it } from 'vitest';
import { awsAction, CredentialFields, FieldTooLong, MAX_FIELD, mintingCall, replaceFormFields, type Field } from '../../src/credentials/minted.js';

const KEY = 'ASIAMINTEDKEYID23456';
const SECRET = 'MintedSecretAccessKey/mintedSECRET+01234';
const TOKEN = 'IQoJb3JpZ2luX2VjEMINTEDsessiontoken+/0123456789abcdefABCDEF==';

/** A replacer that records what it saw and answers a same-length stand-in. */
function recorder() {
  const seen: Field[] = [];
  const replace = (f: Field) => {
    seen.push(f);
    return 'S'.repeat(f.value.length);
  };
  return { seen, replace };
}

function whole(text: string) {
  const r = recorder();
  const f = new CredentialFields(r.replace);
  const out = Buffer.concat([f.push(Buffer.from(text, 'latin1')), f.end()]).toString('latin1');
  return { out, seen: r.seen, found: f.found };
}

function chunked(text: string, cuts: number[]) {
  const r = recorder();
  const f = new CredentialFields(r.replace);
  const parts: Buffer[] = [];
  let at = 0;
  for (const c of [...cuts, text.length]) {
    parts.push(f.push(Buffer.from(text.slice(at, c), 'latin1')));
    at = c;
  }
  parts.push(f.end());
  return { out: Buffer.concat(parts).toString('latin1'), seen: r.seen };
}

const STS_XML = `<?xml version="1.0"?>\n<GetSessionTokenResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><GetSessionTokenResult><Credentials><AccessKeyId>${KEY}</AccessKeyId><SecretAccessKey>${SECRET}</SecretAccessKey><SessionToken>${TOKEN}</SessionToken><Expiration>2026-12-02T12:00:00Z</Expiration></Credentials></GetSessionTokenResult></GetSessionTokenResponse>`;
const SSO_JSON = JSON.stringify({ roleCredentials: { accessKeyId: KEY, secretAccessKey: SECRET, sessionToken: TOKEN, expiration: 1 } });
const ECR_JSON = JSON.stringify({ authorizationData: [{ authorizationToken: Buffer.from('AWS:ecr-password-0123456789abcdef').toString('base64'), expiresAt: 1, proxyEndpoint: 'https://x' }] });
const OAUTH_JSON = `{"access_token" : "gho_OAuthAccessToken0123456789abcdefABCD", "token_type":"bearer", "refresh_token":"ghr_OAuthRefreshToken0123456789abcdef\\/xyz", "id_token": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.c2lnbmF0dXJlLXNpZ25hdHVyZQ"}`;
const COGNITO_JSON = `{"Credentials":{"AccessKeyId":"${KEY}","Expiration":1,"SecretKey":"${SECRET}","SessionToken":"${TOKEN}"},"IdentityId":"us-east-1:abc"}`;
const WRAPPED = JSON.stringify({ statusCode: 200, body: JSON.stringify({ access_token: 'wrappedAccessToken0123456789abcdef' }) });

describe('credential fields in an answer', () => {
  it.each([
    ['STS XML', STS_XML, ['AccessKeyId', 'SecretAccessKey', 'SessionToken']],
    ['SSO roleCredentials JSON', SSO_JSON, ['accessKeyId', 'secretAccessKey', 'sessionToken']],
    ['Cognito JSON', COGNITO_JSON, ['AccessKeyId', 'SecretKey', 'SessionToken']],
    ['ECR authorizationToken', ECR_JSON, ['authorizationToken']],
    ['OAuth token endpoint', OAUTH_JSON, ['access_token', 'refresh_token', 'id_token']],
    ['a JSON document inside a JSON string', WRAPPED, ['access_token']],
  ])('%s: every credential is found and replaced', (_what, text, names) => {
    const r = whole(text);
    expect(r.seen.map((f) => f.name)).toEqual(names);
    for (const f of r.seen) expect(r.out).not.toContain(f.value);
    expect(r.found).toBe(names.length);
    // The document still parses where it did.
    if (text.startsWith('{')) expect(() => JSON.parse(r.out) as unknown).not.toThrow();
  });

  it('JSON escapes and XML entities are undone before the value is handed over', () => {
    expect(whole(OAUTH_JSON).seen[1]!.value).toBe('ghr_OAuthRefreshToken0123456789abcdef/xyz');
    expect(whole('<SessionToken>abc&amp;def0123456789XYZ</SessionToken>').seen[0]!.value).toBe('abc&def0123456789XYZ');
  });

  it('not credentials: short or spaced values, other names, names as values, empty elements', () => {
    const text = '{"token_type":"bearer","token":"short","note":"access_token","accessToken":"has a space in it 0123456789"}<Token/><AccessKeyId></AccessKeyId><Other>AKIAXXXXXXXXXXXXXXXX</Other>';
    const r = whole(text);
    expect(r.out).toBe(text);
    expect(r.found).toBe(0);
  });

  it('a field longer than MAX_FIELD that never ends fails the stream (fail closed)', () => {
    const f = new CredentialFields(() => 'x');
    f.push(Buffer.from('{"access_token":"'));
    expect(() => f.push(Buffer.alloc(MAX_FIELD + 10, 'a'))).toThrow(FieldTooLong);
  });

  it('property: however an answer is cut, the result is the same as whole and no value is left', () => {
    let seed = 0x5eed;
    const rnd = (n: number) => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return seed % n;
    };
    const docs = [STS_XML, SSO_JSON, ECR_JSON, OAUTH_JSON, COGNITO_JSON, WRAPPED];
    for (let round = 0; round < 300; round++) {
      const text = docs.filter(() => rnd(2) === 0).join(rnd(2) ? '\n' : '"<filler "x":"y">"') || docs[round % docs.length]!;
      const reference = whole(text);
      const cuts = [...new Set(Array.from({ length: rnd(12) }, () => rnd(text.length)))].sort((a, b) => a - b);
      const streamed = chunked(text, cuts);
      expect(streamed.out).toBe(reference.out);
      expect(streamed.seen).toEqual(reference.seen);
      for (const f of reference.seen) expect(streamed.out).not.toContain(f.value);
    }
    // Every single cut point of one document.
    for (let at = 0; at <= STS_XML.length; at++) expect(chunked(STS_XML, [at]).out).toBe(whole(STS_XML).out);
  });

  it('form-encoded answers (GitHub OAuth by default)', () => {
    const r = recorder();
    const value = 'gho_FormAccessToken0123456789abcdefAB';
    const out = replaceFormFields(`access_token=${value}&scope=repo&token_type=bearer`, r.replace);
    expect(out.found).toBe(1);
    expect(out.body).toBe(`access_token=${'S'.repeat(value.length)}&scope=repo&token_type=bearer`);
  });
});

describe('calls that mint credentials', () => {
  const host = 'sts.amazonaws.com';
  it.each([
    [{ service: 'sts', method: 'GET', path: '/?Action=GetSessionToken&Version=2011-06-15' }, 'sts:GetSessionToken'],
    [{ service: 'sts', method: 'POST', path: '/', form: 'Action=AssumeRole&RoleArn=x' }, 'sts:AssumeRole'],
    [{ service: 'sts', method: 'POST', path: '/', form: 'Action=AssumeRoleWithWebIdentity' }, 'sts:AssumeRoleWithWebIdentity'],
    [{ service: 'sts', method: 'POST', path: '/', form: 'Action=GetFederationToken' }, 'sts:GetFederationToken'],
    [{ service: 'iam', method: 'POST', path: '/', form: 'Action=CreateAccessKey&UserName=u' }, 'iam:CreateAccessKey'],
    [{ service: 'ecr', method: 'POST', path: '/', amzTarget: 'AmazonEC2ContainerRegistry_V20150921.GetAuthorizationToken' }, 'ecr:GetAuthorizationToken'],
    [{ service: 'codeartifact', method: 'POST', path: '/v1/authorization-token?domain=d' }, 'codeartifact:GetAuthorizationToken'],
    [{ service: 'cognito-identity', method: 'POST', path: '/', amzTarget: 'AWSCognitoIdentityService.GetOpenIdTokenForDeveloperIdentity' }, 'cognito-identity:GetOpenIdTokenForDeveloperIdentity'],
    [{ method: 'GET', path: '/federation/credentials?role_name=r&account_id=1' }, 'awsssoportal:GetRoleCredentials'],
    [{ method: 'POST', path: '/login/oauth/access_token' }, `the token endpoint POST ${host}/login/oauth/access_token`],
    [{ method: 'POST', path: '/oauth2/v1/token?x=1' }, `the token endpoint POST ${host}/oauth2/v1/token`],
  ])('%o → %s', (call, name) => {
    expect(mintingCall({ host, ...call })).toBe(name);
  });

  it.each([
    [{ service: 'sts', method: 'POST', path: '/', form: 'Action=GetCallerIdentity' }],
    [{ service: 'sts', method: 'POST', path: '/', form: 'Action=GetAccessKeyInfo' }],
    [{ service: 's3', method: 'POST', path: '/bucket/token' }],
    [{ service: 'iam', method: 'POST', path: '/', form: 'Action=ListAccessKeys' }],
    [{ method: 'GET', path: '/token' }],
    [{ method: 'POST', path: '/tokens/list' }],
  ])('%o mints nothing', (call) => {
    expect(mintingCall({ host, ...call })).toBeUndefined();
  });

  it('the action comes from X-Amz-Target, the query, or a form body', () => {
    expect(awsAction({ service: 'sts', method: 'POST', path: '/', form: 'Version=1&Action=AssumeRole' })).toEqual({ service: 'sts', action: 'AssumeRole' });
    expect(awsAction({ service: 'sts', method: 'GET', path: '/?Action=AssumeRole' })).toEqual({ service: 'sts', action: 'AssumeRole' });
    expect(awsAction({ service: 'ecr', method: 'POST', path: '/', amzTarget: 'X_1.GetAuthorizationToken' })).toEqual({ service: 'ecr', action: 'GetAuthorizationToken' });
  });
});
