// What a credential plan does to the command's environment, and the plan of a policy without
// credentials. Kept apart from the plan's builder (plan.ts, with sentinels, extract and JWTs) so
// that a run without credentials entries loads nothing else of src/credentials/.

import type { Policy } from '../policy.js';
import type { CredentialPlan } from './plan.js';

/** Does the policy name any credential at all? If not, its plan is emptyCredentialPlan(). */
export function hasCredentials(policy: Policy): boolean {
  const { envVars, files, awsPairs } = policy.credentials;
  return envVars.length > 0 || files.length > 0 || awsPairs.length > 0;
}

export function emptyCredentialPlan(): CredentialPlan {
  return { unsetEnv: [], setEnv: [], denyFiles: [], maskFiles: [], secrets: [], aws: [], warnings: [], exposures: [], unsetMasked: [], errors: [], notes: [] };
}

/** The command's environment: `base` without the withheld variables, with the sentinels. */
export function credentialEnv(plan: CredentialPlan, base: Readonly<Record<string, string | undefined>>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...base };
  for (const name of plan.unsetEnv) delete env[name];
  for (const c of plan.setEnv) {
    // A plan built for a dry run has no sentinel for a sourced variable yet: it cannot run.
    if (c.value === undefined) throw new Error(`internal error: ${c.name} has no sentinel (the plan of a dry run cannot run)`);
    env[c.name] = c.value;
  }
  return env;
}
