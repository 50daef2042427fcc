import { describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { NODE_PRELOAD_PATH, sandboxProxyEnv, TRUST_BUNDLE_VARS } from '../../src/proxy/env.js';

const helperPath = '/opt/srt/init/build/srt-init';

describe('sandboxProxyEnv', () => {
  const env = sandboxProxyEnv({ httpPort: 3128, socksPort: 1080, nodePreloadPath: '/opt/srt/dist/proxy/node-preload.cjs', helperPath });

  it('points every common client at the relays, upper and lower case', () => {
    for (const k of ['HTTP_PROXY', 'HTTPS_PROXY', 'http_proxy', 'https_proxy', 'GRPC_PROXY', 'DOCKER_HTTP_PROXY', 'DOCKER_HTTPS_PROXY']) {
      expect(env[k], k).toBe('http://127.0.0.1:3128');
    }
    expect(env.ALL_PROXY).toBe('socks5h://127.0.0.1:1080');
    expect(env.all_proxy).toBe('socks5h://127.0.0.1:1080');
    expect(env.NO_PROXY).toBe('localhost,127.0.0.1,::1');
    expect(env.no_proxy).toBe('localhost,127.0.0.1,::1');
    expect(env.RSYNC_PROXY).toBe('127.0.0.1:3128');
    expect(env.CLOUDSDK_PROXY_TYPE).toBe('http');
    expect(env.CLOUDSDK_PROXY_ADDRESS).toBe('127.0.0.1');
    expect(env.CLOUDSDK_PROXY_PORT).toBe('3128');
    expect(env.NODE_USE_ENV_PROXY).toBe('1');
    expect(env.GIT_SSH_COMMAND).toBe("ssh -o 'ProxyCommand=/opt/srt/init/build/srt-init --connect 127.0.0.1:3128 %h %p'");
    expect(env.GIT_CONFIG_COUNT).toBe('1');
    expect(env.GIT_CONFIG_KEY_0).toBe('http.proxy');
    expect(env.GIT_CONFIG_VALUE_0).toBe('http://127.0.0.1:3128');
    expect(env.NODE_OPTIONS).toBe('--require /opt/srt/dist/proxy/node-preload.cjs');
  });

  it('uses the given ports', () => {
    const e = sandboxProxyEnv({ httpPort: 18080, socksPort: 11080, nodePreloadPath: '/p.cjs', helperPath });
    expect(e.HTTPS_PROXY).toBe('http://127.0.0.1:18080');
    expect(e.ALL_PROXY).toBe('socks5h://127.0.0.1:11080');
    expect(e.GIT_SSH_COMMAND).toContain('--connect 127.0.0.1:18080 %h %p');
  });

  it('quotes a helper path with spaces and quotes through both shells (git runs sh -c, ssh runs the ProxyCommand with sh -c)', () => {
    const odd = "/opt/my srt/it's/srt-init";
    const cmd = sandboxProxyEnv({ httpPort: 3128, socksPort: 1080, nodePreloadPath: '/p.cjs', helperPath: odd }).GIT_SSH_COMMAND!;
    const words = (script: string) => execFileSync('/bin/sh', ['-c', `printf '%s\\n' ${script}`], { encoding: 'utf8' }).trimEnd().split('\n');
    const [, o, proxyCommand] = words(cmd);
    expect(o).toBe('-o');
    const run = proxyCommand!.replace(/^ProxyCommand=/, '').replace('%h', 'example.com').replace('%p', '22');
    expect(words(run)).toEqual([odd, '--connect', '127.0.0.1:3128', 'example.com', '22']);
  });

  it('appends to an existing NODE_OPTIONS and GIT_CONFIG_COUNT instead of replacing them', () => {
    const e = sandboxProxyEnv({
      httpPort: 3128,
      socksPort: 1080,
      nodePreloadPath: '/dir with space/pre"load.cjs',
      helperPath,
      baseEnv: { NODE_OPTIONS: '--max-old-space-size=512', GIT_CONFIG_COUNT: '2' },
    });
    expect(e.NODE_OPTIONS).toBe('--max-old-space-size=512 --require "/dir with space/pre\\"load.cjs"');
    expect(e.GIT_CONFIG_COUNT).toBe('3');
    expect(e.GIT_CONFIG_KEY_2).toBe('http.proxy');
    expect(e.GIT_CONFIG_KEY_0).toBeUndefined();
  });

  it('sets Java\'s proxy properties, after any the user had', () => {
    expect(env.JAVA_TOOL_OPTIONS).toBe('-Dhttp.proxyHost=127.0.0.1 -Dhttp.proxyPort=3128 -Dhttps.proxyHost=127.0.0.1 -Dhttps.proxyPort=3128');
    const e = sandboxProxyEnv({ httpPort: 3128, socksPort: 1080, nodePreloadPath: '/p.cjs', helperPath, baseEnv: { JAVA_TOOL_OPTIONS: '-Xmx1g -Dhttps.proxyHost=evil' } });
    expect(e.JAVA_TOOL_OPTIONS).toBe('-Xmx1g -Dhttps.proxyHost=evil -Dhttp.proxyHost=127.0.0.1 -Dhttp.proxyPort=3128 -Dhttps.proxyHost=127.0.0.1 -Dhttps.proxyPort=3128');
    for (const k of TRUST_BUNDLE_VARS) expect(env[k], k).toBeUndefined();
  });

  it('with TLS termination, points every CA-bundle variable and Java\'s trust store at the run\'s files', () => {
    const e = sandboxProxyEnv({ httpPort: 3128, socksPort: 1080, nodePreloadPath: '/p.cjs', helperPath, trust: { bundlePath: '/run/trust.pem', javaTrustStorePath: '/my run/trust.p12' } });
    expect(TRUST_BUNDLE_VARS).toEqual(['SSL_CERT_FILE', 'NODE_EXTRA_CA_CERTS', 'REQUESTS_CA_BUNDLE', 'CURL_CA_BUNDLE', 'GIT_SSL_CAINFO', 'AWS_CA_BUNDLE', 'PIP_CERT', 'npm_config_cafile', 'CARGO_HTTP_CAINFO', 'DENO_CERT']);
    for (const k of TRUST_BUNDLE_VARS) expect(e[k], k).toBe('/run/trust.pem');
    expect(e.JAVA_TOOL_OPTIONS).toMatch(/ "-Djavax\.net\.ssl\.trustStore=\/my run\/trust\.p12" -Djavax\.net\.ssl\.trustStoreType=PKCS12$/);
  });

  it('names the preload shipped next to the module', () => {
    expect(NODE_PRELOAD_PATH).toMatch(/node-preload\.cjs$/);
    // In dist (after `npm run build`) the file exists; from src it is the .cts source's output name.
    expect(existsSync(NODE_PRELOAD_PATH.replace(/\/src\/proxy\//, '/dist/proxy/'))).toBe(true);
  });
});
