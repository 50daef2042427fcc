// decide()'s deny of the loopback name (SPEC §6): `localhost` stands for the host's loopback
// addresses, so a deny entry for any of them denies the name too, in every spelling of the name
// and of the address, whatever allows it; and a deny of the name denies the addresses.
import { describe, expect, it } from 'vitest';
import { decide } from '../../src/proxy/decide.js';
import { network } from '../e2e/proxy-fixtures.js';

const reasonOf = (d: ReturnType<typeof decide>) => (d.allow ? 'allowed' : d.reason);

describe('decide: a deny of an address localhost stands for denies the name', () => {
  it.each([
    ['127.0.0.1:5432', 'localhost', 5432],
    ['[::1]:5432', 'localhost', 5432],
    ['127.0.0.1', 'LocalHost.', 5432],
    ['::1', 'localhost.', 80],
  ])('deny %s: %s:%i is denied, though localhost is allowed by name', (deny, host, port) => {
    const d = decide(network({ allow: ['localhost'], deny: [deny] }), host, port);
    expect(reasonOf(d)).toMatch(/^denied by network\.deniedDomains \(/);
  });

  it('a deny on another port leaves the name open on this one', () => {
    expect(decide(network({ allow: ['localhost'], deny: ['127.0.0.1:5432'] }), 'localhost', 6379).allow).toBe(true);
  });

  it('the custom reason of the address\'s entry is given', () => {
    const d = decide(network({ allow: ['localhost'], deny: ['127.0.0.1:5432'], reasons: { '127.0.0.1:5432': 'the production database' } }), 'localhost', 5432);
    expect(reasonOf(d)).toBe('the production database (network.deniedDomains: 127.0.0.1:5432)');
  });

  it('a deny of the name denies every address it stands for, in any spelling', () => {
    const n = network({ allow: ['127.0.0.1', '::1'], deny: ['localhost'] });
    for (const host of ['127.0.0.1', '127.1', '2130706433', '[::1]', '[::ffff:127.0.0.1]']) expect(decide(n, host, 80).allow, host).toBe(false);
  });

  it('other names are not the loopback: a deny of 127.0.0.1 does not deny them', () => {
    const n = network({ allow: ['myapp.test', 'localhost.example'], deny: ['127.0.0.1', '::1'] });
    expect(decide(n, 'myapp.test', 80).allow).toBe(true);
    expect(decide(n, 'localhost.example', 80).allow).toBe(true);
  });
});
