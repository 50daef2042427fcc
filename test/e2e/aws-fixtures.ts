// Credentials and client environments shared by the AWS tests. The "real" credentials exist only
// here and in the test server; a sandboxed client holds nothing but srt's sentinels for them.

import type { AwsCreds } from './aws-verifier.js';

/** Long-term credentials (an IAM user's key pair). */
export const REAL: AwsCreds = { accessKeyId: 'AKIAREALKEYID2345ABC', secretAccessKey: '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' };
/** Temporary credentials (key id, secret and session token, as STS hands them out). */
export const REAL_TEMPORARY: AwsCreds = {
  accessKeyId: 'ASIAREALTEMPKEY23456',
  secretAccessKey: 'TempSecretAccessKey/tempSECRETkey+987654',
  sessionToken: 'IQoJb3JpZ2luX2VjEPTREALSESSIONTOKENdGVzdHRva2VuLXJlYWwtc2Vzc2lvbi10b2tlbg+/realTOKENvalue0123456789abcdefABCDEF==',
};

/** Debian's AWS CLI (scripts/setup.sh installs it); the name alone could find another one first. */
export const AWS_CLI = '/usr/bin/aws';
/** Debian's python3, whose boto3 (python3-boto3) scripts/setup.sh installs: CI has no PyPI. */
export const PYTHON = '/usr/bin/python3';

/** The environment of an AWS client: these credentials, us-east-1, no config of the host's. */
export function awsEnv(creds: AwsCreds, home: string): Record<string, string> {
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: home,
    AWS_ACCESS_KEY_ID: creds.accessKeyId,
    AWS_SECRET_ACCESS_KEY: creds.secretAccessKey,
    AWS_DEFAULT_REGION: 'us-east-1',
    AWS_REGION: 'us-east-1',
    AWS_CONFIG_FILE: '/dev/null',
    AWS_SHARED_CREDENTIALS_FILE: '/dev/null',
    AWS_EC2_METADATA_DISABLED: 'true',
    AWS_PAGER: '',
    // The SDK warns that it will need Node 22 from 2027 on; CI runs Node 20.
    AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
  };
  if (creds.sessionToken) env.AWS_SESSION_TOKEN = creds.sessionToken;
  return env;
}
