// The proxy stages of a credential plan that masks something (loaded only then). The SigV4 stage
// and its signer are loaded only for a plan with an AWS credential.

import type { Policy } from '../policy.js';
import type { Stage } from '../proxy/pipeline.js';
import type { CredentialPlan } from './plan.js';
import type { CredentialStage } from './stage.js';

/** For a plan with secrets: SigV4 re-signing first (it takes the AWS sentinels out of the
 *  requests it signs again), then injection, re-masking and the tripwire. `credential` is the
 *  latter, whose notes (tripwire reports) are printed at the end. */
export async function credentialStages(plan: CredentialPlan, policy: Policy, log?: (line: string) => void): Promise<{ stages: Stage[]; credential: CredentialStage }> {
  const stages: Stage[] = [];
  const { allowPlaintextInject } = policy.credentials;
  if (plan.aws.length > 0) {
    const { SigV4Stage } = await import('./sigv4-stage.js');
    stages.push(new SigV4Stage(plan.aws, { sigv4: policy.credentials.sigv4, allowPlaintextInject, ...(log ? { log } : {}) }));
  }
  const { CredentialStage } = await import('./stage.js');
  const credential = new CredentialStage(plan.secrets, { allowPlaintextInject });
  stages.push(credential);
  return { stages, credential };
}
