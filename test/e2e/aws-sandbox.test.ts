// AWS re-signing end to end through the real srt: the sandbox, the credential plan (masked AWS_*
// variables, a masked ~/.aws/credentials), TLS termination, the SigV4 stage and the credential
// stage. Real clients inside — Debian's awscli, @aws-sdk/client-s3, curl on a presigned URL, boto3
// when python3 has it — hold only the sentinels srt minted; the loopback test AWS (aws-server.ts,
// @smithy/signature-v4 with the REAL credentials) must verify every request and never see a
// sentinel. 127.0.0.5 is the access key's inject host; 127.0.0.6 is allowed but is not.
import { execaSync } from 'execa';
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AWS_CLI, awsEnv, REAL, REAL_TEMPORARY, PYTHON } from './aws-fixtures.js';
import { startAwsServer, type AwsServer } from './aws-server.js';
import type { AwsCreds } from './aws-verifier.js';
import { keyValues, loadedFiles, REPO, srt, tempDir } from './helpers.js';
import { testPki } from './proxy-fixtures.js';

const BOTO3 = execaSync(PYTHON, ['-c', 'import boto3'], { reject: false }).exitCode === 0;
const CLIENTS = join(REPO, 'test/e2e/aws-clients');
const tmp = tempDir('srt-aws-sandbox-');
const home = join(tmp.path, 'home');
const cwd = join(tmp.path, 'work');
const AWS_NAMES = ['AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY', 'AWS_SESSION_TOKEN'];

let pkiCa = '';
let aws: AwsServer;
let other: AwsServer;
const endpoint = () => `https://127.0.0.5:${aws.port}`;

function settings(credentials: object) {
  return {
    network: {
      allowedDomains: [`127.0.0.5:${aws.port}`, `127.0.0.6:${other.port}`],
      tlsTerminate: { extraCaCertPaths: [pkiCa] },
    },
    filesystem: { allowWrite: ['.'] },
    credentials,
  };
}

const maskedVars = { envVars: AWS_NAMES.map((name) => ({ name, mode: 'mask', injectHosts: ['127.0.0.5'] })) };

async function run(credentials: object, env: Record<string, string>, script: string) {
  const file = join(tmp.path, `settings-${Math.random()}.json`);
  writeFileSync(file, JSON.stringify(settings(credentials)));
  const { PATH: _p, HOME: _h, ...rest } = env;
  const r = await srt(['--settings', file, '-c', script], { home, cwd, env: rest, timeout: 150_000 });
  return { ...r, kv: keyValues(r.stdout) };
}

/** Everything the test AWS got since the last call: each request verified, no sentinel in it. */
function received(server: AwsServer, sentinels: string[]) {
  const all = server.received.splice(0);
  const raw = JSON.stringify(all.map((r) => ({ ...r, body: r.body.toString('latin1'), verified: undefined })));
  for (const s of sentinels) {
    expect(raw).not.toContain(s);
    expect(raw).not.toContain(encodeURIComponent(s));
  }
  return { all, errors: all.filter((r) => r.error).map((r) => `${r.method} ${r.target}: ${r.error}`) };
}

function noReal(text: string, real: AwsCreds): void {
  for (const v of Object.values(real)) expect(text, `contains ${v}`).not.toContain(v);
}

beforeAll(async () => {
  mkdirSync(home, { recursive: true });
  mkdirSync(cwd, { recursive: true });
  const pki = testPki(tmp.path);
  pkiCa = pki.caPath;
  const leaf5 = pki.leaf(['IP:127.0.0.5']);
  const leaf6 = pki.leaf(['IP:127.0.0.6']);
  aws = await startAwsServer({ cert: leaf5.cert, key: leaf5.key, creds: [REAL, REAL_TEMPORARY], host: '127.0.0.5' });
  other = await startAwsServer({ cert: leaf6.cert, key: leaf6.key, creds: [REAL, REAL_TEMPORARY], host: '127.0.0.6' });
  // Over the AWS CLI's 8 MiB multipart threshold and the SDK client's 5 MiB first part.
  writeFileSync(join(cwd, 'data.bin'), randomBytes(9 * 1024 * 1024 + 77));
});

afterAll(async () => {
  await Promise.all([aws?.close(), other?.close()]);
  tmp.cleanup();
});

