// AWS's shared credentials and config files (`~/.aws/credentials`, `~/.aws/config`): INI files
// whose profiles hold `aws_access_key_id`, `aws_secret_access_key` and `aws_session_token`. A
// masked one is masked value by value — the rest of the file stays as it is, so the AWS CLI and
// SDKs still read their profiles inside — and each profile's values pair into one credential
// the proxy re-signs with (SPEC §7, AWS bullet), exactly as the AWS_* variables do.

import { replaceSpans } from './extract.js';
/** One profile's credential values (undefined: the profile does not set it). */
export interface AwsProfile {
  /** `default`, or the name after `[` (`[profile x]` in the config file is `x`). */
  profile: string;
  accessKeyId?: string;
  secretAccessKey?: string;
  sessionToken?: string;
}

export interface AwsFileExtraction {
  /** Distinct values to mask, in order of appearance. */
  values: string[];
  profiles: AwsProfile[];
  /** The file with every credential value replaced by `replacement(value)`. */
  render(replacement: (value: string) => string): string;
}

const KEYS: Record<string, keyof Omit<AwsProfile, 'profile'>> = {
  aws_access_key_id: 'accessKeyId',
  aws_secret_access_key: 'secretAccessKey',
  aws_session_token: 'sessionToken',
  // The name older tools wrote; botocore still reads it.
  aws_security_token: 'sessionToken',
};

/**
 * The credential values of an AWS credentials/config file, or null when it has none (then it is
 * not such a file, and the usual rules for masked files apply). Parsed as botocore reads it:
 * `[section]` lines, `key = value` (or `key: value`) with the value trimmed, `#`/`;` comments.
 */
export function extractAwsCredentials(text: string): AwsFileExtraction | null {
  const spans: Array<{ start: number; end: number; value: string }> = [];
  const profiles = new Map<string, AwsProfile>();
  let profile: AwsProfile | undefined;
  let at = 0;
  for (const line of text.split('\n')) {
    const start = at;
    at += line.length + 1;
    const section = /^\s*\[\s*(?:profile\s+)?([^\]]*?)\s*\]\s*$/.exec(line.replace(/\r$/, ''));
    if (section) {
      const name = section[1]!;
      profile = profiles.get(name) ?? { profile: name };
      profiles.set(name, profile);
      continue;
    }
    const kv = /^(\s*)([A-Za-z_]+)(\s*[=:]\s*)(.*?)\s*$/.exec(line.replace(/\r$/, ''));
    if (!kv || !profile) continue;
    const field = KEYS[kv[2]!.toLowerCase()];
    const value = kv[4]!;
    if (!field || value === '') continue;
    const vStart = start + kv[1]!.length + kv[2]!.length + kv[3]!.length;
    spans.push({ start: vStart, end: vStart + value.length, value });
    profile[field] = value;
  }
  if (spans.length === 0) return null;
  return {
    values: [...new Set(spans.map((s) => s.value))],
    profiles: [...profiles.values()].filter((p) => p.accessKeyId !== undefined || p.secretAccessKey !== undefined || p.sessionToken !== undefined),
    render: (replacement) => replaceSpans(text, spans, replacement),
  };
}
