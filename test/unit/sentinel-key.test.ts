// The per-user sentinel key (platform/sentinel-key.ts): made once, private, reused; a key or a
// directory others could read or change, a symlink or a file srt did not make is not used, and
// the reason says how to fix it.
import { chmodSync, chownSync, lstatSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loadSentinelKey, sentinelKeyPath } from '../../src/platform/sentinel-key.js';
import { tempDir } from '../e2e/helpers.js';

let tmp: ReturnType<typeof tempDir>;
let home: string;
beforeEach(() => {
  tmp = tempDir('srt-sentinel-key-');
  home = join(tmp.path, 'home');
  mkdirSync(home);
});
afterEach(() => tmp.cleanup());

const problem = (r: ReturnType<typeof loadSentinelKey>) => ('problem' in r ? r.problem : undefined);

describe('the sentinel key', () => {
  it('is made on first use (32 bytes, 0600, in 0700 directories) and the same afterwards', () => {
    const first = loadSentinelKey(home);
    if (!('key' in first)) throw new Error(first.problem);
    const path = sentinelKeyPath(home);
    expect(path).toBe(join(home, '.srt', 'keys', 'sentinel.key'));
    expect(lstatSync(path).mode & 0o777).toBe(0o600);
    expect(lstatSync(join(home, '.srt', 'keys')).mode & 0o777).toBe(0o700);
    expect(first.key).toEqual(readFileSync(path));
    expect(first.key).toHaveLength(32);
    expect(loadSentinelKey(home)).toEqual(first);
    // Another home (another user) gets another key.
    const other = join(tmp.path, 'other');
    mkdirSync(other);
    expect(loadSentinelKey(other)).not.toEqual(first);
  });

  it('is not used when others may read it, when it is a symlink, or not a key srt made', () => {
    loadSentinelKey(home);
    const path = sentinelKeyPath(home);
    chmodSync(path, 0o644);
    expect(problem(loadSentinelKey(home))).toBe(`others may read or change ${path} (mode 644); chmod 600 it`);
    chmodSync(path, 0o600);
    writeFileSync(path, 'short', { mode: 0o600 });
    expect(problem(loadSentinelKey(home))).toBe(`${path} is not a key srt made (5 bytes); remove it (srt makes a new key)`);
    rmSync(path);
    writeFileSync(join(tmp.path, 'planted'), Buffer.alloc(32), { mode: 0o600 });
    symlinkSync(join(tmp.path, 'planted'), path);
    expect(problem(loadSentinelKey(home))).toBe(`${path} is a symbolic link; remove it (srt makes a new key)`);
  });

  it('is not used when its directory may be changed by others, or (as root) belongs to someone else', () => {
    loadSentinelKey(home);
    const dir = join(home, '.srt', 'keys');
    chmodSync(dir, 0o777);
    expect(problem(loadSentinelKey(home))).toBe(`${dir}: others may write it`);
    chmodSync(dir, 0o700);
    if (process.geteuid?.() === 0) {
      const path = sentinelKeyPath(home);
      chownSync(path, 12345, 12345);
      expect(problem(loadSentinelKey(home))).toBe(`${path} belongs to uid 12345, not you; remove it (srt makes a new key)`);
      chownSync(dir, 12345, 12345);
      expect(problem(loadSentinelKey(home))).toBe(`${dir}: not yours`);
    }
  });
});
