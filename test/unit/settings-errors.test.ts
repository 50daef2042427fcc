import { chmodSync, mkdirSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SettingsError } from '../../src/settings/index.js';
import { load, loadError, world } from './settings-fixtures.js';

const USER = 'home/.srt/settings.json';
const USER_YAML = 'home/.srt/settings.yaml';

// [what, file, content, expected message with F = the file's absolute path; F:1 where the entry is]
const CASES: Array<[string, string, string, string]> = [
  ['JSON trailing comma with line:col', USER, '{\n  "network": {\n    "allowedDomains": ["a.com"],\n  }\n}', 'F:4:3: invalid JSON: trailing comma before "}"'],
  ['JSON bad literal', USER, '{"network": tru}', 'F:1:13: invalid JSON: unexpected "t"'],
  ['JSON duplicate key', USER, '{"allowPty": true,\n "allowPty": false}', 'F:2:2: invalid JSON: duplicate key "allowPty"'],
  ['JSON unterminated', USER, '{"network": {', 'F:1:14: invalid JSON: expected a double-quoted property name, found end of file'],
  ['YAML unclosed flow sequence', USER_YAML, 'network:\n  allowedDomains: [a.com\n', 'F:3:1: invalid YAML: Flow sequence in block collection must be sufficiently indented and end with a ]'],
  ['YAML tab indentation', USER_YAML, 'network:\n\tallowedDomains: []\n', 'F:2:1: invalid YAML: Tabs are not allowed as indentation'],
  ['YAML duplicate key', USER_YAML, 'allowPty: true\nallowPty: false\n', 'F:2:1: invalid YAML: Map keys must be unique'],
  ['empty file', USER, '', 'F: file is empty; write {} for no settings, or remove the file'],
  ['whitespace-only file', USER, '  \n', 'F: file is empty; write {} for no settings, or remove the file'],
  ['YAML with only a comment', USER_YAML, '# nothing\n', 'F: file has no settings; write {} for no settings, or remove the file'],
  ['non-object root (array)', USER, '[1, 2]', 'F: the settings document must be an object, got an array'],
  ['non-object root (string)', USER, '"x"', 'F: the settings document must be an object, got a string'],
  ['non-object sandbox wrapper', USER, '{"sandbox": []}', 'F: sandbox: expected an object, got an array'],
  ['unknown key with suggestion', USER, '{"network": {"allowedDomain": ["a.com"]}}', 'F:1: network.allowedDomain: unknown key (did you mean allowedDomains?)'],
  ['unknown top-level key with suggestion', USER, '{"netwrk": {}}', 'F:1: netwrk: unknown key (did you mean network?)'],
  ['unknown key without a close match', USER, '{"zzzzzz": {}}', 'F:1: zzzzzz: unknown key'],
  ['a NUL in a path', USER, '{"filesystem": {"denyRead": ["secret\\u0000.txt"]}}', 'F:1: filesystem.denyRead[0]: a path cannot contain a NUL character'],
  ['a key in the wrong section (top level)', USER, '{"allowedDomains": ["a.com"]}', 'F:1: allowedDomains: unknown key here; allowedDomains belongs under network (network.allowedDomains)'],
  ['a key in the wrong section (nested)', USER, '{"filesystem": {"tlsTerminate": {}}}', 'F:1: filesystem.tlsTerminate: unknown key here; tlsTerminate belongs under network (network.tlsTerminate)'],
  ['a top-level key inside a section', USER, '{"network": {"allowPty": true}}', 'F:1: network.allowPty: unknown key here; allowPty belongs at the top level'],
  ['JSON with a comment', USER, '{\n  // why\n  "allowPty": true\n}', 'F:2:3: invalid JSON: expected a double-quoted property name, found "/" (JSON allows no comments; name the file .yaml to write comments)'],
  ['YAML in a .json file', USER, 'network:\n  allowedDomains: [a.com]\n', 'F:1:1: invalid JSON: unexpected "n" (this looks like YAML; name the file .yaml)'],
  ['unknown key in a path object', USER, '{"filesystem": {"allowWrite": [{"path": "x", "literl": true}]}}', 'F:1: filesystem.allowWrite[0].literl: unknown key (did you mean literal?)'],
  ['list given as string', USER, '{"network": {"allowedDomains": "a.com"}}', 'F:1: network.allowedDomains: expected a list, got a string'],
  ['wrong element type', USER, '{"network": {"allowedDomains": [1]}}', 'F:1: network.allowedDomains[0]: expected a string, got a number'],
  ['wrong boolean type', USER, '{"network": {"strictAllowlist": "yes"}}', 'F:1: network.strictAllowlist: expected a boolean, got a string'],
  ['port too big', USER, '{"network": {"httpProxyPort": 70000}}', 'F:1: network.httpProxyPort: must be at most 65535, got 70000'],
  ['port zero', USER, '{"network": {"httpProxyPort": 0}}', 'F:1: network.httpProxyPort: must be at least 1, got 0'],
  ['fractional port', USER, '{"network": {"socksProxyPort": 80.5}}', 'F:1: network.socksProxyPort: expected an integer, got 80.5'],
  ['depth too big', USER, '{"mandatoryDenySearchDepth": 11}', 'F:1: mandatoryDenySearchDepth: must be at most 10, got 11'],
  ['depth zero', USER, '{"mandatoryDenySearchDepth": 0}', 'F:1: mandatoryDenySearchDepth: must be at least 1, got 0'],
  ['bad regex in extract', USER, '{"credentials": {"files": [{"path": "x", "mode": "mask", "extract": "a(b"}]}}', 'F:1: credentials.files[0].extract: not a valid regular expression: /a(b/: Unterminated group'],
  ['extract without a group', USER, '{"credentials": {"files": [{"path": "x", "mode": "mask", "extract": "token: \\\\S+"}]}}', 'F:1: credentials.files[0].extract: needs at least one capture group; group 1 is the value to mask'],
  ['bad credential mode', USER, '{"credentials": {"envVars": [{"name": "X", "mode": "hide"}]}}', 'F:1: credentials.envVars[0].mode: expected "mask" or "deny", got "hide"'],
  ['bad env var name', USER, '{"credentials": {"envVars": [{"name": "1X", "mode": "deny"}]}}', 'F:1: credentials.envVars[0].name: must be a variable name (letters, digits, underscore; not starting with a digit)'],
  ['env decode with extract', USER, '{"credentials": {"envVars": [{"name": "X", "mode": "mask", "decode": "jwt", "extract": "(a)"}]}}', 'F:1: credentials.envVars[0].decode: cannot be combined with extract for an environment variable'],
  ['maskClaims without decode', USER, '{"credentials": {"envVars": [{"name": "X", "mode": "mask", "maskClaims": ["sub"]}]}}', 'F:1: credentials.envVars[0].maskClaims: requires decode: "jwt"'],
  ['bad CIDR prefix', USER, '{"network": {"deniedResolvedAddresses": ["10.0.0.0/33"]}}', 'F:1: network.deniedResolvedAddresses[0]: "10.0.0.0/33" is not an IP address or CIDR (e.g. 10.0.0.0/8, fd00::/8)'],
  ['bad CIDR address', USER, '{"network": {"deniedResolvedAddresses": ["10.0.0/8"]}}', 'F:1: network.deniedResolvedAddresses[0]: "10.0.0/8" is not an IP address or CIDR (e.g. 10.0.0.0/8, fd00::/8)'],
  ['bad domain entry (URL)', USER, '{"network": {"allowedDomains": ["a.com", "b.com", "http://c.com/x"]}}', 'F:1: network.allowedDomains[2]: invalid domain entry "http://c.com/x": a domain has no scheme, spaces, "@", path or query; write "c.com"'],
  ['bad domain port', USER, '{"network": {"deniedDomains": ["a.com:99999"]}}', 'F:1: network.deniedDomains[0]: invalid domain entry "a.com:99999": invalid port "99999" (1-65535, no leading zero)'],
  ['bad deniedDomainReasons key', USER, '{"network": {"deniedDomainReasons": {"bad domain": "x"}}}', 'F:1: network.deniedDomainReasons["bad domain"]: invalid domain entry "bad domain": a domain has no scheme, spaces, "@", path or query'],
  ['bad tlsTerminate.excludeDomains', USER, '{"network": {"tlsTerminate": {"excludeDomains": ["a b"]}}}', 'F:1: network.tlsTerminate.excludeDomains[0]: invalid domain entry "a b": a domain has no scheme, spaces, "@", path or query'],
  ['CA cert without key', USER, '{"network": {"tlsTerminate": {"caCertPath": "a.pem"}}}', 'F: network.tlsTerminate.caKeyPath: caCertPath and caKeyPath must be given together (or neither, for an ephemeral CA)'],
  ['path of wrong type', USER, '{"filesystem": {"allowWrite": [5]}}', 'F:1: filesystem.allowWrite[0]: expected a path string or {"path": ..., "literal": true}, got a number'],
  ['empty path', USER, '{"filesystem": {"allowWrite": [""]}}', 'F:1: filesystem.allowWrite[0]: must not be empty'],
  ['~user path', USER, '{"filesystem": {"denyRead": ["~bob/x"]}}', 'F:1: filesystem.denyRead[0]: "~bob/x": ~user paths are not supported; write the absolute path'],
  ['bad sigv4 value', USER, '{"credentials": {"sigv4": {"presigned": "allow"}}}', 'F:1: credentials.sigv4.presigned: expected "deny" or "passthrough", got "allow"'],
  ['empty injectHosts', USER, '{"credentials": {"envVars": [{"name": "X", "mode": "mask", "injectHosts": []}]}}', 'F:1: credentials.envVars[0].injectHosts: must not be empty'],
];

