// Minted credentials become sentinels (SPEC §7): an answer to a request srt re-signed or injected
// into that carries new credentials reaches the command with fresh sentinels, bound to the hosts of
// the credential that was used; later requests that use them are re-signed or injected with the
// minted values. A call that mints credentials srt cannot recognise in the answer is refused
// (credentials.sigv4.mint "deny", the default) or passed ("allow").
// Real clients inside (curl --aws-sigv4, the AWS CLI) against a loopback HTTPS "AWS" and OAuth
// server that verifies every signature with @smithy/signature-v4 (aws-verifier.ts) and records
// every byte. 127.0.0.5 is the inject host; 127.0.0.6 is allowed but is not one.
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AWS_CLI, awsEnv, REAL } from './aws-fixtures.js';
import { verifyRequest, type AwsCreds, type Received } from './aws-verifier.js';
import { keyValues, srt, tempDir } from './helpers.js';
import { testPki } from './proxy-fixtures.js';

const MINTED: AwsCreds = {
  accessKeyId: 'ASIAMINTEDKEY2345ABC',
  secretAccessKey: 'MintedSecretKey/mintedSECRETvalue+0123456',
  sessionToken: 'IQoJb3JpZ2luX2VjEMINTEDSESSIONTOKENbWludGVkLXNlc3Npb24tdG9rZW4+/mintedTOKENvalue0123456789abcdef==',
};
const ECR_PASSWORD = 'eyJwYXlsb2FkIjoiTUlOVEVELUVDUi1QQVNTV09SRCJ9mintedEcrPassword0123456789';
const CLIENT_SECRET = 'client-secret-REAL-0123456789abcdefXYZ';
const OAUTH_ACCESS = 'gho_MintedAccessToken0123456789abcdefAB';
const OAUTH_REFRESH = 'ghr_MintedRefreshToken0123456789abcdefABCDEFGHIJKLMNOPQRSTU';
const UNRECOGNISED = 'UnrecognisedMintedSecret0123456789abcdef';
const MINTED_VALUES = [MINTED.accessKeyId, MINTED.secretAccessKey, MINTED.sessionToken!, ECR_PASSWORD, Buffer.from(`AWS:${ECR_PASSWORD}`).toString('base64'), OAUTH_ACCESS, OAUTH_REFRESH];

const tmp = tempDir('srt-cred-minted-');
const home = join(tmp.path, 'home');
const cwd = join(tmp.path, 'work');
const servers: https.Server[] = [];
const ports: number[] = [];
let caPath = '';

interface Rec extends Received {
  verifiedWith?: string;
  error?: string;
}
const received: Rec[] = [];

const xml = (body: string) => `<?xml version="1.0" encoding="UTF-8"?>\n${body}`;
const header = (r: Received, name: string) => r.headers.find(([k]) => k.toLowerCase() === name)?.[1];

