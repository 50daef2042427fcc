#!/usr/bin/env node
// Writes the generated parts of docs/: each file's "## Contents" list from its own headings.
// `--check` writes nothing; it exits 1 with one line per problem when a generated part is stale
// or a link in README.md or docs/ leads nowhere (a missing file, or an anchor no heading makes).
// test/unit/docs.test.ts runs it that way.
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const REPO = join(dirname(fileURLToPath(import.meta.url)), '..');
const DOCS = join(REPO, 'docs');

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens. */
function slug(heading) {
  return heading.trim().toLowerCase().replace(/[^\p{L}\p{N}\- _]/gu, '').replace(/ /g, '-');
}

/** The headings of a Markdown text at one level (every level: 0), outside code fences. */
function headings(text, level) {
  const out = [];
  let fence = false;
  for (const line of text.split('\n')) {
    if (/^\s*```/.test(line)) fence = !fence;
    const m = /^(#+) (.*)$/.exec(line);
    if (!fence && m && (level === 0 || m[1].length === level)) out.push(m[2]);
  }
  return out;
}

/** The text with its "## Contents" list regenerated (every other level-2 heading, in order). */
function withContents(text) {
  const at = text.indexOf('\n## Contents\n\n');
  if (at < 0) throw new Error('no "## Contents" section');
  const start = at + '\n## Contents\n\n'.length;
  const end = text.indexOf('\n## ', start);
  const list = headings(text, 2).filter((h) => h !== 'Contents').map((h) => `- [${h}](#${slug(h)})`).join('\n');
  return `${text.slice(0, start)}${list}\n${end < 0 ? '' : text.slice(end)}`;
}

/** Anchors a file's headings make, with GitHub's -1, -2 … for repeats. */
function anchors(text) {
  const seen = new Map();
  return new Set(headings(text, 0).map((h) => {
    const s = slug(h.replace(/`/g, ''));
    const n = seen.get(s) ?? 0;
    seen.set(s, n + 1);
    return n === 0 ? s : `${s}-${n}`;
  }));
}

/** Each relative link of a Markdown file that leads nowhere, as "file: target — why". */
function brokenLinks(file) {
  const text = readFileSync(file, 'utf8').replace(/^\s*```[\s\S]*?^\s*```/gm, '');
  const out = [];
  for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
    if (/^[a-z]+:/.test(target)) continue;
    const [path, anchor] = target.split('#');
    const dest = path ? resolve(dirname(file), path) : file;
    const where = `${relative(REPO, file)}: ${target}`;
    if (!existsSync(dest)) out.push(`${where} — no such file`);
    else if (anchor !== undefined && !(dest.endsWith('.md') && anchors(readFileSync(dest, 'utf8')).has(anchor))) out.push(`${where} — no such heading`);
  }
  return out;
}

const check = process.argv.includes('--check');
const files = readdirSync(DOCS).filter((n) => n.endsWith('.md')).sort().map((n) => join(DOCS, n));
const problems = [];
for (const path of files) {
  const text = readFileSync(path, 'utf8');
  const next = withContents(text);
  if (next === text) continue;
  if (check) problems.push(`${relative(REPO, path)}: out of date; run node scripts/docs.mjs`);
  else writeFileSync(path, next);
}
if (check) problems.push(...[join(REPO, 'README.md'), ...files].flatMap(brokenLinks));
for (const p of problems) console.error(`docs: ${p}`);
process.exit(problems.length > 0 ? 1 : 0);
