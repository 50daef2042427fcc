// AWS re-signing through srt's real proxy: TLS termination and the request pipeline with the
// SigV4 stage in it, the proxy in this process, and real AWS clients as child processes that use
// it the way a sandboxed command does (srt's proxy variables, the Node preload, the trust bundle)
// while holding ONLY sentinel credentials — @aws-sdk/client-s3, Debian's awscli, boto3 (when
// python3 has it), and SDK-signed aws-chunked and SigV4a clients — against the loopback test AWS
// (aws-server.ts), which verifies every request with @smithy/signature-v4 and the REAL credentials
// and records that no sentinel ever arrived. Also: deny and passthrough per form, and plain HTTP.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { execa, execaSync } from 'execa';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { REPO, tempDir } from './helpers.js';
import { network, rules, testPki } from './proxy-fixtures.js';
import { startProxy, type ProxyHandle } from '../../src/proxy/server.js';
import { sandboxProxyEnv } from '../../src/proxy/env.js';
import { prepareTermination, type Termination } from '../../src/proxy/trust.js';
import { SigV4Stage } from '../../src/credentials/sigv4-stage.js';
import type { AwsCredential } from '../../src/credentials/plan.js';
import type { Policy, SigV4Form, SigV4Handling } from '../../src/policy.js';
import { startAwsServer, type AwsServer } from './aws-server.js';
import { AWS_CLI, awsEnv, REAL, REAL_TEMPORARY, PYTHON } from './aws-fixtures.js';
import type { AwsCreds } from './aws-verifier.js';

const PRELOAD = join(REPO, 'dist', 'proxy', 'node-preload.cjs');
const CLIENTS = join(REPO, 'test/e2e/aws-clients');
const BOTO3 = execaSync(PYTHON, ['-c', 'import boto3'], { reject: false }).exitCode === 0;
const tmp = tempDir('srt-aws-proxy-');
// Real AWS clients start slowly (the AWS CLI: seconds per call) and share 2 cores with the suite.
vi.setConfig({ testTimeout: 120_000 });
const resolver = async (host: string) => {
  if (host.endsWith('.test')) return ['127.0.0.1'];
  throw Object.assign(new Error('not found'), { code: 'ENOTFOUND' });
};

/** What the sandboxed command would hold instead of each real credential. */
const SENTINELS = new Map<AwsCreds, AwsCreds>([
  [REAL, { accessKeyId: 'AKIAZSENTINEL2345ABC', secretAccessKey: 'SentinelSecretKeysentinelSECRETkey+01234' }],
  [REAL_TEMPORARY, { accessKeyId: 'ASIAZSENTINEL23456AB', secretAccessKey: 'SentinelTempSecretsentinelTEMPsecret+987', sessionToken: `IQoJb3JpZ2luX2VjEPTSENTINELTOKEN${'x'.repeat(70)}==` }],
]);

let server: AwsServer;
let termination: Termination;
let bundle: string;
let data: string;
const endpoint = () => `https://s3.test:${server.port}`;

function credential(real: AwsCreds, injectHosts?: string[]): AwsCredential {
  const fake = SENTINELS.get(real)!;
  const hosts = rules(injectHosts ?? ['*'], 'allow').map((r) => r.rule);
  const c: AwsCredential = {
    accessKeyId: { label: 'AWS_ACCESS_KEY_ID', real: real.accessKeyId, sentinel: fake.accessKeyId, injectHosts: hosts, injectInto: ['headers'], inject: true },
    secretAccessKey: { label: 'AWS_SECRET_ACCESS_KEY', real: real.secretAccessKey, sentinel: fake.secretAccessKey, injectHosts: hosts, injectInto: ['headers'], inject: false },
  };
  if (real.sessionToken) c.sessionToken = { label: 'AWS_SESSION_TOKEN', real: real.sessionToken, sentinel: fake.sessionToken!, injectHosts: hosts, injectInto: ['headers'], inject: true };
  return c;
}

function tlsNetwork(): Policy['network'] {
  return { ...network({ allow: ['s3.test', 'other.test'] }), tlsTerminate: { excludeDomains: [], extraCaCertPaths: [pkiCa], maxTunnels: 256, handshakeTimeoutMs: 10_000, source: { scope: 'user' } } };
}
let pkiCa = '';

/** A proxy with the SigV4 stage for `real`'s credential, and a client environment holding its sentinels. */
async function withProxy<T>(real: AwsCreds, o: { sigv4?: Partial<Record<SigV4Form, SigV4Handling>>; injectHosts?: string[] }, body: (env: Record<string, string>, proxy: ProxyHandle) => Promise<T>): Promise<T> {
  const stage = new SigV4Stage([credential(real, o.injectHosts)], { sigv4: { presigned: 'deny', streaming: 'deny', sigv4a: 'deny', ...o.sigv4 }, allowPlaintextInject: false });
  const proxy = await startProxy({ network: tlsNetwork(), listen: { http: { host: '127.0.0.1', port: 0 }, socks: { host: '127.0.0.1', port: 0 } }, resolver, upstreamEnv: {}, testOnlyExemptAddresses: ['127.0.0.1'], termination, stages: [stage] });
  const env = { ...awsEnv(SENTINELS.get(real)!, tmp.path), ...sandboxProxyEnv({ httpPort: proxy.httpPort!, socksPort: proxy.socksPort!, nodePreloadPath: PRELOAD }), NODE_EXTRA_CA_CERTS: bundle, AWS_CA_BUNDLE: bundle, CURL_CA_BUNDLE: bundle, SSL_CERT_FILE: bundle };
  try {
    return await body(env, proxy);
  } finally {
    await proxy.close();
  }
}

