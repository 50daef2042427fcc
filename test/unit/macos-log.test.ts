// Seatbelt denial lines from the unified log, as the macOS runner reads them for its report.
import { describe, expect, it } from 'vitest';
import { parseDenial } from '../../src/platform/macos-exec.js';

describe('Seatbelt denial lines', () => {
  const tag = 'srt-0123456789ab';
  it('process, operation and target, with the run tag taken off', () => {
    expect(parseDenial(`Sandbox: cat(4242) deny(1) file-read-data /Users/a/.ssh/id_rsa ${tag}`, tag))
      .toEqual({ process: 'cat', op: 'file-read-data', target: '/Users/a/.ssh/id_rsa' });
    expect(parseDenial('Sandbox: curl(77) deny(1) network-outbound 93.184.216.34:443', tag))
      .toEqual({ process: 'curl', op: 'network-outbound', target: '93.184.216.34:443' });
    expect(parseDenial(`Sandbox: Python Helper (2)(9) deny(1) file-write-create /Users/a/My Files/x ${tag}`, tag))
      .toEqual({ process: 'Python Helper (2)', op: 'file-write-create', target: '/Users/a/My Files/x' });
    expect(parseDenial(`Sandbox: node(5) deny(1) mach-lookup com.apple.analyticsd ${tag}`, tag)?.op).toBe('mach-lookup');
  });
  it('anything else is not a denial', () => {
    expect(parseDenial('Filtering the log data using "eventMessage CONTAINS …"', tag)).toBeNull();
    expect(parseDenial('Sandbox: cat(1) allow file-read-data /x', tag)).toBeNull();
  });
});