for (const real of [REAL, REAL_TEMPORARY]) {
  describe(`inside srt with masked AWS_* variables (${real.sessionToken ? 'with a session token' : 'long-term key pair'})`, () => {
    it('awscli (s3 cp up and down, s3 ls, sts), @aws-sdk/client-s3 (default checksums, multipart, GetObject, presigned GET with curl) and boto3 work holding only sentinels', async () => {
      const e = endpoint();
      const cli = `${AWS_CLI} --endpoint-url ${e}`;
      const r = await run(maskedVars, awsEnv(real, home), [
        'set -e',
        'echo "key=$AWS_ACCESS_KEY_ID"; echo "secret=$AWS_SECRET_ACCESS_KEY"; echo "token=${AWS_SESSION_TOKEN:-}"',
        `${cli} s3 cp data.bin s3://bucket/box/data.bin --only-show-errors`,
        `${cli} s3 cp s3://bucket/box/data.bin back.bin --only-show-errors`,
        'cmp data.bin back.bin && echo "roundtrip=ok"',
        `echo "ls=$(${cli} s3 ls s3://bucket/box/ | tr '\\n' ' ')"`,
        `echo "ident=$(${cli} sts get-caller-identity --output json | tr -d '\\n ')"`,
        `echo "sdk=$(node ${CLIENTS}/s3-sdk.mjs ${e} data.bin | tail -n 1)"`,
        `url=$(node -e 'const s = JSON.parse(process.argv[1]); console.log(s.presigned)' "$(node ${CLIENTS}/s3-sdk.mjs ${e} data.bin | tail -n 1)")`,
        'echo "presigned=$(curl -sS --fail "$url")"',
        // Forms the CLI and the SDK do not send by default, signed by the SDK's own signers.
        `echo "chunked=$(node ${CLIENTS}/signed-chunked.mjs ${e} chunked-trailer box/chunked.bin 1000000 65536 | tail -n 1)"`,
        `echo "v4a=$(node ${CLIENTS}/signed-chunked.mjs ${e} sigv4a sdk/small.txt | tail -n 1)"`,
        ...(BOTO3 ? [`echo "boto=$(${PYTHON} ${CLIENTS}/boto3-client.py ${e} data.bin boto-back.bin | tail -n 1)"`, 'cmp data.bin boto-back.bin && echo "boto_roundtrip=ok"'] : []),
      ].join('\n'));
      expect(r.exitCode, r.stderr).toBe(0);
      noReal(r.stdout + r.stderr, real);
      const sentinels = [r.kv.key!, r.kv.secret!, ...(real.sessionToken ? [r.kv.token!] : [])];
      expect(r.kv.key).toMatch(new RegExp(`^${real.accessKeyId.slice(0, 4)}[A-Z2-7]{16}$`));
      expect(r.kv.secret).toHaveLength(40);
      if (real.sessionToken) expect(r.kv.token).toHaveLength(real.sessionToken.length);
      expect(r.kv.roundtrip).toBe('ok');
      expect(r.kv.ls).toContain('data.bin');
      expect(JSON.parse(r.kv.ident!)).toMatchObject({ Account: '123456789012' });
      const sdk = JSON.parse(r.kv.sdk!) as { multiEqual: boolean; small: string; held: string[]; presigned: string };
      expect(sdk).toMatchObject({ multiEqual: true, small: 'hello from the sdk\n' });
      expect(sdk.held).toEqual(sentinels);
      expect(sdk.presigned).toContain(r.kv.key);
      expect(r.kv.presigned).toBe('hello from the sdk');
      expect(JSON.parse(r.kv.chunked!)).toMatchObject({ status: 200 });
      expect(aws.objects.get('bucket/box/chunked.bin')!.data.length).toBe(1000000);
      expect(JSON.parse(r.kv.v4a!)).toMatchObject({ status: 200, body: 'hello from the sdk\n' });
      if (BOTO3) {
        expect(JSON.parse(r.kv.boto!)).toMatchObject({ small: 'hello from boto3\n', account: '123456789012' });
        expect(r.kv.boto_roundtrip).toBe('ok');
      }
      const got = received(aws, sentinels);
      expect(got.errors).toEqual([]);
      const forms = new Set(got.all.map((x) => `${x.verified!.form} ${x.verified!.payload}`));
      expect(forms).toContain('header STREAMING-UNSIGNED-PAYLOAD-TRAILER');
      expect(forms).toContain('query UNSIGNED-PAYLOAD');
      expect(forms).toContain('header STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER');
      expect(got.all.some((x) => x.verified!.algorithm === 'AWS4-ECDSA-P256-SHA256')).toBe(true);
      expect(got.all.filter((x) => /uploadId=/.test(x.target)).length).toBeGreaterThan(1);
      if (real.sessionToken) expect(got.all.every((x) => x.headers.some(([k, v]) => k.toLowerCase() === 'x-amz-security-token' && v === real.sessionToken) || /X-Amz-Security-Token=/.test(x.target))).toBe(true);
    }, 180_000);
  });
}