const run = (env: Record<string, string>, cmd: string, args: string[]) => execa(cmd, args, { env, extendEnv: false, reject: false, timeout: 90_000 });
const lastJson = (stdout: string) => JSON.parse(stdout.trim().split('\n').at(-1)!);

/** What the server got since the last call: each request verified, no sentinel anywhere in it. */
function received(real: AwsCreds) {
  const all = server.received.splice(0);
  const raw = JSON.stringify(all.map((r) => ({ ...r, body: r.body.toString('latin1'), verified: undefined })));
  for (const s of Object.values(SENTINELS.get(real)!)) {
    expect(raw).not.toContain(s);
    expect(raw).not.toContain(encodeURIComponent(s));
  }
  return { all, errors: all.filter((r) => r.error).map((r) => `${r.method} ${r.target}: ${r.error}`) };
}

beforeAll(async () => {
  const pki = testPki(tmp.path);
  pkiCa = pki.caPath;
  const leaf = pki.leaf(['DNS:s3.test']);
  server = await startAwsServer({ cert: leaf.cert, key: leaf.key, creds: [REAL, REAL_TEMPORARY] });
  termination = prepareTermination(tlsNetwork().tlsTerminate!);
  bundle = join(tmp.path, 'bundle.pem');
  writeFileSync(bundle, termination.bundle());
  data = join(tmp.path, 'data.bin');
  writeFileSync(data, randomBytes(9 * 1024 * 1024 + 77));
});
afterAll(async () => {
  await server?.close();
  tmp.cleanup();
});

for (const real of [REAL, REAL_TEMPORARY]) {
  describe(`clients holding only sentinels, re-signed by the proxy (${real.sessionToken ? 'temporary credentials with a session token' : 'long-term key pair'})`, () => {
    it('@aws-sdk/client-s3: PutObject with default checksums, multipart, GetObject, list; a presigned GET with curl', async () => {
      await withProxy(real, {}, async (env) => {
        const r = await run(env, 'node', [`${CLIENTS}/s3-sdk.mjs`, endpoint(), data]);
        expect(r.stderr).toBe('');
        const out = lastJson(r.stdout) as { multiEqual: boolean; small: string; keys: string[]; presigned: string; held: string[] };
        expect(out).toMatchObject({ multiEqual: true, small: 'hello from the sdk\n', keys: ['sdk/a b+c (é).txt', 'sdk/multi.bin', 'sdk/small.txt', 'sdk/stream.bin'] });
        expect(out.held).toEqual(Object.values(SENTINELS.get(real)!));
        const got = received(real);
        expect(got.errors).toEqual([]);
        expect(new Set(got.all.map((x) => x.verified!.payload))).toContain('STREAMING-UNSIGNED-PAYLOAD-TRAILER');
        expect(server.objects.get('bucket/sdk/stream.bin')!.data.equals(readFileSync(data))).toBe(true);
        expect(out.presigned).toContain(SENTINELS.get(real)!.accessKeyId);
        const curl = await run(env, 'curl', ['-sS', '--fail', out.presigned]);
        expect(curl.stdout).toBe('hello from the sdk');
        const pre = received(real);
        expect(pre.errors).toEqual([]);
        expect(pre.all.map((x) => x.verified!.form)).toEqual(['query']);
      });
    });

    it.runIf(existsSync(AWS_CLI))("Debian's awscli: s3 cp up (multipart) and down, s3 ls, sts get-caller-identity", async () => {
      await withProxy(real, {}, async (env) => {
        const aws = (...args: string[]) => run(env, AWS_CLI, ['--endpoint-url', endpoint(), ...args]);
        expect((await aws('s3', 'cp', data, 's3://bucket/cli/data.bin', '--only-show-errors')).stderr).toBe('');
        const back = join(tmp.path, `back-${real.accessKeyId}.bin`);
        expect((await aws('s3', 'cp', 's3://bucket/cli/data.bin', back, '--only-show-errors')).stderr).toBe('');
        expect(readFileSync(back).equals(readFileSync(data))).toBe(true);
        expect((await aws('s3', 'ls', 's3://bucket/cli/')).stdout).toContain('data.bin');
        expect(JSON.parse((await aws('sts', 'get-caller-identity', '--output', 'json')).stdout)).toMatchObject({ Account: '123456789012' });
        const got = received(real);
        expect(got.errors).toEqual([]);
        expect(got.all.filter((x) => /uploadId=/.test(x.target)).length).toBeGreaterThan(1);
      });
    });

    it.runIf(BOTO3)('boto3: put_object, multipart upload_file, ranged download_file, list, presigned GET, STS', async () => {
      await withProxy(real, {}, async (env) => {
        const back = join(tmp.path, `boto-${real.accessKeyId}.bin`);
        const r = await run(env, PYTHON, [`${CLIENTS}/boto3-client.py`, endpoint(), data, back]);
        expect(r.stderr).toBe('');
        const out = lastJson(r.stdout) as { small: string; keys: string[]; presigned: string; account: string };
        expect(out).toMatchObject({ small: 'hello from boto3\n', keys: ['boto/data.bin', 'boto/small.txt'], account: '123456789012' });
        expect(readFileSync(back).equals(readFileSync(data))).toBe(true);
        expect((await run(env, 'curl', ['-sS', '--fail', out.presigned])).stdout).toBe('hello from boto3');
        expect(received(real).errors).toEqual([]);
      });
    });

    for (const mode of ['chunked', 'chunked-trailer', 'sigv4a'] as const) {
      it(mode === 'sigv4a' ? 'SigV4a (AWS4-ECDSA-P256-SHA256)' : `aws-chunked STREAMING-AWS4-HMAC-SHA256-PAYLOAD${mode === 'chunked' ? '' : '-TRAILER'}: each chunk re-signed on the fly`, async () => {
        await withProxy(real, {}, async (env) => {
          const key = mode === 'sigv4a' ? 'sdk/small.txt' : `signed-${mode}.bin`;
          const r = await run(env, 'node', [`${CLIENTS}/signed-chunked.mjs`, endpoint(), mode, key, '1000000', '65536']);
          expect(r.stderr).toBe('');
          expect(lastJson(r.stdout).status).toBe(200);
          const got = received(real);
          expect(got.errors).toEqual([]);
          if (mode === 'sigv4a') expect(got.all[0]!.verified!.algorithm).toBe('AWS4-ECDSA-P256-SHA256');
          else {
            expect(got.all[0]!.verified!.chunks).toBe(17);
            expect(server.objects.get(`bucket/${key}`)!.data.length).toBe(1000000);
          }
        });
      });
    }
  });
}

