import { describe, expect, it } from 'vitest';
import { extractAwsCredentials } from '../../src/credentials/aws-files.js';

const CREDENTIALS = `# work and play
[default]
aws_access_key_id = AKIAIOSFODNN7EXAMPLE
aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY

[temp]
aws_access_key_id=ASIAIOSFODNN7EXAMPLE\r
aws_secret_access_key=tempSecretAccessKeytempSecretAccessKey00\r
aws_session_token =  IQoJb3JpZ2luX2VjEXAMPLE+/token==   \r
region = eu-west-1

[profile sso]
sso_start_url = https://example.awsapps.com/start
`;

describe('AWS credentials files', () => {
  it('finds each profile\'s key id, secret and token, and masks only them', () => {
    const x = extractAwsCredentials(CREDENTIALS)!;
    expect(x.profiles).toEqual([
      { profile: 'default', accessKeyId: 'AKIAIOSFODNN7EXAMPLE', secretAccessKey: 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY' },
      { profile: 'temp', accessKeyId: 'ASIAIOSFODNN7EXAMPLE', secretAccessKey: 'tempSecretAccessKeytempSecretAccessKey00', sessionToken: 'IQoJb3JpZ2luX2VjEXAMPLE+/token==' },
    ]);
    expect(x.values).toHaveLength(5);
    const masked = x.render((v) => `<${v.length}>`);
    expect(masked).toBe(CREDENTIALS
      .replace('AKIAIOSFODNN7EXAMPLE', '<20>').replace('wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY', '<40>')
      .replace('ASIAIOSFODNN7EXAMPLE', '<20>').replace('tempSecretAccessKeytempSecretAccessKey00', '<40>')
      .replace('IQoJb3JpZ2luX2VjEXAMPLE+/token==', '<32>'));
  });

  it('reads [profile x] sections of the config file, key: value, and the old aws_security_token', () => {
    const x = extractAwsCredentials('[profile a]\naws_access_key_id: AKIAAAAAAAAAAAAAAAAA\naws_secret_access_key: s\naws_security_token = t\n')!;
    expect(x.profiles).toEqual([{ profile: 'a', accessKeyId: 'AKIAAAAAAAAAAAAAAAAA', secretAccessKey: 's', sessionToken: 't' }]);
  });

  it('is null for a file without credentials (the ordinary masked-file rules apply)', () => {
    expect(extractAwsCredentials('[default]\nregion = us-east-1\n')).toBeNull();
    expect(extractAwsCredentials('aws_access_key_id = outside any section\n')).toBeNull();
    expect(extractAwsCredentials('token: abc\n')).toBeNull();
  });
});
