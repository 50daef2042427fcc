// The one host:port renderer (src/host-port.ts) and the places that write one through it.
import { describe, expect, it } from 'vitest';
import { bracketHost, hostPort } from '../../src/host-port.js';
import { initArgv, hostListenArgv } from '../../src/profiles/init-args.js';
import { displayHostPort } from '../../src/proxy/decide.js';
import { describeExpose, describeForward } from '../../src/proxy/local-services.js';
import { allowEntryFor } from '../../src/settings/advice.js';

describe('hostPort', () => {
  it.each([
    ['127.0.0.1', 3000, '127.0.0.1:3000'],
    ['example.com', 443, 'example.com:443'],
    ['::1', 8080, '[::1]:8080'],
    ['2001:db8::1', 22, '[2001:db8::1]:22'],
    ['::ffff:127.0.0.1', 80, '[::ffff:127.0.0.1]:80'],
  ])('%s, %i → %s', (host, port, want) => {
    expect(hostPort(host, port)).toBe(want);
    expect(bracketHost(host)).toBe(want.slice(0, want.lastIndexOf(':')));
  });

  it('is what every place that writes a host and a port writes', () => {
    expect(displayHostPort('::1', 5432)).toBe('[::1]:5432');
    expect(allowEntryFor('::1', 5432)).toBe('[::1]:5432');
    expect(allowEntryFor('2001:db8::1', 443)).toBe('[2001:db8::1]');
    expect(describeExpose({ hostAddress: '::1', hostPort: 8080, sandboxPort: 80 })).toBe('host [::1]:8080 → sandbox 127.0.0.1:80');
    expect(describeForward({ listen: ['127.0.0.1', '::1'], port: 5432, host: 'localhost' })).toBe('sandbox 127.0.0.1:5432, [::1]:5432 → host localhost:5432');
    const argv = initArgv({ helperPath: '/h', relays: [{ address: '::1', port: 5432, socketPath: '/s' }], exposes: [], landlock: 'off', maxProcs: 8192, filter: '/f' });
    expect(argv).toContain('[::1]:5432:/s');
    expect(hostListenArgv('/h', [{ fd: 7, hostAddress: '::1', hostPort: 8080, sandboxPort: 80 }])).toContain('7:[::1]:8080');
  });
});