async function answer(rec: Rec): Promise<{ status: number; type: string; body: string }> {
  const url = new URL(rec.target, 'https://x');
  const auth = header(rec, 'authorization') ?? '';
  if (url.pathname === '/v2/') {
    const ok = auth === `Basic ${Buffer.from(`AWS:${ECR_PASSWORD}`).toString('base64')}`;
    return { status: ok ? 200 : 401, type: 'text/plain', body: ok ? 'registry=ok' : 'registry=denied' };
  }
  if (url.pathname === '/oauth/token') {
    const form = new URLSearchParams(rec.body.toString());
    if (form.get('client_secret') !== CLIENT_SECRET) return { status: 401, type: 'application/json', body: '{"error":"invalid_client"}' };
    return { status: 200, type: 'application/json', body: JSON.stringify({ access_token: OAUTH_ACCESS, token_type: 'bearer', refresh_token: OAUTH_REFRESH, expires_in: 3600 }) };
  }
  if (url.pathname === '/api/user') {
    const ok = auth === `Bearer ${OAUTH_ACCESS}`;
    return { status: ok ? 200 : 401, type: 'application/json', body: ok ? '{"login":"minted-user"}' : '{"error":"bad token"}' };
  }
  // Everything else is AWS: signed with the real credential or the minted one.
  const keyId = /Credential=([^/]+)\//.exec(auth)?.[1];
  const creds = [REAL, MINTED].find((c) => c.accessKeyId === keyId);
  if (!creds) {
    rec.error = `unknown key ${keyId}`;
    return { status: 403, type: 'text/xml', body: xml('<ErrorResponse><Error><Code>InvalidClientTokenId</Code></Error></ErrorResponse>') };
  }
  try {
    await verifyRequest(rec, creds);
    if (creds.sessionToken && header(rec, 'x-amz-security-token') !== creds.sessionToken) throw new Error('no session token');
    rec.verifiedWith = creds === MINTED ? 'minted' : 'real';
  } catch (e) {
    rec.error = (e as Error).message;
    return { status: 403, type: 'text/xml', body: xml('<ErrorResponse><Error><Code>SignatureDoesNotMatch</Code></Error></ErrorResponse>') };
  }
  const target = header(rec, 'x-amz-target');
  if (target?.endsWith('.GetAuthorizationToken')) {
    return { status: 200, type: 'application/x-amz-json-1.1', body: JSON.stringify({ authorizationData: [{ authorizationToken: Buffer.from(`AWS:${ECR_PASSWORD}`).toString('base64'), expiresAt: 1893456000, proxyEndpoint: `https://127.0.0.5:${ports[0]}` }] }) };
  }
  const action = url.searchParams.get('Action') ?? new URLSearchParams(rec.body.toString()).get('Action');
  const ns = 'xmlns="https://sts.amazonaws.com/doc/2011-06-15/"';
  const meta = '<ResponseMetadata><RequestId>r-1</RequestId></ResponseMetadata>';
  if (action === 'GetSessionToken') {
    return { status: 200, type: 'text/xml', body: xml(`<GetSessionTokenResponse ${ns}><GetSessionTokenResult><Credentials><AccessKeyId>${MINTED.accessKeyId}</AccessKeyId><SecretAccessKey>${MINTED.secretAccessKey}</SecretAccessKey><SessionToken>${MINTED.sessionToken}</SessionToken><Expiration>2030-01-01T00:00:00Z</Expiration></Credentials></GetSessionTokenResult>${meta}</GetSessionTokenResponse>`) };
  }
  if (action === 'GetFederationToken') {
    // Credentials in a shape srt does not know.
    return { status: 200, type: 'text/xml', body: xml(`<GetFederationTokenResponse ${ns}><GetFederationTokenResult><Creds><Kid>ASIAUNKNOWNSHAPE2345</Kid><Material>${UNRECOGNISED}</Material></Creds></GetFederationTokenResult>${meta}</GetFederationTokenResponse>`) };
  }
  if (action === 'GetCallerIdentity') {
    return { status: 200, type: 'text/xml', body: xml(`<GetCallerIdentityResponse ${ns}><GetCallerIdentityResult><Arn>arn:aws:sts::123456789012:${rec.verifiedWith}</Arn><UserId>AIDA</UserId><Account>123456789012</Account></GetCallerIdentityResult>${meta}</GetCallerIdentityResponse>`) };
  }
  return { status: 400, type: 'text/xml', body: xml('<ErrorResponse><Error><Code>InvalidAction</Code></Error></ErrorResponse>') };
}

beforeAll(async () => {
  const { mkdirSync } = await import('node:fs');
  mkdirSync(home, { recursive: true });
  mkdirSync(cwd, { recursive: true });
  const pki = testPki(tmp.path);
  caPath = pki.caPath;
  for (const ip of ['127.0.0.5', '127.0.0.6']) {
    const leaf = pki.leaf([`IP:${ip}`]);
    const server = https.createServer({ cert: leaf.cert, key: leaf.key }, (req, res) => {
      const parts: Buffer[] = [];
      req.on('data', (c: Buffer) => parts.push(c));
      req.on('end', () => {
        const headers: Array<[string, string]> = [];
        for (let i = 0; i < req.rawHeaders.length; i += 2) headers.push([req.rawHeaders[i]!, req.rawHeaders[i + 1]!]);
        const rec: Rec = { method: req.method!, target: req.url!, host: req.headers.host ?? '', headers, body: Buffer.concat(parts) };
        received.push(rec);
        void answer(rec).then((a) => {
          res.writeHead(a.status, { 'content-type': a.type, 'content-length': Buffer.byteLength(a.body) });
          res.end(a.body);
        });
      });
    });
    await new Promise<void>((r) => server.listen(0, ip, r));
    servers.push(server);
    ports.push((server.address() as AddressInfo).port);
  }
});

