#!/usr/bin/env node
// Bundles the CLI as rolldown.config.mjs says, quietly: a warning fails the build (one left to
// scroll past in every build is read by nobody), and the chunks and their sizes are listed only
// with --verbose (`npm run build --verbose` passes it on as npm's log level).
import { rolldown } from 'rolldown';
import config from '../rolldown.config.mjs';

const verbose = process.argv.includes('--verbose') || process.env.npm_config_loglevel === 'verbose';
const { output, ...input } = config;
const warnings = [];
const bundle = await rolldown({ ...input, onLog: (level, log) => { if (level === 'warn') warnings.push(log.message); } });
try {
  const { output: chunks } = await bundle.write(output);
  if (verbose) for (const c of chunks) console.error(`${c.fileName.padEnd(24)} ${((c.type === 'chunk' ? Buffer.byteLength(c.code) : Buffer.byteLength(c.source)) / 1000).toFixed(2).padStart(8)} kB`);
} finally {
  await bundle.close();
}
if (warnings.length > 0) {
  for (const w of warnings) console.error(`bundle: ${w}`);
  console.error('bundle: failed: the bundler warned (fix the cause; a build prints no warning)');
  process.exit(1);
}
