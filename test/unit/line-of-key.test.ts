import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { lineOfKey } from '../../src/settings/files.js';

const dir = mkdtempSync(join(tmpdir(), 'srt-unit-lines-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const file = (name: string, text: string) => { const p = join(dir, name); writeFileSync(p, text); return p; };

describe('lineOfKey', () => {
  it('JSON, plain and wrapped in {"sandbox": …}; list entries by index', () => {
    const plain = file('a.json', '{\n  "network": {\n    "allowedDomains": [\n      "a.example",\n      "b.example"\n    ]\n  }\n}\n');
    expect(lineOfKey(plain, 'network.allowedDomains[1]')).toBe(5);
    expect(lineOfKey(plain, 'network')).toBe(2);
    expect(lineOfKey(plain, 'network.deniedDomains[0]')).toBeUndefined();
    const wrapped = file('b.json', '{"other": 1,\n "sandbox": {\n  "filesystem": {"denyRead": ["x"]}}}');
    expect(lineOfKey(wrapped, 'filesystem.denyRead[0]')).toBe(3);
  });

  it('YAML, and a file that is gone or does not parse', () => {
    const yaml = file('c.yaml', '# c\nfilesystem:\n  denyWrite:\n    - .env\n    - dist\n');
    expect(lineOfKey(yaml, 'filesystem.denyWrite[1]')).toBe(5);
    expect(lineOfKey(join(dir, 'missing.json'), 'network')).toBeUndefined();
    expect(lineOfKey(file('d.json', '{ nope'), 'network')).toBeUndefined();
  });
});
