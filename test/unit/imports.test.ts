// No import circles in src/: data flows one way (settings → policy → plan → platform → run), a
// module never reaches itself through its imports, and nothing below src/ imports the facade or
// the CLI. Type-only imports are erased and left out.
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO } from '../e2e/helpers.js';

const SRC = join(REPO, 'src');

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? sources(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : []));
}

/** Each module's relative imports that stay at run time: static (not `import type`), re-exports, and import(). */
function importGraph(files: string[]): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const f of files) {
    const text = readFileSync(f, 'utf8');
    const specs = [
      ...[...text.matchAll(/^\s*(?:import|export)\s+(?!type\b)[^;]*?\bfrom\s+'(\.[^']+)'/gm)].map((m) => m[1]!),
      ...[...text.matchAll(/^\s*import\s+'(\.[^']+)'/gm)].map((m) => m[1]!),
      ...[...text.matchAll(/\bimport\(\s*'(\.[^']+)'\s*\)/g)].map((m) => m[1]!),
    ];
    graph.set(f, [...new Set(specs.map((s) => resolve(dirname(f), s.replace(/\.js$/, '.ts'))))].filter((d) => files.includes(d)));
  }
  return graph;
}

/** The strongly connected components with more than one module (Tarjan). */
function circles(graph: Map<string, string[]>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const out: string[][] = [];
  const visit = (v: string) => {
    index.set(v, next); low.set(v, next); next++; stack.push(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) { visit(w); low.set(v, Math.min(low.get(v)!, low.get(w)!)); }
      else if (stack.includes(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const c: string[] = [];
      let w: string;
      do { w = stack.pop()!; c.push(w); } while (w !== v);
      if (c.length > 1) out.push(c.map((p) => relative(SRC, p)).sort());
    }
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return out;
}

describe('src/ imports', () => {
  const graph = importGraph(sources(SRC));

  it('the graph is read (a module known to import others)', () => {
    expect(graph.get(join(SRC, 'sandbox.ts'))!.length).toBeGreaterThan(0);
  });

  it('form no circle', () => {
    expect(circles(graph)).toEqual([]);
  });

  // The facade (sandbox.ts, index.ts) and the CLI sit on top: the layers below never import them.
  it('nothing in a directory below src/ imports the facade or the CLI', () => {
    const top = ['sandbox.ts', 'index.ts', 'cli.ts'].map((f) => join(SRC, f));
    const upward = [...graph].flatMap(([f, deps]) => (dirname(f) === SRC ? [] : deps.filter((d) => top.includes(d)).map((d) => `${relative(SRC, f)} -> ${relative(SRC, d)}`)));
    expect(upward).toEqual([]);
  });

  it('a circle would be seen', () => {
    const a = join(SRC, 'a.ts');
    const b = join(SRC, 'b.ts');
    expect(circles(new Map([[a, [b]], [b, [a]]]))).toEqual([['a.ts', 'b.ts']]);
  });
});
