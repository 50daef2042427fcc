// The README stays a short page for users; docs/ holds the rest, each page with a current table of
// contents, every link in either leading to a file and heading that exist, and no reference to a
// document outside the repository.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import { settingsJsonSchema } from '../../src/settings/schema.js';
import { REPO } from '../e2e/helpers.js';

const pages = ['README.md', ...readdirSync(join(REPO, 'docs')).filter((n) => n.endsWith('.md')).map((n) => `docs/${n}`)];

describe('README and docs/', () => {
  it('the README is at most 300 lines', () => {
    expect(readFileSync(join(REPO, 'README.md'), 'utf8').split('\n').length).toBeLessThanOrEqual(300);
  });

  it('the README links every page of docs/', () => {
    const readme = readFileSync(join(REPO, 'README.md'), 'utf8');
    expect(pages.filter((p) => p !== 'README.md' && !readme.includes(`](${p})`))).toEqual([]);
  });

  it('have current tables of contents and no link that leads nowhere (scripts/docs.mjs --check)', async () => {
    const r = await execa('node', [join(REPO, 'scripts', 'docs.mjs'), '--check'], { reject: false });
    expect(r.stderr).toBe('');
    expect(r.exitCode).toBe(0);
  });

  it('docs/settings.md names every key of the settings schema', () => {
    type Node = { $ref?: string; properties?: Record<string, Node>; items?: Node };
    const root = settingsJsonSchema() as { $defs: Record<string, Node> };
    const deref = (n: Node): Node => (n.$ref ? root.$defs[n.$ref.replace('#/$defs/', '')]! : n);
    const keys = (n: Node, prefix: string): string[] => Object.entries(deref(n).properties ?? {}).flatMap(([k, v]) => {
      const key = `${prefix}${k}`;
      const items = deref(v).items && deref(deref(v).items!);
      return [key, ...keys(v, `${key}.`), ...(items?.properties ? keys(items, `${key}[].`) : [])];
    });
    const page = readFileSync(join(REPO, 'docs', 'settings.md'), 'utf8');
    const all = keys(root.$defs.settings!, '');
    expect(all.length).toBeGreaterThan(60);
    expect(all.filter((k) => !page.includes(`\`${k}\``))).toEqual([]);
  });

  it.each(pages)('%s cites no document outside the repository', (page) => {
    expect(readFileSync(join(REPO, page), 'utf8')).not.toMatch(/\bSPEC\b/);
  });
});
