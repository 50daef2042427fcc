// `srt config` / `srt schema` and settings errors through the real built binary. The managed
// scope lives at the fixed /etc/srt, which a test cannot write: those runs happen inside
// `bwrap --dev-bind / /` with a replacement /etc made of symlinks to the real entries plus a
// temp srt/ directory (helpers.srtManaged).
import { chmodSync, chownSync, existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { srt, srtManaged, tempDir, writeTree } from './helpers.js';

interface Sourced {
  value: unknown;
  source: { scope: string; file?: string; flag?: string };
}

let tmp: ReturnType<typeof tempDir>;
beforeAll(() => {
  tmp = tempDir('srt-e2e-config-');
});
afterAll(() => tmp.cleanup());

/** srt with `managedDir` as /etc/srt (scratch files under this file's temp dir). */
const srtWithManaged = (managedDir: string, args: string[], opts: { home: string; cwd: string }) =>
  srtManaged(managedDir, args, { ...opts, scratch: tmp.path });

function fixture(name: string) {
  const root = join(tmp.path, name);
  const home = join(root, 'home');
  const repo = join(root, 'repo');
  const managed = join(root, 'managed');
  mkdirSync(join(repo, '.git'), { recursive: true });
  writeFileSync(join(repo, '.git', 'HEAD'), 'ref: refs/heads/main\n');
  mkdirSync(join(repo, 'src', 'deep'), { recursive: true });
  mkdirSync(home, { recursive: true });
  mkdirSync(managed, { recursive: true });
  return { root, home, repo, managed };
}

describe('srt config --json with all five scopes', () => {
  it('shows the winner and the source of each value', async () => {
    const f = fixture('five');
    writeTree(f.managed, {
      'managed-settings.json': JSON.stringify({ mandatoryDenySearchDepth: 5, network: { allowedDomains: ['managed.example'] } }),
      'managed-settings.d/10-extra.yaml': 'network:\n  deniedDomains: ["evil.example"]\n',
    });
    writeTree(f.home, {
      '.srt/settings.json': JSON.stringify({
        mandatoryDenySearchDepth: 1,
        enableWeakerNestedSandbox: true,
        allowPty: true,
        network: { allowedDomains: ['user.example'], strictAllowlist: false },
        filesystem: { allowWrite: ['cache'] },
      }),
    });
    writeTree(f.repo, {
      '.srt/settings.json': JSON.stringify({
        mandatoryDenySearchDepth: 4,
        network: { allowedDomains: ['project.example'], strictAllowlist: true, tlsTerminate: {} },
        filesystem: { allowWrite: ['build'] },
      }),
      '.srt/settings.local.yaml': 'mandatoryDenySearchDepth: 3\nallowPty: false\nnetwork:\n  allowLocalBinding: false\n',
      'cli.json': JSON.stringify({ mandatoryDenySearchDepth: 4, network: { allowLocalBinding: true } }),
    });
    const cwd = join(f.repo, 'src', 'deep');
    // The repository's files are approved (from a subdirectory: srt trust finds them at the root).
    const trusted = await srt(['trust'], { home: f.home, cwd });
    expect(trusted.exitCode).toBe(0);
    expect(trusted.stdout).toContain(`approved ${join(f.repo, '.srt', 'settings.json')}`);
    expect(trusted.stdout).toContain(`approved ${join(f.repo, '.srt', 'settings.local.yaml')}`);
    const r = await srtWithManaged(f.managed, ['--settings', '../../cli.json', '--allow-domain', 'flag.example', 'config', '--json'], {
      home: f.home,
      cwd,
    });
    expect(r.stderr).toContain(`srt: warning: ${join(f.repo, '.srt', 'settings.json')}: network.tlsTerminate: ignored — project settings`);
    expect(r.exitCode).toBe(0);
    const out = JSON.parse(String(r.stdout));
    const managedFile = '/etc/srt/managed-settings.json';
    const userFile = join(f.home, '.srt', 'settings.json');
    const projectFile = join(f.repo, '.srt', 'settings.json');
    const localFile = join(f.repo, '.srt', 'settings.local.yaml');
    const cliFile = join(f.repo, 'cli.json');

    expect(out.version).toBe(1);
    expect(out.cwd).toBe(cwd);
    expect(out.root).toBe(f.repo);
    expect(out.files).toEqual([
      { scope: 'managed', path: managedFile },
      { scope: 'managed', path: '/etc/srt/managed-settings.d/10-extra.yaml' },
      { scope: 'cli', path: cliFile },
      { scope: 'local', path: localFile },
      { scope: 'project', path: projectFile },
      { scope: 'user', path: userFile },
    ]);
    const s = out.settings;
    const winner = (v: Sourced) => [v.value, v.source.scope, v.source.file ?? v.source.flag];
    expect(winner(s.mandatoryDenySearchDepth)).toEqual([5, 'managed', managedFile]);
    expect(winner(s.network.allowLocalBinding)).toEqual([true, 'cli', cliFile]);
    expect(winner(s.allowPty)).toEqual([false, 'local', localFile]);
    expect(winner(s.network.strictAllowlist)).toEqual([true, 'project', projectFile]);
    expect(winner(s.enableWeakerNestedSandbox)).toEqual([true, 'user', userFile]);
    expect(winner(s.allowAppleEvents)).toEqual([false, 'default', undefined]);
    expect(s.network.tlsTerminate).toBeNull();
    expect(s.network.allowedDomains.map(winner)).toEqual([
      ['managed.example', 'managed', managedFile],
      ['flag.example', 'cli', '--allow-domain'],
      ['project.example', 'project', projectFile],
      ['user.example', 'user', userFile],
    ]);
    expect(s.network.deniedDomains.map(winner)).toEqual([['evil.example', 'managed', '/etc/srt/managed-settings.d/10-extra.yaml']]);
    expect(s.filesystem.allowWrite.map(winner)).toEqual([
      [join(f.repo, 'build'), 'project', projectFile],
      [join(f.home, '.srt', 'cache'), 'user', userFile],
    ]);
    expect(out.ignored).toEqual([
      {
        key: 'network.tlsTerminate',
        source: { scope: 'project', file: projectFile },
        reason: 'project settings (which come with the repository) may not configure TLS termination',
      },
    ]);

    // The text form names the same sources, project files relative to the repository.
    const text = await srtWithManaged(f.managed, ['--settings', '../../cli.json', 'config'], { home: f.home, cwd });
    expect(text.exitCode).toBe(0);
    expect(text.stdout).toMatch(/mandatoryDenySearchDepth\s+5\s+managed \/etc\/srt\/managed-settings\.json/);
    expect(text.stdout).toMatch(/allowPty\s+false\s+local \.srt\/settings\.local\.yaml/);
    expect(text.stdout).toMatch(/enableWeakerNestedSandbox\s+true\s+user ~\/\.srt\/settings\.json/);
    expect(text.stdout).toMatch(/network\.tlsTerminate\s+project \.srt\/settings\.json: project settings .* may not configure TLS termination/);
  });

  it('a broken managed file stops srt with exit 125', async () => {
    const f = fixture('bad-managed');
    writeTree(f.managed, { 'managed-settings.json': '{"network": {"allowedDomains": ["a.com",]}}' });
    const r = await srtWithManaged(f.managed, ['config'], { home: f.home, cwd: f.repo });
    expect(r.exitCode).toBe(125);
    expect(r.stderr).toBe('srt: /etc/srt/managed-settings.json:1:41: invalid JSON: trailing comma before "]"');
  });
});

describe('reference-tool settings', () => {
  it('a ~/.srt-settings.json written for @anthropic-ai/sandbox-runtime loads unchanged', async () => {
    const f = fixture('reference');
    writeTree(f.home, {
      '.srt-settings.json': JSON.stringify({
        network: {
          allowedDomains: ['github.com', '*.npmjs.org'],
          deniedDomains: ['evil.example'],
          allowUnixSockets: ['/var/run/docker.sock'],
          allowLocalBinding: false,
          mitmProxy: { socketPath: '/tmp/mitm.sock', domains: ['api.example.com'] },
        },
        filesystem: { denyRead: ['~/.ssh'], allowWrite: ['.', '/tmp'], denyWrite: ['.env'], allowGitConfig: false },
        ignoreViolations: { '*': ['/usr/bin'] },
        ripgrep: { command: 'rg' },
        mandatoryDenySearchDepth: 3,
        enableWeakerNestedSandbox: false,
        allowPty: false,
      }),
    });
    const r = await srt(['config', '--json'], { home: f.home, cwd: f.repo });
    expect(r.exitCode).toBe(0);
    const file = join(f.home, '.srt-settings.json');
    // One line for the file, not one warning per key on every run; srt config lists each.
    expect(String(r.stderr)).toBe(`srt: ${file}: 5 reference-tool keys handled differently (srt config lists them)`);
    const json = JSON.parse(String(r.stdout));
    expect(json.ignored.map((i: { key: string; reason: string }) => `${i.key}: ${i.reason}`)).toEqual([
      'ignoreViolations: a reference-tool key srt does not implement (srt reports every violation)',
      'ripgrep: a reference-tool key srt does not implement (srt runs its own tools (rg) only from the system directories, never from a configured path)',
      'network.mitmProxy: a reference-tool key srt does not implement (use network.tlsTerminate instead)',
      'filesystem.allowGitConfig: a reference-tool key srt does not implement (.git/config stays write-protected)',
      'network.allowUnixSockets: only has an effect on macOS (the reference tool ignores it on Linux too)',
    ]);
    const s = json.settings;
    expect(s.network.allowedDomains.map((d: Sourced) => d.value)).toEqual(['github.com', '*.npmjs.org']);
    expect(s.network.allowUnixSockets).toEqual([]); // macOS only, like the reference tool (listed as ignored)
    // ~/.srt-settings.json resolves relative paths against the current directory.
    expect(s.filesystem.allowWrite.map((d: Sourced) => d.value)).toEqual([f.repo, '/tmp']);
    expect(s.filesystem.denyWrite.map((d: Sourced) => d.value)).toEqual([join(f.repo, '.env')]);
    expect(s.filesystem.denyRead.map((d: Sourced) => d.value)).toEqual([join(f.home, '.ssh')]);
  });
});

describe('bad settings', () => {
  it('every invalid entry of a file is reported, in file order, each with FILE:LINE; srt doctor\'s fix names those lines', async () => {
    const f = fixture('bad-entries');
    const file = join(f.home, '.srt', 'settings.json');
    // Entries the schema refuses, in an order zod does not report them in.
    const schema = [
      '{',
      '  "network": {',
      '    "allowedDomain": ["x.example"],',
      '    "allowedDomains": [5]',
      '  },',
      '  "filesystem": {',
      '    "allowWrite": "nope",',
      '    "bogus": 1',
      '  }',
      '}',
    ].join('\n');
    // Entries only their meaning refuses: every one, not only the first.
    const meaning = [
      '{',
      '  "network": {',
      '    "allowedDomains": ["ok.example",',
      '      "a..b"],',
      '    "exposePorts": ["0.0.0.0:9000:9000"]',
      '  },',
      '  "filesystem": {',
      '    "allowWrite": ["~bob/x"],',
      '    "denyRead": ["[z-a]"]',
      '  }',
      '}',
    ].join('\n');
    for (const [text, expected, lines] of [
      [schema, [
        `${file}:3: network.allowedDomain: unknown key (did you mean allowedDomains?)`,
        `${file}:4: network.allowedDomains[0]: expected a string, got a number`,
        `${file}:7: filesystem.allowWrite: expected a list, got a string`,
        `${file}:8: filesystem.bogus: unknown key`,
      ], 'lines 3, 4, 7 and 8'],
      [meaning, [
        `${file}:4: network.allowedDomains[1]: invalid domain entry "a..b": invalid host "a..b"`,
        `${file}:5: network.exposePorts[0]: "0.0.0.0:9000:9000": only the host's loopback can be exposed (127.0.0.1 or [::1]), so the sandbox is never reachable from the network`,
        `${file}:8: filesystem.allowWrite[0]: "~bob/x": ~user paths are not supported; write the absolute path`,
        `${file}:9: filesystem.denyRead[0]: "[z-a]": invalid glob (Range out of order in character class: z-a)`,
      ], 'lines 4, 5, 8 and 9'],
    ] as const) {
      writeTree(f.home, { '.srt/settings.json': text });
      for (const args of [['config'], ['--', 'true']]) {
        const r = await srt(args, { home: f.home, cwd: f.repo });
        expect(r.exitCode).toBe(125);
        expect(r.stderr.split('\n')).toEqual(expected.map((l) => `srt: ${l}`));
      }
      const doctor = await srt(['doctor'], { home: f.home, cwd: f.repo, timeout: 240_000 });
      expect(doctor.stdout).toContain(`      fix: edit ${file} ${lines} (srt config lists each)`);
      expect(doctor.stdout).toContain(`error settings files: 4 problems in 1 place(s)`);
    }
  });

  it('exit 125 with the message, and the command is not run', async () => {
    const f = fixture('bad-project');
    const file = join(f.repo, '.srt', 'settings.json');
    writeTree(f.repo, { '.srt/settings.json': JSON.stringify({ network: { allowedDomain: ['github.com'] } }) });
    const marker = join(f.root, 'ran');
    for (const args of [['--', 'touch', marker], [`touch ${marker}`], ['-c', `touch ${marker}`], ['config']]) {
      const r = await srt(args, { home: f.home, cwd: f.repo });
      expect(r.exitCode).toBe(125);
      expect(r.stderr).toBe(`srt: ${file}:1: network.allowedDomain: unknown key (did you mean allowedDomains?)`);
      expect(r.stdout).toBe('');
      expect(existsSync(marker)).toBe(false);
    }
  });

  it('a malformed YAML --settings file reports line and column', async () => {
    const f = fixture('bad-yaml');
    writeTree(f.repo, { 'x.yaml': 'network:\n  allowedDomains: [a.com\n' });
    const r = await srt(['--settings', 'x.yaml', '--', 'true'], { home: f.home, cwd: f.repo });
    expect(r.exitCode).toBe(125);
    expect(r.stderr).toBe(
      `srt: ${join(f.repo, 'x.yaml')}:3:1: invalid YAML: Flow sequence in block collection must be sufficiently indented and end with a ]`,
    );
  });

  it('an empty settings file is an error, not skipped', async () => {
    const f = fixture('empty');
    writeTree(f.home, { '.srt/settings.json': '' });
    const r = await srt(['--', 'true'], { home: f.home, cwd: f.repo });
    expect(r.exitCode).toBe(125);
    expect(r.stderr).toBe(`srt: ${join(f.home, '.srt', 'settings.json')}: file is empty; write {} for no settings, or remove the file`);
  });
});

describe('srt schema', () => {
  it('prints valid JSON Schema', async () => {
    const f = fixture('schema');
    const r = await srt(['schema'], { home: f.home, cwd: f.repo });
    expect(r.exitCode).toBe(0);
    const doc = JSON.parse(String(r.stdout));
    expect(doc.$schema).toBe('https://json-schema.org/draft/2020-12/schema');
    const schema = doc.$defs.settings;
    expect(schema.additionalProperties).toBe(false);
    expect(schema.properties.network.properties.allowedDomains.type).toBe('array');
    expect(schema.properties.mandatoryDenySearchDepth).toMatchObject({ type: 'integer', minimum: 1, maximum: 10 });
  });
});

describe('settings validated once per content (~/.srt/cache/valid)', () => {
  // NODE_DEBUG=module lists every CommonJS module node loads: zod is one, loaded only to validate.
  const zodLoaded = (stderr: string) => /zod[\\/]/.test(stderr);

  it('a file validated before is not validated again; any change, or an invalid file, is', async () => {
    const f = fixture('valid-cache');
    const file = join(f.root, 'extra.json');
    writeFileSync(file, JSON.stringify({ filesystem: { denyRead: ['~/secret'] } }));
    const run = () => srt(['--settings', file, '--', 'true'], { home: f.home, cwd: f.repo, env: { NODE_DEBUG: 'module' } });
    const first = await run();
    expect(first.exitCode).toBe(0);
    expect(zodLoaded(first.stderr)).toBe(true);
    const second = await run();
    expect(second.exitCode).toBe(0);
    expect(zodLoaded(second.stderr)).toBe(false);

    // One byte more is another file: validated (and here refused) every time, never remembered.
    writeFileSync(file, JSON.stringify({ filesystem: { denyRead: '~/secret' } }));
    for (let i = 0; i < 2; i++) {
      const bad = await run();
      expect(bad.exitCode).toBe(125);
      expect(bad.stderr).toMatch(/filesystem\.denyRead: expected a list/);
    }
  });

  it('a record in a directory others may write (or another user\'s) does not count: the file is validated again', async () => {
    const f = fixture('valid-cache-trust');
    const file = join(f.root, 'extra.json');
    writeFileSync(file, JSON.stringify({ filesystem: { denyRead: ['~/secret'] } }));
    const run = () => srt(['--settings', file, '--', 'true'], { home: f.home, cwd: f.repo, env: { NODE_DEBUG: 'module' } });
    expect((await run()).exitCode).toBe(0);
    const valid = join(f.home, '.srt', 'cache', 'valid');
    chmodSync(valid, 0o777);
    const open = await run();
    expect(open.exitCode).toBe(0);
    expect(zodLoaded(open.stderr)).toBe(true);
    chmodSync(valid, 0o700);
    expect(zodLoaded((await run()).stderr)).toBe(false);
    if (process.getuid?.() === 0) {
      for (const e of readdirSync(valid)) chownSync(join(valid, e), 65534, 65534);
      expect(zodLoaded((await run()).stderr)).toBe(true);
    }
  });

  it('the sandboxed command cannot record a file as valid', async () => {
    const f = fixture('valid-cache-forge');
    const r = await srt(['--', 'sh', '-c', 'mkdir -p ~/.srt/cache/valid && touch ~/.srt/cache/valid/forged; echo rc=$?'], { home: f.home, cwd: f.home });
    expect(r.stdout).toMatch(/rc=[1-9]/);
    expect(existsSync(join(f.home, '.srt', 'cache', 'valid', 'forged'))).toBe(false);
  });
});
