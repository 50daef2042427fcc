import { describe, expect, it } from 'vitest';
import { printable, shellQuote } from '../../src/shell.js';

describe('printable', () => {
  it('escapes every control and display-reordering character, keeps everything else', () => {
    expect(printable('plain ünïcode ✓ tab\tkept')).toBe('plain ünïcode ✓ tab\tkept');
    expect(printable('\x1b[1A\x1b[2K\rsrt: all clear')).toBe('\\x1b[1A\\x1b[2K\\rsrt: all clear');
    expect(printable('a\nsrt: fake line')).toBe('a\\nsrt: fake line');
    expect(printable('\x00\x07\x7f\x9b')).toBe('\\x00\\x07\\x7f\\x9b');
    expect(printable('evil\u202efdp.exe')).toBe('evil\\u202efdp.exe');
    expect(printable(printable('\x1b'))).toBe('\\x1b'); // idempotent on its own output
  });
  it('shellQuote still quotes', () => {
    expect(shellQuote("it's")).toBe("'it'\\''s'");
  });
});
