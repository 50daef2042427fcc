// What the command sees: each masked variable and file rendered with its sentinels, and every
// other variable and file swept for guarded values. Elsewhere (another variable, another file) a
// guarded value is never handed over either, raw or base64/base64url-encoded (copies.ts): a
// masked value becomes its sentinel encoded the same way; a denied one withholds what holds it.

import type { FileCredential } from '../policy.js';
import { replaceCopies, type Copy, type Found as CopiesFound } from './copies.js';
import type { Maskings, Secret } from './plan.js';

export function commandView(m: Pick<Maskings, 'input' | 'plan' | 'list' | 'unmatched' | 'deny'>, sentinelOf: (real: string) => string): void {
  const { input: { policy, env }, plan } = m;
  const deniedValues = policy.credentials.envVars.filter((e) => e.mode === 'deny' || plan.unsetEnv.includes(e.name)).map((e) => env[e.name]).filter((v): v is string => !!v);
  const copies: Array<Copy<Secret | null>> = [
    ...plan.secrets.map((s) => ({ real: s.real, sentinel: s.sentinel, tag: s })),
    ...deniedValues.map((real) => ({ real, sentinel: null, tag: null })),
  ];
  const labels = (tags: Array<Secret | null>) => [...new Set(tags.filter((t): t is Secret => t !== null).map((t) => t.label))].join(', ');
  const withheld = (found: CopiesFound<Secret | null>) => found.raw.includes(null) || found.encoded.includes(null)
    ? `holds the value of a denied variable${found.raw.includes(null) ? '' : ' (base64-encoded)'}`
    : `holds the value of masked ${labels(found.stuck)} base64-encoded inside a longer run srt cannot re-encode`;
  const files: Array<{ entry: FileCredential; text: string; mode: number; masked: number }> = m.unmatched.map((u) => ({ ...u, masked: 0 }));
  for (const k of m.list) {
    const rendered = k.render(sentinelOf);
    if ('name' in k.entry) plan.setEnv.push({ name: k.entry.name, value: rendered });
    else files.push({ entry: k.entry, text: rendered, mode: k.mode!, masked: k.values.length });
  }
  const order = (e: FileCredential) => policy.credentials.files.indexOf(e);
  for (const f of files.sort((a, b) => order(a.entry) - order(b.entry))) {
    const found = replaceCopies(f.text, copies);
    const label = f.entry.path;
    if (found.withhold) {
      const why = withheld(found);
      plan.warnings.push(`credentials: ${label} ${why}; denied too`);
      m.deny(f.entry, why);
      continue;
    }
    const hits = [...found.raw, ...found.encoded];
    if (f.masked === 0 && hits.length === 0) continue; // nothing guarded in it: passed as it is (warned above)
    if (f.masked === 0) plan.warnings.push(`credentials: ${label}: its extract matched nothing, but it holds the value of masked ${labels(hits)}: the command sees the sentinel there (the rest is passed unmasked)`);
    else if (hits.length > 0) plan.notes.push(`credentials: ${label} also holds ${labels(hits)}'s value: masked there too`);
    plan.maskFiles.push({ path: label, content: Buffer.from(found.text, 'utf8'), mode: f.mode & 0o555, masked: f.masked + hits.length });
  }
  for (const [name, value] of Object.entries(env)) {
    // A variable masked or pending a `source` command is set above; one passed unmasked (its
    // extract matched nothing) still never carries another entry's value.
    if (value === undefined || plan.unsetEnv.includes(name) || plan.setEnv.some((c) => c.name === name)) continue;
    const found = replaceCopies(value, copies);
    if (found.withhold) {
      plan.unsetEnv.push(name);
      plan.warnings.push(`credentials: ${name} ${withheld(found)}; unset too`);
      continue;
    }
    if (found.raw.length > 0) plan.warnings.push(`credentials: ${name} holds the value of masked ${labels(found.raw)}; the command sees the sentinel there too`);
    if (found.encoded.length > 0) plan.warnings.push(`credentials: ${name} holds the value of masked ${labels(found.encoded)} base64-encoded; the command sees the sentinel there, encoded the same way`);
    if (found.text !== value) plan.setEnv.push({ name, value: found.text });
  }
}
