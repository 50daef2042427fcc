// `srt --control-fd N` (CLI only, loaded when the option is given).

import { createReadStream, fstatSync } from 'node:fs';
import { Socket } from 'node:net';
import { createInterface } from 'node:readline';
import type { PlatformBackend } from './platform/backend.js';
import { SettingsError, type SettingsReport } from './settings/index.js';
import { say } from './shell.js';

/**
 * `--control-fd N`: each line is a whole settings document (CLI scope, on top of the files);
 * the merged network policy replaces the running one for new connections. A bad line is
 * reported and changes nothing. Returns the function that stops reading.
 */
export function followControlFd(fd: number, report: SettingsReport, sandbox: PlatformBackend): () => void {
  const label = `--control-fd ${fd}`;
  // Pipes and sockets are read without blocking (a pending fs read could not be cancelled and
  // would keep srt alive after the command ends); a regular file is read as a file.
  const st = fstatSync(fd);
  const stream = st.isFIFO() || st.isSocket() ? new Socket({ fd, readable: true, writable: false }) : createReadStream('', { fd, autoClose: true });
  const lines = createInterface({ input: stream, crlfDelay: Infinity });
  let n = 0;
  lines.on('line', (line) => {
    n++;
    if (line.trim() === '') return;
    try {
      let settings: unknown;
      try {
        settings = JSON.parse(line);
      } catch (err) {
        throw new SettingsError(`${label}: line ${n}: invalid JSON: ${(err as Error).message}`);
      }
      sandbox.updateNetwork(report.withControl({ label: `${label} line ${n}`, settings }).network);
    } catch (err) {
      const lines = err instanceof SettingsError ? err.lines : [(err as Error).message];
      for (const l of lines) say(`srt: ${l} (ignored; the previous policy stays)`);
    }
  });
  stream.on('error', (err: Error) => say(`srt: ${label}: ${err.message}`));
  return () => { lines.close(); stream.destroy(); };
}
