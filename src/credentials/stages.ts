// The proxy stages of a credential plan that masks something (loaded only then). The SigV4
// stage and its signer are loaded for a plan with an AWS credential, or once an answer mints one.

import type { Policy } from '../policy.js';
import type { ProxyRequest, Refusal, Stage } from '../proxy/pipeline.js';
import type { AwsCredential, CredentialPlan } from './plan.js';
import type { SigV4Stage } from './sigv4-stage.js';
import type { CredentialStage } from './stage.js';

/** For a plan with secrets: the minted-credentials stage first (its response hook runs last, on
 *  what the others re-masked), SigV4 re-signing (it takes the AWS sentinels out of the requests it
 *  signs again), then injection, re-masking and the tripwire. `credential` is the latter, whose
 *  notes are printed at the end. */
export async function credentialStages(plan: CredentialPlan, policy: Policy, log?: (line: string) => void): Promise<{ stages: Stage[]; credential: CredentialStage }> {
  const { allowPlaintextInject, sigv4 } = policy.credentials;
  const [{ CredentialStage }, { MintStage }] = await Promise.all([import('./stage.js'), import('./mint-stage.js')]);
  let signer: SigV4Stage | undefined;
  let loading: Promise<SigV4Stage> | undefined;
  const loadSigner = (): Promise<SigV4Stage> =>
    (loading ??= import('./sigv4-stage.js').then(({ SigV4Stage }) => (signer = new SigV4Stage([], { sigv4, allowPlaintextInject, uses: minted, ...(log ? { log } : {}) }))));
  const minted = new MintStage(plan.secrets, {
    addSecret: (s) => credential.add(s),
    // The signer is loaded before the next request is signed (the slot below waits for it).
    addAws: (c: AwsCredential) => void loadSigner().then((s) => s.add(c)),
    note: (text) => credential.note(text),
  }, { mint: sigv4.mint, ...(log ? { log } : {}) });
  if (plan.aws.length > 0) for (const c of plan.aws) (await loadSigner()).add(c);
  const slot: Stage = {
    name: 'sigv4',
    async request(req: ProxyRequest): Promise<Refusal | undefined> {
      if (loading) await loading;
      return (await signer?.request(req)) ?? undefined;
    },
  };
  const credential = new CredentialStage(plan.secrets, { allowPlaintextInject, uses: minted });
  return { stages: [minted, slot, credential], credential };
}
