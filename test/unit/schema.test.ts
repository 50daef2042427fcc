// `srt schema` checked by an independent JSON Schema validator (ajv, draft 2020-12): it describes
// every key, accepts the `{ "sandbox": … }` wrapper, accepts every settings example the README,
// docs/ and examples/ show (which srt itself loads too), and rejects malformed documents as srt does.
import { Ajv2020 } from 'ajv/dist/2020.js';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import YAML from 'yaml';
import { describe, expect, it } from 'vitest';
import { settingsJsonSchema, validateSettings } from '../../src/settings/schema.js';

const REPO = join(import.meta.dirname, '..', '..');
const schema = settingsJsonSchema() as Record<string, unknown>;
const validate = new Ajv2020({ strict: true, allErrors: true }).compile(schema);

/** Every fenced ```json / ```yaml block of the README and docs/ (they use those for settings only). */
function docExamples(): Array<[string, unknown]> {
  const files = ['README.md', ...readdirSync(join(REPO, 'docs')).filter((n) => n.endsWith('.md')).sort().map((n) => `docs/${n}`)];
  return files.flatMap((file) => {
    const text = readFileSync(join(REPO, file), 'utf8');
    return [...text.matchAll(/^```(json|yaml)\n([\s\S]*?)^```$/gm)].map((m): [string, unknown] => {
      const line = text.slice(0, m.index).split('\n').length;
      return [`${file}:${line}`, m[1] === 'json' ? JSON.parse(m[2]!) : YAML.parse(m[2]!)];
    });
  });
}

function exampleFiles(dir = join(REPO, 'examples')): Array<[string, unknown]> {
  if (!existsSync(dir)) return [];
  return readdirSync(dir).sort().flatMap((name): Array<[string, unknown]> => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return exampleFiles(path);
    if (name.endsWith('.json')) return [[path, JSON.parse(readFileSync(path, 'utf8'))]];
    if (/\.ya?ml$/.test(name)) return [[path, YAML.parse(readFileSync(path, 'utf8'))]];
    return [];
  });
}

const unwrap = (doc: unknown) => (doc !== null && typeof doc === 'object' && 'sandbox' in doc ? (doc as { sandbox: unknown }).sandbox : doc);

describe('srt schema', () => {
  it('is a valid draft 2020-12 schema with a description for every key', () => {
    const missing: string[] = [];
    const walk = (node: unknown, path: string) => {
      if (node === null || typeof node !== 'object') return;
      const n = node as Record<string, unknown>;
      for (const [key, sub] of Object.entries((n.properties ?? {}) as Record<string, Record<string, unknown>>)) {
        if (sub.description === undefined && sub.$ref === undefined) missing.push(`${path}.${key}`);
        walk(sub, `${path}.${key}`);
      }
      for (const k of ['items', 'additionalProperties']) walk(n[k], path);
      for (const k of ['anyOf', 'oneOf', 'allOf']) for (const sub of (n[k] ?? []) as unknown[]) walk(sub, path);
      for (const [name, sub] of Object.entries((n.$defs ?? {}) as Record<string, unknown>)) walk(sub, `#${name}`);
    };
    walk(schema, '');
    expect(missing).toEqual([]);
    expect(schema.$schema).toBe('https://json-schema.org/draft/2020-12/schema');
  });

  const examples = [...docExamples(), ...exampleFiles()];
  it('finds the examples', () => expect(examples.length).toBeGreaterThanOrEqual(4));
  it.each(examples)('accepts %s, which srt loads too', (_where, doc) => {
    expect(validate(doc), JSON.stringify(validate.errors)).toBe(true);
    expect(() => validateSettings(unwrap(doc), 'example')).not.toThrow();
  });

  it('accepts the { "sandbox": … } wrapper with other top-level keys, as srt does', () => {
    const doc = { permissions: { allow: ['Bash'] }, sandbox: { network: { allowedDomains: ['github.com'] } } };
    expect(validate(doc)).toBe(true);
    expect(validate({ sandbox: { network: { allowedDomain: [] } } })).toBe(false);
  });

  it.each([
    ['an unknown key', { network: { allowedDomain: ['x.com'] } }],
    ['a key in the wrong section', { allowedDomains: ['x.com'] }],
    ['a wrong type', { network: { allowedDomains: 'x.com' } }],
    ['an out-of-range number', { mandatoryDenySearchDepth: 11 }],
    ['a bad enum', { credentials: { envVars: [{ name: 'T', mode: 'maybe' }] } }],
    ['a bad path entry', { filesystem: { denyRead: [{ path: 1 }] } }],
    ['an empty string', { filesystem: { allowWrite: [''] } }],
    ['a bad variable name', { credentials: { envVars: [{ name: '1X', mode: 'deny' }] } }],
    ['a port out of range', { network: { httpProxyPort: 70000 } }],
    ['an empty injectHosts', { credentials: { envVars: [{ name: 'T', mode: 'mask', injectHosts: [] }] } }],
  ])('rejects %s, and so does srt', (_what, doc) => {
    expect(validate(doc)).toBe(false);
    expect(() => validateSettings(doc, 'fixture')).toThrow();
  });
});