afterAll(async () => {
  for (const s of servers) {
    s.closeAllConnections();
    await new Promise((r) => s.close(r));
  }
  tmp.cleanup();
});

async function run(script: string, extra: { mint?: 'deny' | 'allow' } = {}) {
  const file = join(tmp.path, `settings-${Math.random()}.json`);
  writeFileSync(file, JSON.stringify({
    network: { allowedDomains: [`127.0.0.5:${ports[0]}`, `127.0.0.6:${ports[1]}`], tlsTerminate: { extraCaCertPaths: [caPath] } },
    filesystem: { allowWrite: ['.'] },
    credentials: {
      envVars: [
        ...['AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY'].map((name) => ({ name, mode: 'mask', injectHosts: ['127.0.0.5'] })),
        { name: 'CLIENT_SECRET', mode: 'mask', injectHosts: ['127.0.0.5'], injectInto: ['body'] },
      ],
      ...(extra.mint ? { sigv4: { mint: extra.mint } } : {}),
    },
  }));
  const { PATH: _p, HOME: _h, ...env } = awsEnv(REAL, home);
  const r = await srt(['--settings', file, '-c', script], { home, cwd, env: { ...env, CLIENT_SECRET }, timeout: 150_000 });
  return { ...r, kv: keyValues(r.stdout) };
}

/** Nothing the command printed or left in its directory holds a minted real value (or a real one). */
function noMintedValue(text: string): void {
  for (const v of [...MINTED_VALUES, REAL.secretAccessKey, CLIENT_SECRET]) expect(text, `contains ${v}`).not.toContain(v);
  for (const f of readdirSync(cwd)) {
    const content = readFileSync(join(cwd, f), 'latin1');
    for (const v of MINTED_VALUES) expect(content, `${f} contains ${v}`).not.toContain(v);
  }
}

const sigv4Curl = (action: string) => `curl -sS --aws-sigv4 "aws:amz:us-east-1:sts" -u "$AWS_ACCESS_KEY_ID:$AWS_SECRET_ACCESS_KEY" "https://127.0.0.5:${ports[0]}/?Action=${action}&Version=2011-06-15"`;

