// Which masked values make one AWS credential (SPEC §7): the AWS_* variables (the default names,
// then awsPairs) and each profile of a masked AWS credentials/config file. The proxy recognises
// a request by the key id's sentinel and re-signs it with the real pair.

import type { AwsPair, Policy } from '../policy.js';
import type { AwsProfile } from './aws-files.js';
import type { AwsCredential, CredentialPlan, PlanInput, Secret } from './plan.js';

export const DEFAULT_AWS: AwsPair = { accessKeyIdVar: 'AWS_ACCESS_KEY_ID', secretAccessKeyVar: 'AWS_SECRET_ACCESS_KEY', sessionTokenVar: 'AWS_SESSION_TOKEN', source: { scope: 'default' } };

/** A masked AWS credentials/config file's profiles, paired like the AWS_* variables. */
export interface AwsFile {
  path: string;
  profiles: AwsProfile[];
}

/** Group masked AWS variables into credentials (SPEC §7): the default names, then awsPairs. */
export function awsPairing(policy: Policy, plan: CredentialPlan, byReal: ReadonlyMap<string, Secret>, input: PlanInput): void {
  const entries = new Map(policy.credentials.envVars.map((e) => [e.name, e]));
  const wholeMask = (name: string) => {
    const e = entries.get(name);
    return e !== undefined && e.mode === 'mask' && e.extract === undefined && e.decode === undefined;
  };
  const secretOf = (name: string | undefined): Secret | undefined => {
    if (!name) return undefined;
    const change = plan.setEnv.find((c) => c.name === name);
    return change?.value !== undefined ? [...byReal.values()].find((s) => s.sentinel === change.value) : undefined;
  };
  const pairs: AwsPair[] = [...policy.credentials.awsPairs];
  for (const p of policy.credentials.awsPairs) {
    for (const name of [p.accessKeyIdVar, p.secretAccessKeyVar, p.sessionTokenVar]) {
      if (name !== undefined && !wholeMask(name)) {
        plan.errors.push(`credentials.awsPairs: ${name} must be a credentials.envVars entry with mode "mask" masking the whole value (no extract or decode)`);
      }
    }
  }
  const d = DEFAULT_AWS;
  if (!pairs.some((p) => p.accessKeyIdVar === d.accessKeyIdVar)) pairs.push(d);
  // An AWS secret key is only ever used to sign: whatever its pairing, its sentinel may go nowhere
  // (a header or body that carries it is stopped everywhere). So is any masked variable whose
  // name says it is one (MY_AWS_SECRET_ACCESS_KEY) without an awsPairs entry.
  const secretVars = new Set(pairs.map((p) => p.secretAccessKeyVar));
  for (const e of policy.credentials.envVars) if (/SECRET_ACCESS_KEY$/i.test(e.name)) secretVars.add(e.name);
  for (const s of plan.secrets) if (secretVars.has(s.label)) s.inject = false;
  for (const name of secretVars) {
    const secret = secretOf(name);
    if (secret) secret.inject = false;
  }
  for (const p of pairs) {
    const keyMasked = wholeMask(p.accessKeyIdVar);
    const secretMasked = wholeMask(p.secretAccessKeyVar);
    if (secretMasked && !keyMasked) {
      plan.warnings.push(`credentials: ${p.secretAccessKeyVar} is masked but ${p.accessKeyIdVar} is not: srt cannot re-sign AWS requests without masking the key id too, and an AWS secret key's sentinel may go nowhere (it is only ever used to sign)`);
    } else if (secretMasked && secretOf(p.secretAccessKeyVar) && !secretOf(p.accessKeyIdVar)) {
      plan.warnings.push(`credentials: ${p.secretAccessKeyVar} is masked but ${p.accessKeyIdVar} is not set: srt cannot re-sign AWS requests without the key id, and an AWS secret key's sentinel may go nowhere (it is only ever used to sign)`);
    }
    if (keyMasked && !secretMasked && input.env[p.secretAccessKeyVar] !== undefined) {
      plan.exposures.push(`credentials: ${p.accessKeyIdVar} is masked but ${p.secretAccessKeyVar} is not: the command sees the real secret key; mask it too`);
    }
    const accessKeyId = secretOf(p.accessKeyIdVar);
    const secretAccessKey = secretOf(p.secretAccessKeyVar);
    if (!accessKeyId || !secretAccessKey) continue;
    const cred: AwsCredential = { accessKeyId, secretAccessKey };
    const token = p.sessionTokenVar !== undefined && wholeMask(p.sessionTokenVar) ? secretOf(p.sessionTokenVar) : undefined;
    if (token) cred.sessionToken = token;
    plan.aws.push(cred);
  }
}

/** `~/.aws/credentials [dev] aws_secret_access_key`: which profile's which value, for reports. */
export function awsLabels(path: string, profiles: readonly AwsProfile[]): (real: string) => string {
  const fields = [['accessKeyId', 'aws_access_key_id'], ['secretAccessKey', 'aws_secret_access_key'], ['sessionToken', 'aws_session_token']] as const;
  return (real) => {
    for (const p of profiles) for (const [field, key] of fields) if (p[field] === real) return `${path} [${p.profile}] ${key}`;
    return path;
  };
}

/** Each profile of a masked AWS file with a key id and a secret is one credential. */
export function awsFilePairing(file: AwsFile, plan: CredentialPlan, byReal: ReadonlyMap<string, Secret>): void {
  for (const p of file.profiles) {
    const accessKeyId = p.accessKeyId === undefined ? undefined : byReal.get(p.accessKeyId);
    const secretAccessKey = p.secretAccessKey === undefined ? undefined : byReal.get(p.secretAccessKey);
    // Only ever used to sign, with or without a key id beside it.
    if (secretAccessKey) secretAccessKey.inject = false;
    if (!accessKeyId || !secretAccessKey) {
      plan.warnings.push(`credentials: ${file.path}: profile [${p.profile}] has no ${accessKeyId ? 'aws_secret_access_key' : 'aws_access_key_id'}, so srt cannot re-sign its requests (its values are masked)`);
      continue;
    }
    const token = p.sessionToken === undefined ? undefined : byReal.get(p.sessionToken);
    // The same key pair in the environment and the file is one credential.
    if (plan.aws.some((a) => a.accessKeyId === accessKeyId && a.secretAccessKey === secretAccessKey && a.sessionToken === token)) continue;
    plan.aws.push({ accessKeyId, secretAccessKey, ...(token ? { sessionToken: token } : {}) });
  }
}
