// The credential plan in words, for `--dry-run` and `srt config`. Never a real value: variables
// are shown as the kind of sentinel they get, files by what the command reads there.

import { SIGN_ONLY } from '../proxy/pipeline.js';
import type { CredentialPlan, Secret } from './plan.js';

function where(s: Secret): string {
  if (!s.inject) return `never sent anywhere (${SIGN_ONLY})`;
  const hosts = s.injectHosts.length ? s.injectHosts.map((r) => r.text).join(', ') : 'no host (network.allowedDomains names none)';
  return `swapped back for ${hosts} (in ${s.injectInto.join(', ')})`;
}

/** `fdOf(i)`: the descriptor bwrap reads the i-th masked file's copy from (dry run only). */
export function describeCredentialPlan(plan: CredentialPlan, opts: { fdOf?: (i: number) => number } = {}): string[] {
  const lines: string[] = [];
  const bySentinel = new Map(plan.secrets.map((s) => [s.sentinel, s]));
  for (const name of plan.unsetEnv) lines.push(`unset ${name}`);
  for (const c of plan.setEnv) {
    if (c.value === undefined) {
      lines.push(`${c.name}=<a sentinel for the output of \`${c.pending!.join(' ')}\`, run when the command starts>`);
      continue;
    }
    const s = bySentinel.get(c.value);
    lines.push(`${c.name}=<sentinel, ${c.value.length} characters${s ? `; ${where(s)}` : ', masked value inside'}>`);
  }
  for (const d of plan.denyFiles) lines.push(`deny ${d.rule.path}${d.rule.glob ? ' (glob)' : ''}: unreadable inside${d.why ? `; a mask entry, but ${d.why}` : ''}`);
  plan.maskFiles.forEach((m, i) => {
    const fd = opts.fdOf ? `; bwrap reads the copy from fd ${opts.fdOf(i)}` : '';
    lines.push(`mask ${m.path}: the command reads a sentinel copy (${m.masked} value${m.masked === 1 ? '' : 's'} masked)${fd}`);
  });
  for (const s of plan.secrets) if (!plan.setEnv.some((c) => c.value === s.sentinel)) lines.push(`secret from ${s.label}: ${where(s)}`);
  for (const a of plan.aws) lines.push(`AWS credential ${a.accessKeyId.label} + ${a.secretAccessKey.label}${a.sessionToken ? ` + ${a.sessionToken.label}` : ''}`);
  return lines;
}
