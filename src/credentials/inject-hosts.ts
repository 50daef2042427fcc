// Where a masked value may be sent back (its injectHosts, else every allowedDomains entry that
// names one host), and the masks that can never be put back, said at start rather than found out
// by a failed login.

import type { EnvCredential, FileCredential, Policy } from '../policy.js';
import { effectiveAllowList } from '../proxy/decide.js';
import type { DomainRule } from '../proxy/domains.js';
import type { CredentialPlan } from './plan.js';

/** Could some destination match both rules? (Is an injectHosts entry reachable under an allow entry?) */
function overlaps(allow: DomainRule, inject: DomainRule): boolean {
  if (allow.port !== undefined && inject.port !== undefined && allow.port !== inject.port) return false;
  if (allow.kind === 'any' || inject.kind === 'any') return true;
  const under = (host: string, suffix: string) => host === suffix || host.endsWith(`.${suffix}`);
  if (inject.kind === 'host') {
    if (allow.kind === 'host') return allow.host === inject.host;
    return inject.ip === undefined && inject.host.endsWith(`.${allow.host}`);
  }
  if (allow.kind === 'host') return allow.ip === undefined && allow.host.endsWith(`.${inject.host}`);
  return under(allow.host, inject.host) || under(inject.host, allow.host);
}

/** Where an entry without injectHosts sends its value: every allowedDomains entry that names one
 *  host. A wildcard (`*.example.com`, `*`) would send it to hosts nobody named. */
export function defaultInjectHosts(policy: Policy): DomainRule[] {
  return effectiveAllowList(policy.network).map((d) => d.rule).filter((r) => r.kind === 'host');
}

/** Said at start: the allow entries a mask without injectHosts does not go to. */
export function defaultInjectNotice(policy: Policy, maskings: readonly { entry: EnvCredential | FileCredential; label: string }[], plan: CredentialPlan): void {
  const labels = [...new Set(maskings.filter((m) => m.entry.injectHosts === undefined).map((m) => m.label))];
  const left = effectiveAllowList(policy.network).map((d) => d.rule).filter((r) => r.kind !== 'host').map((r) => r.text);
  if (labels.length === 0 || left.length === 0) return;
  plan.warnings.push(
    `credentials: ${labels.join(', ')} ${labels.length === 1 ? 'has' : 'have'} no injectHosts: the real value goes only to the allowedDomains entries that name one host, not to ${[...new Set(left)].join(', ')}; list ${left.length === 1 ? 'it' : 'them'} in injectHosts to send it there`,
  );
}

/** Masks that can never be put back, said at start rather than found out by a failed login. */
export function injectionWarnings(policy: Policy, plan: CredentialPlan): void {
  const { network, credentials } = policy;
  // Every mask entry that is not withheld instead, set in this environment or not: a mistake in
  // the settings is worth fixing before the day the variable is set.
  const entries: Array<EnvCredential | FileCredential> = [...credentials.envVars, ...credentials.files].filter((e) =>
    e.mode === 'mask' && ('name' in e ? !plan.unsetEnv.includes(e.name) : !plan.denyFiles.some((d) => d.rule.path === e.path)));
  const masked = entries.map((e) => ('name' in e ? e.name : e.path));
  if (masked.length === 0) return;
  if (!network.tlsTerminate && !credentials.allowPlaintextInject) {
    plan.warnings.push(
      `credentials: ${masked.join(', ')} masked without network.tlsTerminate: the sentinel would reach the server unchanged and authentication would fail; add "tlsTerminate": {} to network`,
    );
  }
  for (const e of entries) {
    const label = 'name' in e ? e.name : e.path;
    if (!e.injectHosts) {
      const why = network.allowedDomains.length === 0 ? 'is empty' : 'names no single host (a wildcard must be listed in injectHosts)';
      if (defaultInjectHosts(policy).length === 0) plan.warnings.push(`credentials: ${label}: network.allowedDomains ${why}, so its real value is never sent anywhere`);
      continue;
    }
    for (const rule of e.injectHosts) {
      if (!network.allowedDomains.some((a) => overlaps(a.rule, rule))) {
        plan.warnings.push(`credentials: ${label}: injectHosts entry "${rule.raw}" is not covered by network.allowedDomains, so the proxy never connects there and the value is never sent`);
      }
    }
  }
}
