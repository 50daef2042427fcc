// The test "AWS" itself (aws-server.ts, aws-verifier.ts), before srt is involved: real AWS clients
// holding the REAL credentials talk to it directly and everything they send must verify — else a
// failure of the sandboxed tests (aws-sigv4.test.ts) could be the verifier's. A client with a
// wrong secret must be refused, as AWS would.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { execa, execaSync } from 'execa';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { REPO, tempDir } from './helpers.js';
import { rmrf, selfSigned } from './proxy-fixtures.js';
import { startAwsServer, type AwsServer } from './aws-server.js';
import { AWS_CLI, awsEnv, REAL, REAL_TEMPORARY, PYTHON } from './aws-fixtures.js';

const tmp = tempDir('srt-aws-server-');
// Real AWS clients start slowly (the AWS CLI: seconds per call) and share 2 cores with the suite.
vi.setConfig({ testTimeout: 120_000 });
const BOTO3 = execaSync(PYTHON, ['-c', 'import boto3'], { reject: false }).exitCode === 0;
let server: AwsServer;
let certPath: string;
let certDir: string | undefined;
let data: string;

beforeAll(async () => {
  const cert = selfSigned(['s3.test']);
  certPath = cert.certPath;
  certDir = cert.dir;
  server = await startAwsServer({ cert: cert.cert, key: cert.key, creds: [REAL, REAL_TEMPORARY] });
  data = join(tmp.path, 'data.bin');
  // Over the AWS CLI's 8 MiB multipart threshold.
  writeFileSync(data, randomBytes(9 * 1024 * 1024 + 123));
});
afterAll(async () => {
  await server?.close();
  tmp.cleanup();
  if (certDir) rmrf(certDir);
});

function env(creds: typeof REAL) {
  return { ...awsEnv(creds, tmp.path), NODE_EXTRA_CA_CERTS: certPath, AWS_CA_BUNDLE: certPath };
}

function clean() {
  if (process.env.SRT_AWS_DEBUG) console.log(server.received.map((r) => `${r.method} ${r.target.slice(0, 60)} ${r.verified?.form} ${r.verified?.payload.slice(0, 40)} ${r.verified?.chunks}`).join('\n'));
  const bad = server.received.filter((r) => r.error);
  server.received.length = 0;
  return bad.map((r) => `${r.method} ${r.target}: ${r.error}`);
}

