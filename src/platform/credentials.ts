// The facts the credential plan needs, gathered outside the sandbox before it starts: the bytes
// of each masked file (symlinks followed, size-capped), the output of `source` commands, and
// jose when some entry decodes JWTs. The plan itself is pure (credentials/plan.ts).

import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import { delimiter } from 'node:path';
import type { Policy } from '../policy.js';
import { loadJose, type Jose } from '../credentials/jwt.js';
import { buildCredentialPlan, MAX_MASKED_FILE, type CredentialPlan, type FileFact } from '../credentials/plan.js';
import { describeSource, runSourceCommand, SourceCommandError } from '../credentials/source.js';
import { findOutside, pathOutside, writableRoots } from './writable.js';
import { loadSentinelKey } from './sentinel-key.js';

export interface CredentialFacts {
  files: Map<string, FileFact>;
  sourced?: Map<string, string>;
  jose?: Jose;
  sentinelKey?: Buffer;
  sentinelKeyProblem?: string;
}

/** What is at `path`: a file's bytes (at most MAX_MASKED_FILE), or why there are none. */
export function readCredentialFile(path: string): FileFact {
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR' || code === 'ELOOP') return { kind: 'missing' };
    if (code === 'EISDIR') return { kind: 'dir' };
    return { kind: 'unreadable', why: code ?? (e as Error).message };
  }
  try {
    const st = fstatSync(fd);
    if (st.isDirectory()) return { kind: 'dir' };
    if (!st.isFile()) return { kind: 'unreadable', why: 'not a regular file' };
    if (st.size > MAX_MASKED_FILE) return { kind: 'too-large', size: st.size };
    // Read to the cap + 1 from the open descriptor (the size may change under us).
    const buf = Buffer.alloc(MAX_MASKED_FILE + 1);
    let n = 0;
    for (let r; n < buf.length && (r = readSync(fd, buf, n, buf.length - n, n)) > 0;) n += r;
    if (n > MAX_MASKED_FILE) return { kind: 'too-large', size: n };
    return { kind: 'file', bytes: Buffer.from(buf.subarray(0, n)), mode: st.mode & 0o7777, links: st.nlink };
  } catch (e) {
    return { kind: 'unreadable', why: (e as NodeJS.ErrnoException).code ?? (e as Error).message };
  } finally {
    closeSync(fd);
  }
}

/**
 * Read masked files, load jose if needed and (unless `runSources` is false: a dry run) load the
 * sentinel key and run every `source` command, in parallel. A failing source command rejects
 * with its SourceCommandError.
 */
export async function gatherCredentialFacts(policy: Policy, opts: { runSources: boolean; env: NodeJS.ProcessEnv }): Promise<CredentialFacts> {
  const { envVars, files } = policy.credentials;
  const facts: CredentialFacts = { files: new Map() };
  for (const f of files) if (f.mode === 'mask' && !f.glob) facts.files.set(f.path, readCredentialFile(f.path));
  const masked = [...envVars, ...files].filter((e) => e.mode === 'mask');
  if (masked.length === 0) return facts;
  // A run's sentinels are the ones earlier runs gave the same values (a dry run or `srt config`
  // shows none, and makes no key).
  if (opts.runSources) {
    const k = loadSentinelKey(policy.home);
    if ('key' in k) facts.sentinelKey = k.key;
    else facts.sentinelKeyProblem = k.problem;
  }
  const work: Promise<unknown>[] = [];
  if (masked.some((e) => e.decode === 'jwt')) work.push((async () => { facts.jose = await loadJose(); })());
  const sourced = envVars.filter((e) => e.mode === 'mask' && e.sourceCommand);
  if (opts.runSources && sourced.length > 0) {
    facts.sourced = new Map();
    // Outside the sandbox and before it: never a program (or a PATH entry for it) that a sandboxed
    // command could have planted, as `npm run` puts node_modules/.bin first; in the home
    // directory, not the project's.
    const roots = writableRoots(policy);
    const pathEnv = opts.env.PATH ?? '';
    const env = { ...opts.env, PATH: pathOutside(pathEnv, roots).join(delimiter) };
    work.push(...sourced.map(async (e) => {
      const argv = e.sourceCommand!;
      try {
        const found = findOutside(argv[0]!, pathEnv, roots);
        if ('refused' in found) {
          throw new SourceCommandError(found.refused.length === 0
            ? `${describeSource(argv)} could not be started: command not found`
            : `${describeSource(argv)} was not run: ${argv[0]} is found only where a sandboxed command may write (${found.refused.join(', ')}), ` +
              'and srt starts nothing from there outside the sandbox; give the path of a program outside the writable paths');
        }
        facts.sourced!.set(e.name, await runSourceCommand(argv, { program: found.path, cwd: policy.home, env }));
      } catch (err) {
        throw new SourceCommandError(`credentials: ${e.name}: ${(err as Error).message}`);
      }
    }));
  }
  // Every command finishes (or times out) before srt goes on: none is left running behind it.
  const failed = (await Promise.allSettled(work)).find((r) => r.status === 'rejected');
  if (failed) throw failed.reason;
  return facts;
}

/** The credential plan for a backend: `bindFiles` on Linux (sentinel copies), not on macOS. A
 *  failing source command rejects with a SourceCommandError. */
export async function credentialPlanFor(policy: Policy, opts: { runSources: boolean; env: NodeJS.ProcessEnv; bindFiles: boolean }): Promise<CredentialPlan> {
  const facts = await gatherCredentialFacts(policy, opts);
  return buildCredentialPlan({ policy, env: opts.env, ...facts, bindFiles: opts.bindFiles });
}

/** The plan as a run on this host would build it, for `srt config` and `srt doctor` (no source commands). */
export function hostCredentialPlan(policy: Policy): Promise<CredentialPlan> {
  return credentialPlanFor(policy, { runSources: false, env: process.env, bindFiles: process.platform !== 'darwin' });
}