describe('minted credentials become sentinels', () => {
  it('STS (curl --aws-sigv4 and the AWS CLI), ECR and an OAuth token endpoint: the command holds only sentinels, and they work where the credential used may go', async () => {
    received.length = 0;
    const e = `https://127.0.0.5:${ports[0]}`;
    const field = (name: string) => `sed -n 's:.*<${name}>\\(.*\\)</${name}>.*:\\1:p' sts.xml`;
    const r = await run([
      'set -e',
      `${sigv4Curl('GetSessionToken')} > sts.xml`,
      `export AWS_ACCESS_KEY_ID=$(${field('AccessKeyId')}) AWS_SECRET_ACCESS_KEY=$(${field('SecretAccessKey')}) AWS_SESSION_TOKEN=$(${field('SessionToken')})`,
      'echo "key=$AWS_ACCESS_KEY_ID"; echo "secret=$AWS_SECRET_ACCESS_KEY"; echo "token=$AWS_SESSION_TOKEN"',
      // The minted credential, used by the AWS CLI: re-signed with the minted secret and token.
      `echo "ident=$(${AWS_CLI} --endpoint-url ${e} sts get-caller-identity --query Arn --output text)"`,
      // The CLI mints too (a form-encoded POST); the same minted values get the same sentinels.
      `echo "cli=$(${AWS_CLI} --endpoint-url ${e} sts get-session-token --query Credentials.AccessKeyId --output text)"`,
      'cat /proc/self/environ | tr "\\0" "\\n" > environ.txt',
      // ECR: the login password is a sentinel; docker-style Basic with it reaches the registry as the real one.
      `tok=$(${AWS_CLI} --endpoint-url ${e} ecr get-authorization-token --query 'authorizationData[0].authorizationToken' --output text)`,
      'echo "$tok" > ecr-token.txt',
      'pw=$(echo "$tok" | base64 -d | cut -d: -f2-)',
      'echo "ecr_user=$(echo "$tok" | base64 -d | cut -d: -f1)"',
      `echo "registry=$(curl -sS -u "AWS:$pw" ${e}/v2/)"`,
      // OAuth: the client secret is injected into the token request's body; the tokens come back as sentinels.
      `curl -sS -d "grant_type=client_credentials&client_secret=$CLIENT_SECRET" ${e}/oauth/token > oauth.json`,
      `access=$(python3 -c 'import json,sys; print(json.load(open("oauth.json"))["access_token"])')`,
      'echo "access=$access"',
      `echo "user=$(curl -sS -H "Authorization: Bearer $access" ${e}/api/user)"`,
      // A minted sentinel on its way to a host the credential used may not go to.
      `echo "elsewhere=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $access" https://127.0.0.6:${ports[1]}/api/user)"`,
    ].join('\n'));
    expect(r.exitCode, r.stderr).toBe(0);
    noMintedValue(r.stdout + r.stderr);
    expect(r.kv.key).toMatch(/^ASIA[A-Z2-7]{16}$/);
    expect(r.kv.secret).toHaveLength(MINTED.secretAccessKey.length);
    expect(r.kv.token).toHaveLength(MINTED.sessionToken!.length);
    expect(r.kv.ident).toBe('arn:aws:sts::123456789012:minted');
    expect(r.kv.cli).toBe(r.kv.key);
    expect(r.kv.ecr_user).toBe('AWS');
    expect(r.kv.registry).toBe('registry=ok');
    expect(r.kv.access).toMatch(new RegExp(`^gho_[A-Za-z0-9]{${OAUTH_ACCESS.length - 4}}$`));
    expect(r.kv.user).toBe('{"login":"minted-user"}');
    expect(r.kv.elsewhere).toBe('403');
    expect(r.stderr).toMatch(/blocked access_token minted by the token endpoint POST 127\.0\.0\.5\/oauth\/token's sentinel on its way to 127\.0\.0\.6/);
    // The upstream: every signed request verified (the later ones with the MINTED secret and
    // token), the registry and the API got the minted values, and no sentinel arrived.
    expect(received.filter((x) => x.error).map((x) => `${x.method} ${x.target}: ${x.error}`)).toEqual([]);
    expect(received.filter((x) => x.verifiedWith === 'minted').length).toBeGreaterThanOrEqual(1);
    const raw = JSON.stringify(received.map((x) => ({ ...x, body: x.body.toString('latin1') })));
    for (const s of [r.kv.key!, r.kv.secret!, r.kv.token!, r.kv.access!]) expect(raw).not.toContain(s);
  }, 200_000);

  it('a call that mints credentials srt cannot recognise in the answer: 403 naming the call (deny, the default); "allow" lets it through', async () => {
    const denied = await run(`echo "code=$(${sigv4Curl('GetFederationToken')} -o answer.xml -w '%{http_code}')"; echo "said=$(head -c 300 answer.xml)"`);
    expect(denied.exitCode, denied.stderr).toBe(0);
    expect(denied.kv.code).toBe('403');
    expect(denied.kv.said).toContain('sts:GetFederationToken');
    expect(denied.stdout + denied.stderr).not.toContain(UNRECOGNISED);
    expect(denied.stderr).toMatch(/srt: blocked 127\.0\.0\.5:\d+ — sts:GetFederationToken mints credentials.*credentials\.sigv4\.mint is "deny"/);
    const allowed = await run(`echo "code=$(${sigv4Curl('GetFederationToken')} -o answer.xml -w '%{http_code}')"; grep -c ${UNRECOGNISED} answer.xml | sed 's/^/count=/'`, { mint: 'allow' });
    expect(allowed.kv).toMatchObject({ code: '200', count: '1' });
    expect(allowed.stderr).toContain('sts:GetFederationToken minted credentials srt recognised none of');
  }, 200_000);
});