for (const creds of [REAL, REAL_TEMPORARY]) {
  describe(`real clients with the real credentials verify (${creds.sessionToken ? 'temporary, with a session token' : 'long-term'})`, () => {
    it('@aws-sdk/client-s3: PutObject (default checksums), multipart, GetObject, list, presigned GET with curl', async () => {
      const r = await execa('node', [join(REPO, 'test/e2e/aws-clients/s3-sdk.mjs'), server.url, data], { env: env(creds), reject: false, timeout: 60_000 });
      expect(r.stderr).toBe('');
      const out = JSON.parse(r.stdout) as { multiEqual: boolean; small: string; keys: string[]; presigned: string };
      expect(out).toMatchObject({ multiEqual: true, small: 'hello from the sdk\n', keys: ['sdk/a b+c (é).txt', 'sdk/multi.bin', 'sdk/small.txt', 'sdk/stream.bin'] });
      expect(server.objects.get('bucket/sdk/stream.bin')!.data.equals(readFileSync(data))).toBe(true);
      const forms = new Set(server.received.map((x) => x.verified?.payload));
      expect(forms).toContain('STREAMING-UNSIGNED-PAYLOAD-TRAILER');
      const curl = await execa('curl', ['-sS', '--fail', '--cacert', certPath, out.presigned], { reject: false });
      expect(curl.stdout).toBe('hello from the sdk');
      expect(server.received.at(-1)!.verified!.form).toBe('query');
      expect(clean()).toEqual([]);
    });

    it.runIf(existsSync(AWS_CLI))("Debian's awscli: s3 cp up and down (multipart), s3 ls, sts get-caller-identity", async () => {
      const aws = (...args: string[]) => execa(AWS_CLI, ['--endpoint-url', server.url, ...args], { env: env(creds), reject: false, timeout: 60_000 });
      expect((await aws('s3', 'cp', data, 's3://bucket/cli/data.bin')).exitCode).toBe(0);
      const back = join(tmp.path, 'back.bin');
      expect((await aws('s3', 'cp', 's3://bucket/cli/data.bin', back)).exitCode).toBe(0);
      expect(readFileSync(back).equals(readFileSync(data))).toBe(true);
      const ls = await aws('s3', 'ls', 's3://bucket/cli/');
      expect(ls.stdout).toContain('data.bin');
      const id = await aws('sts', 'get-caller-identity', '--output', 'json');
      expect(JSON.parse(id.stdout)).toMatchObject({ Account: '123456789012' });
      expect(clean()).toEqual([]);
    });

    it.runIf(BOTO3)('boto3: put_object, multipart upload_file, ranged download_file, list, presigned GET, STS', async () => {
      const back = join(tmp.path, 'boto-back.bin');
      const r = await execa(PYTHON, [join(REPO, 'test/e2e/aws-clients/boto3-client.py'), server.url, data, back], { env: env(creds), reject: false, timeout: 60_000 });
      expect(r.stderr).toBe('');
      const out = JSON.parse(r.stdout) as { small: string; keys: string[]; presigned: string; account: string };
      expect(out).toMatchObject({ small: 'hello from boto3\n', keys: ['boto/data.bin', 'boto/small.txt'], account: '123456789012' });
      expect(readFileSync(back).equals(readFileSync(data))).toBe(true);
      expect((await execa('curl', ['-sS', '--fail', '--cacert', certPath, out.presigned])).stdout).toBe('hello from boto3');
      expect(clean()).toEqual([]);
    });
  });
}

describe('the SDK-signed chunked and SigV4a client (aws-clients/signed-chunked.mjs)', () => {
  for (const creds of [REAL, REAL_TEMPORARY]) {
    for (const mode of ['chunked', 'chunked-trailer'] as const) {
      it(`${mode} ${creds.sessionToken ? '(session token)' : ''}: every chunk signature verifies`, async () => {
        const r = await execa('node', [join(REPO, 'test/e2e/aws-clients/signed-chunked.mjs'), server.url, mode, `${mode}.bin`, '300000', '65536'], { env: env(creds), reject: false, timeout: 60_000 });
        expect(r.stderr).toBe('');
        expect(JSON.parse(r.stdout)).toMatchObject({ status: 200 });
        const v = server.received.at(-1)!.verified!;
        expect(v).toMatchObject({ payload: `STREAMING-AWS4-HMAC-SHA256-PAYLOAD${mode === 'chunked' ? '' : '-TRAILER'}`, chunks: 6 });
        expect(server.objects.get(`bucket/${mode}.bin`)!.data.length).toBe(300000);
        expect(clean()).toEqual([]);
      });
    }
    it(`sigv4a ${creds.sessionToken ? '(session token)' : ''}: the ECDSA signature verifies`, async () => {
      const r = await execa('node', [join(REPO, 'test/e2e/aws-clients/signed-chunked.mjs'), server.url, 'sigv4a', 'chunked.bin'], { env: env(creds), reject: false, timeout: 60_000 });
      expect(JSON.parse(r.stdout)).toMatchObject({ status: 200 });
      expect(server.received.at(-1)!.verified!.algorithm).toBe('AWS4-ECDSA-P256-SHA256');
      expect(clean()).toEqual([]);
    });
  }
});

it('a client with a wrong secret gets SignatureDoesNotMatch', async () => {
  const r = await execa('node', [join(REPO, 'test/e2e/aws-clients/s3-sdk.mjs'), server.url, data], { env: env({ ...REAL, secretAccessKey: REAL.secretAccessKey.replace(/^./, 'X') }), reject: false, timeout: 60_000 });
  expect(r.exitCode).not.toBe(0);
  expect(r.stderr).toContain('SignatureDoesNotMatch');
  expect(clean().length).toBeGreaterThan(0);
});