describe('malformed settings', () => {
  it.each(CASES)('%s', (_what, rel, content, expected) => {
    const w = world();
    const file = w.write(rel, content);
    expect(loadError(w)).toBe(expected.replace('F', file));
  });

  it('reports every problem of a file, one line each, in file order', () => {
    const w = world();
    const file = w.write(USER, '{"network": {"strictAllowlist": 1},\n "allowPty": "no"}');
    let err: unknown;
    try {
      load(w);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(SettingsError);
    expect((err as SettingsError).lines).toEqual([
      `${file}:1: network.strictAllowlist: expected a boolean, got a number`,
      `${file}:2: allowPty: expected a boolean, got a string`,
    ]);
  });

  it('both .json and .yaml at one location', () => {
    const w = world();
    const json = w.write('repo/.srt/settings.json', '{}');
    const yaml = w.write('repo/.srt/settings.yaml', '{}');
    expect(loadError(w)).toBe(`${json} and ${yaml}: both exist; keep one of them (they would be the same settings file)`);
  });

  it('both .yaml and .yml in the managed drop-in directory', () => {
    const w = world();
    const a = w.write('etc/srt/managed-settings.d/10-x.yaml', '{}');
    const b = w.write('etc/srt/managed-settings.d/10-x.yml', '{}');
    expect(loadError(w)).toBe(`${a} and ${b}: both exist; keep one of them`);
  });

  it('a directory where a file is expected', () => {
    const w = world();
    mkdirSync(join(w.home, '.srt', 'settings.json'), { recursive: true });
    expect(loadError(w)).toBe(`${join(w.home, '.srt', 'settings.json')}: cannot read: is a directory, expected a settings file`);
  });

  it('a dangling symlink is an error, not an absent file', () => {
    const w = world();
    mkdirSync(join(w.repo, '.srt'));
    symlinkSync(join(w.dir, 'nowhere.json'), join(w.repo, '.srt', 'settings.json'));
    expect(loadError(w)).toBe(`${join(w.repo, '.srt', 'settings.json')}: cannot read: no such file (a dangling symlink?)`);
  });

  it.skipIf(process.getuid?.() === 0)('an unreadable file (root reads anything, so skipped as root)', () => {
    const w = world();
    const file = w.write(USER, '{}');
    chmodSync(file, 0);
    expect(loadError(w)).toBe(`${file}: cannot read: permission denied`);
  });

  it('a --settings file that does not exist', () => {
    const w = world();
    expect(loadError(w, { settingsFiles: ['nope.json'] })).toBe(`${join(w.repo, 'nope.json')}: no such settings file (given with --settings)`);
  });

  it('a bad --allow-domain flag names the flag', () => {
    const w = world();
    expect(loadError(w, { flags: { allowDomain: ['a.com', 'bad domain'] } })).toBe(
      '--allow-domain: invalid domain entry "bad domain": a domain has no scheme, spaces, "@", path or query',
    );
  });

  it('an invalid entry is an error even in a scope whose entries would be ignored', () => {
    const w = world();
    w.write('etc/srt/managed-settings.json', { network: { allowManagedDomainsOnly: true } });
    const file = w.write('repo/.srt/settings.json', { network: { allowedDomains: ['x y'] } });
    expect(loadError(w)).toBe(`${file}:4: network.allowedDomains[0]: invalid domain entry "x y": a domain has no scheme, spaces, "@", path or query`);
  });
});
