// The equality a library sandbox keeps its mount plan by (platform/kept-plan.ts): equal only
// when equal all the way down; anything it does not know is equal only to itself.
import { describe, expect, it } from 'vitest';
import { sameValue } from '../../src/platform/kept-plan.js';

describe('sameValue', () => {
  it('compares plain objects, arrays, Maps, Sets and buffers by value, all the way down', () => {
    const facts = () => ({
      landings: new Map([['/a', { real: '/b', kind: 'file', id: { dev: '1', ino: '2' }, via: [{ link: '/a', target: 'b', system: false }] }]]),
      readOnlyDirs: new Set(['/x']), targets: [{ path: '/p', kind: 'file' }], filter: Buffer.from([1, 2]), n: 0n,
    });
    expect(sameValue(facts(), facts())).toBe(true);
    const changed = [
      (f: ReturnType<typeof facts>) => { f.landings.get('/a')!.id.ino = '3'; },
      (f: ReturnType<typeof facts>) => { f.landings.get('/a')!.via[0]!.target = 'c'; },
      (f: ReturnType<typeof facts>) => { f.landings.set('/c', f.landings.get('/a')!); },
      (f: ReturnType<typeof facts>) => { f.readOnlyDirs.add('/y'); },
      (f: ReturnType<typeof facts>) => { f.targets.push({ path: '/q', kind: 'dir' }); },
      (f: ReturnType<typeof facts>) => { f.targets[0]!.kind = 'dir'; },
      (f: ReturnType<typeof facts>) => { f.filter[1] = 3; },
      (f: ReturnType<typeof facts>) => { f.n = 1n; },
      (f: ReturnType<typeof facts>) => { Object.assign(f, { extra: undefined }); },
    ];
    for (const change of changed) {
      const f = facts();
      change(f);
      expect(sameValue(facts(), f), String(change)).toBe(false);
      expect(sameValue(f, facts()), String(change)).toBe(false);
    }
  });

  it('keeps apart what looks alike: an array and an object, a Map and an object, a Set and an array', () => {
    expect(sameValue([1], { 0: 1 })).toBe(false);
    expect(sameValue(new Map([['a', 1]]), { a: 1 })).toBe(false);
    expect(sameValue(new Set(['a']), ['a'])).toBe(false);
    expect(sameValue(null, {})).toBe(false);
    expect(sameValue(NaN, NaN)).toBe(true);
  });

  it('takes a Set of objects, a class instance or a function as equal only to itself', () => {
    const o = { a: 1 };
    expect(sameValue(new Set([o]), new Set([{ a: 1 }]))).toBe(false);
    expect(sameValue(new Date(0), new Date(0))).toBe(false);
    const fn = () => 1;
    expect(sameValue({ fn }, { fn })).toBe(true);
    expect(sameValue({ fn }, { fn: () => 1 })).toBe(false);
  });
});
