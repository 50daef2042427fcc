// What every backend prepares the same way before a run: srt's own files the sandbox must reach,
// the warning when a writable path holds them, the credential plan (its `source` commands run
// here, outside any sandbox) and TLS termination's CA.

import { lstatSync, realpathSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname } from 'node:path';
import { emptyCredentialPlan, hasCredentials } from '../credentials/env.js';
import type { CredentialPlan } from '../credentials/plan.js';
import { NODE_PRELOAD_PATH } from '../paths.js';
import type { Policy } from '../policy.js';
import type { Termination } from '../proxy/trust.js';
import { SandboxError } from './backend.js';
import { ownFiles } from './self.js';
import { sandboxMayChange } from './writable.js';

/** What the sandbox runs or loads of srt itself: the helper, the Node preload and undici. */
export function runtimeFiles(helperPath?: string): { path: string; kind: 'file' | 'dir' }[] {
  const files: { path: string; kind: 'file' | 'dir' }[] = helperPath ? [{ path: realpathSync(helperPath), kind: 'file' }] : [];
  try {
    files.push({ path: realpathSync(NODE_PRELOAD_PATH), kind: 'file' });
    files.push({ path: dirname(realpathSync(createRequire(NODE_PRELOAD_PATH).resolve('undici/package.json'))), kind: 'dir' });
  } catch { /* not built or not installed: node inside simply goes without the preload */ }
  return files;
}

/**
 * srt itself inside a path the command may write (e.g. `node_modules/srt` of the project being
 * sandboxed, a node under ~/.nvm): the next run would execute whatever the command put there,
 * outside any sandbox (SPEC §8 lists this among doctor's checks; srt says it at start).
 * `kept`: what this backend keeps read-only for the run (Linux: all of it with the supervisor;
 * with the mounts alone not a symlink, such as ~/bin/srt -> the launcher, see self.ts).
 * `land`: where their directories land (sandboxMayChange).
 */
export function selfWritableWarnings(writable: string[], kept: 'all' | 'not-links' | 'none' = 'none', land?: (dir: string) => string): string[] {
  const isLink = (p: string) => { try { return lstatSync(p).isSymbolicLink(); } catch { return false; } };
  const exposed = ownFiles().filter((f) => sandboxMayChange(f.path, writable, land));
  const open = (f: { path: string }) => kept === 'none' || (kept === 'not-links' && isLink(f.path));
  const paths = (fs: { path: string }[]) => [...new Set(fs.map((f) => f.path))];
  const node = (f: { what: string }) => f.what === 'the node srt runs with';
  const srt = paths(exposed.filter((f) => !node(f) && !open(f)));
  const nodes = paths(exposed.filter((f) => node(f) && !open(f)));
  const replaceable = paths(exposed.filter(open));
  const list = (ps: string[]) => `${ps.slice(0, 3).join(', ')}${ps.length > 3 ? ` and ${ps.length - 3} more` : ''}`;
  const them = (ps: string[]) => ps.length === 1 ? 'it' : 'them';
  const keeps = (ps: string[]) => `srt keeps ${them(ps)} read-only inside the sandbox, so the command cannot replace ${them(ps)}; still, `;
  const out: string[] = [];
  if (srt.length) out.push(`srt is installed inside a path this sandbox may write (${list(srt)}): ${keeps(srt)}install srt outside the project (e.g. npm install -g)`);
  if (nodes.length) out.push(`the node srt runs with (${list(nodes)}) lies inside a path this sandbox may write: ${keeps(nodes)}run srt with a node installed elsewhere`);
  if (replaceable.length) {
    const why = kept === 'not-links' ? ' (without the protected-path supervisor srt cannot keep a symlink)' : '';
    out.push(`srt's own files (${list(replaceable)}) lie inside a path this sandbox may write${why}: the command could replace ${them(replaceable)}, and the next srt would run that; ` +
      'install srt and node outside the project (e.g. npm install -g)');
  }
  return out;
}

/**
 * The credential plan of a run (credentials/plan.ts), its `source` commands run unless
 * `dryRun`: a failing command, or a plan error, stops the run before anything starts.
 */
export async function runCredentialPlan(policy: Policy, opts: { dryRun?: boolean; bindFiles: boolean }): Promise<CredentialPlan> {
  // Without credential entries there is nothing to build: the builder is not even loaded.
  if (!hasCredentials(policy)) return emptyCredentialPlan();
  const [{ credentialPlanFor }, { SourceCommandError }] = await Promise.all([import('./credentials.js'), import('../credentials/source.js')]);
  let plan: CredentialPlan;
  try {
    plan = await credentialPlanFor(policy, { runSources: !opts.dryRun, env: process.env, bindFiles: opts.bindFiles });
  } catch (e) {
    if (e instanceof SourceCommandError) throw new SandboxError(`${e.message}; the command did not run`);
    throw e;
  }
  if (plan.errors.length > 0) throw new SandboxError(plan.errors.join('\n'));
  return plan;
}

/**
 * TLS termination's CA and trust, made before the command starts (CA problems stop the run).
 * node-forge and the rest of TLS are loaded only for runs that terminate TLS.
 */
export async function prepareTls(policy: Policy): Promise<Termination | undefined> {
  const tls = policy.network.tlsTerminate;
  if (!tls) return undefined;
  const { prepareTermination } = await import('../proxy/trust.js');
  try {
    return prepareTermination(tls, { home: policy.home });
  } catch (e) {
    throw new SandboxError((e as Error).message);
  }
}
