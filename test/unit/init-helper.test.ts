import { chmodSync, copyFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { INIT_HELPER_PATH, findInitHelper, hostSeccompArch } from '../../src/platform/init-helper.js';
import { tempDir } from '../e2e/helpers.js';

const arch = hostSeccompArch();
const dir = tempDir('srt-init-helper-');
afterAll(() => dir.cleanup());

function elf(machine: number, cls = 2): Buffer {
  const b = Buffer.alloc(64);
  b.writeUInt32BE(0x7f454c46, 0);
  b[4] = cls;
  b[5] = 1;
  b.writeUInt16LE(machine, 18);
  return b;
}

describe.skipIf(!arch)('findInitHelper', () => {
  it('points at init/build/srt-init by default', () => {
    expect(INIT_HELPER_PATH.endsWith('/init/build/srt-init')).toBe(true);
  });

  it('accepts the built helper (the tests run after `npm run build`)', () => {
    expect(findInitHelper()).toEqual({ path: INIT_HELPER_PATH, arch });
  });

  it('says how to build it when it is missing', () => {
    const r = findInitHelper(join(dir.path, 'absent'));
    expect(r).toEqual({ error: expect.stringMatching(/^srt-init not built .*npm run build/) });
  });

  it('refuses a file that is not executable', () => {
    const file = join(dir.path, 'noexec');
    writeFileSync(file, elf(arch === 'x86_64' ? 62 : 183));
    chmodSync(file, 0o644);
    // even root passes X_OK only when some execute bit is set
    expect(findInitHelper(file)).toEqual({ error: expect.stringMatching(/^srt-init not built/) });
  });

  it('refuses a non-ELF file and an ELF for another architecture or class', () => {
    const other = arch === 'x86_64' ? 183 : 62;
    const native = arch === 'x86_64' ? 62 : 183;
    for (const [name, content] of [
      ['script', Buffer.from('#!/bin/sh\nexit 0\n'.padEnd(64, ' '))],
      ['foreign', elf(other)],
      ['elf32', elf(native, 1)],
      ['short', Buffer.from([0x7f, 0x45])],
    ] as const) {
      const file = join(dir.path, name);
      writeFileSync(file, content);
      chmodSync(file, 0o755);
      expect(findInitHelper(file), name).toEqual({ error: expect.stringMatching(/npm run build/) });
    }
  });

  it('accepts a copy of a native ELF executable', () => {
    const file = join(dir.path, 'native');
    copyFileSync('/bin/true', file);
    chmodSync(file, 0o755);
    expect(findInitHelper(file)).toEqual({ path: file, arch });
  });
});