describe('inside srt, other ways in and out', () => {
  it('a masked ~/.aws/credentials: the profiles read as sentinels inside, and the CLI signs with them through srt', async () => {
    const text = `[default]\naws_access_key_id = ${REAL.accessKeyId}\naws_secret_access_key = ${REAL.secretAccessKey}\n\n[temp]\naws_access_key_id = ${REAL_TEMPORARY.accessKeyId}\naws_secret_access_key = ${REAL_TEMPORARY.secretAccessKey}\naws_session_token = ${REAL_TEMPORARY.sessionToken}\nregion = us-east-1\n`;
    mkdirSync(join(home, '.aws'), { recursive: true });
    writeFileSync(join(home, '.aws', 'credentials'), text, { mode: 0o600 });
    const { AWS_ACCESS_KEY_ID: _k, AWS_SECRET_ACCESS_KEY: _s, AWS_SESSION_TOKEN: _t, AWS_SHARED_CREDENTIALS_FILE: _f, ...env } = awsEnv(REAL, home);
    const cli = `${AWS_CLI} --endpoint-url ${endpoint()}`;
    try {
      const r = await run({ files: [{ path: '~/.aws/credentials', mode: 'mask', injectHosts: ['127.0.0.5'] }] }, env, [
        'set -e',
        'echo "file=$(base64 -w0 < ~/.aws/credentials)"',
        `echo "default=$(${cli} sts get-caller-identity --output text --query Account)"`,
        `echo "temp=$(${cli} --profile temp s3 ls s3://bucket/ | wc -l)"`,
      ].join('\n'));
      expect(r.exitCode, r.stderr).toBe(0);
      const inside = Buffer.from(r.kv.file!, 'base64').toString();
      noReal(inside + r.stdout + r.stderr, REAL);
      noReal(inside, REAL_TEMPORARY);
      // Only the values changed: the file still parses, every profile keeps its shape.
      expect(inside.replace(/= \S+/g, '=')).toBe(text.replace(/= \S+/g, '='));
      expect(inside).toMatch(/aws_access_key_id = ASIA[A-Z2-7]{16}\n/);
      expect(r.kv.default).toBe('123456789012');
      const sentinels = [...inside.matchAll(/= (\S+)/g)].map((m) => m[1]!).filter((v) => v !== 'us-east-1');
      expect(sentinels).toHaveLength(5);
      const got = received(aws, sentinels);
      expect(got.errors).toEqual([]);
      expect(got.all.length).toBeGreaterThanOrEqual(2);
      expect(got.all.some((x) => x.headers.some(([k, v]) => k.toLowerCase() === 'x-amz-security-token' && v === REAL_TEMPORARY.sessionToken))).toBe(true);
    } finally {
      writeFileSync(join(home, '.aws', 'credentials'), '');
    }
  }, 180_000);

  it('toward an allowed host outside the key\'s injectHosts the sentinel is stopped and reported; a presigned URL is re-signed under credentials.sigv4.presigned "deny" (the fallback only)', async () => {
    const r = await run({ ...maskedVars, sigv4: { presigned: 'deny' } }, awsEnv(REAL_TEMPORARY, home), [
      `echo "elsewhere=$(${AWS_CLI} --endpoint-url https://127.0.0.6:${other.port} sts get-caller-identity 2>&1 | tr '\\n' ' ')"`,
      `url=$(node -e 'const s = JSON.parse(process.argv[1]); console.log(s.presigned)' "$(node ${CLIENTS}/s3-sdk.mjs ${endpoint()} data.bin | tail -n 1)")`,
      'echo "denied=$(curl -sS "$url")"',
      'echo "status=$(curl -s -o /dev/null -w "%{http_code}" "$url")"',
    ].join('\n'));
    expect(r.exitCode, r.stderr).toBe(0);
    noReal(r.stdout + r.stderr, REAL_TEMPORARY);
    expect(other.received).toEqual([]);
    expect(r.stderr).toMatch(/srt: blocked AWS_(ACCESS_KEY_ID|SESSION_TOKEN)'s sentinel on its way to 127\.0\.0\.6/);
    expect(r.kv.status).toBe('200');
    // The SDK's own uploads and the presigned GET were re-signed and verified.
    const got = received(aws, []);
    expect(got.errors).toEqual([]);
    expect(got.all.some((x) => x.verified?.form === 'query')).toBe(true);
  }, 180_000);
});

describe('lazy loading', () => {
  it('`srt -- true` without a masked AWS credential loads none of the SigV4 code', async () => {
    const loaded = async (credentials: object, env: Record<string, string>) => {
      const file = join(tmp.path, `settings-${Math.random()}.json`);
      writeFileSync(file, JSON.stringify(settings(credentials)));
      const r = await srt(['--settings', file, '--', 'true'], { cwd, home, env: { NODE_DEBUG: 'module', ...env } });
      expect(r.exitCode, r.stderr).toBe(0);
      return loadedFiles(r.stderr).filter((f) => f.startsWith(REPO) && !f.includes('/node_modules/'))
        .filter((f) => /^(sigv4|aws-chunked)/.test(basename(f)) || readFileSync(f, 'utf8').includes('AWS4-HMAC-SHA256'));
    };
    expect(await loaded({}, {})).toEqual([]);
    // Masked, not AWS: the credential stage only.
    expect(await loaded({ envVars: [{ name: 'TOKEN', mode: 'mask' }] }, { TOKEN: 'x'.repeat(30) })).toEqual([]);
    // With a masked AWS credential the stage is there from the start (it is needed by the first request).
    expect((await loaded(maskedVars, awsEnv(REAL, home))).length).toBeGreaterThan(0);
  }, 240_000);
});
