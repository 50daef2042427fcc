// node:crypto, loaded the first time something hashes or draws random bytes: loading it is a
// noticeable part of srt's start, and a plain run (no settings file, no credential, no TLS
// termination) needs neither.

import { createRequire } from 'node:module';

let loaded: typeof import('node:crypto') | undefined;

export function nodeCrypto(): typeof import('node:crypto') {
  return (loaded ??= createRequire(import.meta.url)('node:crypto') as typeof import('node:crypto'));
}
