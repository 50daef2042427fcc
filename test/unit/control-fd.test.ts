import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { applyControl } from '../../src/control-fd.js';
import { loadSettingsReport } from '../../src/settings/index.js';

const base = realpathSync(mkdtempSync(join(tmpdir(), 'srt-unit-control-')));
afterAll(() => rmSync(base, { recursive: true, force: true }));
const home = join(base, 'home');
const cwd = join(base, 'cwd');
mkdirSync(join(home, '.srt'), { recursive: true });
mkdirSync(cwd);
const managedFile = join(base, 'managed-settings.json');
writeFileSync(managedFile, JSON.stringify({ network: { deniedDomains: ['evil.example'], allowedDomains: ['corp.example'] }, filesystem: { denyRead: ['/secret'] } }));
writeFileSync(join(home, '.srt', 'settings.json'), JSON.stringify({ network: { allowedDomains: ['user.example'], deniedDomains: ['user-denied.example'] } }));
const cliFile = join(base, 'cli.json');
writeFileSync(cliFile, JSON.stringify({ network: { allowedDomains: ['granted.example'] } }));

const report = (managed: object | null = null) => {
  if (managed) writeFileSync(managedFile, JSON.stringify(managed));
  return loadSettingsReport({ cwd, home, settingsFiles: [cliFile], flags: { allowDomain: ['flag.example'] }, managedPaths: [managedFile], approvals: { isApproved: () => false } });
};
const hosts = (list: Array<{ rule: { text: string } }>) => list.map((d) => d.rule.text);

describe('--control-fd lines', () => {
  it('replace everything below managed scope (files and flags) and keep every managed entry', () => {
    const r = report();
    expect(hosts(r.policy.network.allowedDomains)).toEqual(['corp.example', 'granted.example', 'flag.example', 'user.example']);
    const next = r.withControl({ label: '--control-fd 3 line 1', settings: { network: { allowedDomains: ['line.example'] } } });
    expect(hosts(next.network.allowedDomains)).toEqual(['corp.example', 'line.example']);
    expect(hosts(next.network.deniedDomains)).toEqual(['evil.example']);
    expect(next.filesystem.denyRead.map((d) => d.path)).toEqual(['/secret']);
  });

  it('cannot widen managed settings: allowManagedDomainsOnly still holds the line\'s domains back', () => {
    const r = report({ network: { allowedDomains: ['corp.example'], allowManagedDomainsOnly: true, deniedDomains: ['evil.example'] } });
    const next = r.withControl({ label: '--control-fd 3 line 1', settings: { network: { allowedDomains: ['evil.example', '*'], allowManagedDomainsOnly: false } } });
    expect(next.network.allowManagedDomainsOnly).toBe(true);
    expect(hosts(next.network.allowedDomains)).toEqual(['corp.example']);
    expect(hosts(next.network.deniedDomains)).toEqual(['evil.example']);
  });

  it('what cannot change mid-run keeps its start value and is named', () => {
    const r = report({ network: { deniedDomains: ['evil.example'] } });
    const next = r.withControl({ label: 'l', settings: { network: { allowedDomains: ['localhost:5432'], exposePorts: [3000] }, filesystem: { allowWrite: ['/x'] } } });
    const { policy, fixed } = applyControl(r.policy, next);
    expect(fixed).toEqual(['filesystem.allowWrite', 'network.exposePorts', 'forwarded ports (localhost:5432)']);
    expect(policy.filesystem).toBe(r.policy.filesystem);
    expect(policy.network.exposePorts).toEqual([]);
    expect(hosts(policy.network.allowedDomains)).toEqual(['localhost:5432']);
  });
});
