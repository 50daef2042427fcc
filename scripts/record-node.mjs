// Record the node that built or installed srt (dist/node-path): bin/srt runs srt with it and
// never with a `node` found on PATH, which a sandboxed command could have planted.
import { mkdirSync, realpathSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const dist = join(dirname(fileURLToPath(import.meta.url)), '..', 'dist');
mkdirSync(dist, { recursive: true });
writeFileSync(join(dist, 'node-path'), `${realpathSync(process.execPath)}\n`);
