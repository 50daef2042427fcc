// Copies of a guarded value in other text (copies.ts): raw, and inside base64/base64url runs at
// any depth srt looks (2), replaced by the sentinel encoded the same way, or withheld.
import { describe, expect, it } from 'vitest';
import { replaceCopies, type Copy } from '../../src/credentials/copies.js';

const REAL = 'ghp_16C7e42F292c6912E7710c838347Ae178B4a';
const FAKE = 'ghp_Zz9yXw8vUt7sRq6pOn5mLk4jIh3gFe2dCb1a';
const DENIED = 'npm_deniedDeniedDeniedDenied0123456789';
const masked: Copy<string> = { real: REAL, sentinel: FAKE, tag: 'GH_TOKEN' };
const denied: Copy<string> = { real: DENIED, sentinel: null, tag: 'NPM_TOKEN' };
const b64 = (s: string) => Buffer.from(s).toString('base64');
const b64url = (s: string) => Buffer.from(s).toString('base64url');

describe('replaceCopies', () => {
  it('raw copies become the sentinel', () => {
    expect(replaceCopies(`https://x:${REAL}@github.com`, [masked])).toEqual({ text: `https://x:${FAKE}@github.com`, raw: ['GH_TOKEN'], encoded: [], stuck: [], withhold: false });
  });

  it('a base64 `user:token` (NPM_CONFIG__AUTH) becomes base64 of `user:sentinel`, same length and padding', () => {
    for (const user of ['u', 'octocat', 'ab']) {
      const r = replaceCopies(b64(`${user}:${REAL}`), [masked]);
      expect(r.encoded).toEqual(['GH_TOKEN']);
      expect(r.text).toBe(b64(`${user}:${FAKE}`));
      expect(r.text).toHaveLength(b64(`${user}:${REAL}`).length);
    }
  });

  it('a run glued to characters of its neighbour is decoded where it starts (whole groups of four decode with it)', () => {
    for (const glue of ['x', 'xy', 'xyz', 'abcd', 'abcdefg']) expect(replaceCopies(`${glue}${b64(`user:${REAL}`)}`, [masked]).text).toBe(`${glue}${b64(`user:${FAKE}`)}`);
  });

  it('base64url without padding stays base64url without padding', () => {
    const r = replaceCopies(`token=${b64url(`{"t":"${REAL}"}`)}&x=1`, [masked]);
    expect(r.text).toBe(`token=${b64url(`{"t":"${FAKE}"}`)}&x=1`);
  });

  it('a Docker auth config in a variable, and the same JSON base64-encoded once more (a Kubernetes secret)', () => {
    const config = (t: string) => JSON.stringify({ auths: { 'ghcr.io': { auth: b64(`octocat:${t}`) } } });
    expect(replaceCopies(config(REAL), [masked]).text).toBe(config(FAKE));
    expect(replaceCopies(b64(config(REAL)), [masked]).text).toBe(b64(config(FAKE)));
  });

  it('a denied value, raw or encoded, withholds the text', () => {
    expect(replaceCopies(`x ${DENIED}`, [masked, denied]).withhold).toBe(true);
    const r = replaceCopies(b64(`user:${DENIED}`), [masked, denied]);
    expect([r.withhold, r.encoded]).toEqual([true, ['NPM_TOKEN']]);
  });

  it('values shorter than 8 characters, and text with no copy, are left alone', () => {
    expect(replaceCopies(b64('user:1234'), [{ real: '1234', sentinel: '5678', tag: 'PIN' }])).toEqual({ text: b64('user:1234'), raw: [], encoded: [], stuck: [], withhold: false });
    const plain = 'PATH=/usr/local/bin:/usr/bin:/bin; some-long-identifier_with_underscores and YWJjZGVmZ2hpamtsbW5vcA==';
    expect(replaceCopies(plain, [masked, denied])).toEqual({ text: plain, raw: [], encoded: [], stuck: [], withhold: false });
  });

  it('an encoded copy srt cannot delimit (inside a longer base64 blob, a path) is stuck: the text is withheld', () => {
    const blob = b64(`${'x'.repeat(7)}user:${REAL}`).slice(0, -1) + 'Q';
    for (const text of [`/v1/prefix/${b64(`user:${REAL}`)}/tail`, blob]) {
      const r = replaceCopies(text, [masked]);
      expect([r.withhold, r.stuck, r.encoded], text).toEqual([true, ['GH_TOKEN'], ['GH_TOKEN']]);
    }
    // One level down too: a base64 Kubernetes secret holding a path that holds the value.
    const nested = replaceCopies(b64(`{"url":"/v1/x/${b64url(`u:${REAL}`)}/y"}`), [masked]);
    expect([nested.withhold, nested.stuck]).toEqual([true, ['GH_TOKEN']]);
  });

  it('non-ASCII text around a copy is kept byte for byte', () => {
    const r = replaceCopies(`é ${b64(`ü:${REAL}`)} ✓`, [masked]);
    expect(r.text).toBe(`é ${b64(`ü:${FAKE}`)} ✓`);
  });
});