describe('credentials.sigv4: deny and passthrough through the proxy', () => {
  const attempts: Record<SigV4Form, (env: Record<string, string>) => Promise<{ status: number; text: string }>> = {
    presigned: async (env) => {
      const sdk = lastJson((await run(env, 'node', [`${CLIENTS}/s3-sdk.mjs`, endpoint(), data])).stdout) as { presigned: string };
      server.received.length = 0;
      const r = await run(env, 'curl', ['-sS', '-w', '\n%{http_code}', sdk.presigned]);
      const lines = r.stdout.split('\n');
      return { status: Number(lines.pop()), text: lines.join('\n') };
    },
    streaming: async (env) => {
      const out = lastJson((await run(env, 'node', [`${CLIENTS}/signed-chunked.mjs`, endpoint(), 'chunked', 'form.bin', '100000', '65536'])).stdout) as { status: number; body: string };
      return { status: out.status, text: out.body };
    },
    sigv4a: async (env) => {
      const out = lastJson((await run(env, 'node', [`${CLIENTS}/signed-chunked.mjs`, endpoint(), 'sigv4a', 'sdk/small.txt'])).stdout) as { status: number; body: string };
      return { status: out.status, text: out.body };
    },
  };
  for (const [form, attempt] of Object.entries(attempts) as Array<[SigV4Form, (typeof attempts)[SigV4Form]]>) {
    it(`${form}: re-signed whether credentials.sigv4.${form} is "deny" (the default) or "passthrough": they decide only for requests srt cannot re-sign (unit tests)`, async () => {
      for (const handling of ['deny', 'passthrough'] as const) {
        await withProxy(REAL, { sigv4: { [form]: handling } }, async (env, proxy) => {
          const r = await attempt(env);
          expect(r.status, r.text).toBe(200);
          expect(server.received.length).toBeGreaterThan(0);
          expect(server.received.every((x) => !x.error), JSON.stringify(server.received.map((x) => x.error))).toBe(true);
          expect(proxy.violations()).toEqual([]);
          server.received.length = 0;
        });
      }
    });
  }
});

describe('where the proxy re-signs', () => {
  it('not toward a host outside the access key\'s injectHosts: the request is forwarded untouched (the credential stage\'s tripwire refuses it)', async () => {
    await withProxy(REAL, { injectHosts: ['other.test'] }, async (env) => {
      const out = lastJson((await run(env, 'node', [`${CLIENTS}/signed-chunked.mjs`, endpoint(), 'sigv4a', 'sdk/small.txt'])).stdout) as { status: number };
      expect(out.status).toBe(403);
      expect(server.received.at(-1)!.error).toMatch(/unknown access key id AKIAZSENTINEL/);
      server.received.length = 0;
    });
  });
});
