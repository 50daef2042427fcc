// srt's globs (src/glob.ts: one grammar everywhere) matched against paths, for the read gate:
// a deny glob is judged at each open instead of being expanded over the tree at start.
//
// Grammar (code points; the path is UTF-8, a byte that does not decode is one character that
// only `?`, `*`, `**` and a negated class match):
//   `**/` zero or more whole segments   `**` any text   `*` any text within a segment
//   `?` one character but `/`           `[…]` one of a set, never `/` (`!`/`^` negates, `a-z`)
// A glob is compiled to a small NFA over positions: one per token (the text of a glob is a
// token per character), plus the loop of each `**/`. Matching keeps the set of live positions,
// so a hostile glob costs O(tokens × length), never backtracking.

#include "helper.h"

#include <stdint.h>
#include <stdlib.h>

enum atom_kind { A_CHAR, A_ANY, A_CLASS, A_STAR, A_GLOBSTAR, A_SEGS };

struct atom {
  enum atom_kind kind;
  uint32_t cp;         // A_CHAR
  int negated;         // A_CLASS
  uint32_t (*ranges)[2];
  int nranges;
};

struct glob {
  struct atom *atoms;
  int n;
  char *lit;
  // The glob's text before its first wildcard, as bytes, and the positions it takes: a path not
  // starting with it matches nothing, and one that does starts matching after it.
  size_t lit_len;
  int lit_atoms;
  int words; // of a state set: bit 2i "at token i", bit 2i+1 "inside the loop of `**/` i"
};

#define NOT_UTF8 0x80000000u
#define SLASH 0x2fu

// The code point at *s (advancing it); a byte that starts no valid sequence is NOT_UTF8|byte.
static uint32_t next_cp(const unsigned char **s) {
  const unsigned char *p = *s;
  uint32_t c = p[0];
  int len = c < 0x80 ? 1 : (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 : (c & 0xf8) == 0xf0 ? 4 : 0;
  if (len == 1) { *s = p + 1; return c; }
  if (len == 0) { *s = p + 1; return NOT_UTF8 | c; }
  uint32_t cp = c & (0x7f >> len);
  for (int i = 1; i < len; i++) {
    if ((p[i] & 0xc0) != 0x80) { *s = p + 1; return NOT_UTF8 | c; }
    cp = (cp << 6) | (p[i] & 0x3f);
  }
  static const uint32_t min[] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < min[len] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) { *s = p + 1; return NOT_UTF8 | c; }
  *s = p + len;
  return cp;
}

static int cmp_range(const void *a, const void *b) {
  const uint32_t *x = a, *y = b;
  return x[0] < y[0] ? -1 : x[0] > y[0];
}

static void push_atom(struct glob *g, struct atom a) {
  struct atom *v = realloc(g->atoms, (g->n + 1) * sizeof *v);
  if (!v) die_errno("realloc");
  g->atoms = v;
  g->atoms[g->n++] = a;
}

// The class whose `[` is cps[i], as glob.ts parseClass reads it: the body runs to the next `]`,
// holds at least one character and no `/`; else the `[` is a literal. *end: the `]`.
// Returns 0 for a literal `[`, 1 for a class, -1 for a range written backwards.
static int parse_class(const uint32_t *cps, int n, int i, struct atom *a, int *end) {
  int close = -1;
  for (int k = i + 1; k < n; k++) if (cps[k] == ']') { close = k; break; }
  if (close <= i + 1) return 0;
  for (int k = i + 1; k < close; k++) if (cps[k] == SLASH) return 0;
  int from = i + 1, to = close; // body [from, to)
  a->kind = A_CLASS;
  a->negated = 0;
  if ((cps[from] == '!' || cps[from] == '^') && to - from > 1) { a->negated = 1; from++; }
  a->ranges = calloc(2 * (size_t)(to - from) + 2, sizeof *a->ranges);
  if (!a->ranges) die_errno("calloc");
  int nr = 0;
  for (int k = from; k < to; k++) {
    uint32_t lo = cps[k], hi = lo;
    if (k + 2 < to && cps[k + 1] == '-') {
      hi = cps[k + 2];
      if (hi < lo) { free(a->ranges); return -1; }
      k += 2;
    }
    // Never `/`: split a range around it.
    if (lo <= SLASH && SLASH <= hi) {
      if (lo < SLASH) { a->ranges[nr][0] = lo; a->ranges[nr++][1] = SLASH - 1; }
      if (hi > SLASH) { a->ranges[nr][0] = SLASH + 1; a->ranges[nr++][1] = hi; }
    } else {
      a->ranges[nr][0] = lo;
      a->ranges[nr++][1] = hi;
    }
  }
  qsort(a->ranges, nr, sizeof *a->ranges, cmp_range);
  a->nranges = nr;
  *end = close;
  return 1;
}

struct glob *glob_compile(const char *pattern) {
  size_t len = strlen(pattern);
  uint32_t *cps = calloc(len + 1, sizeof *cps);
  struct glob *g = calloc(1, sizeof *g);
  if (!cps || !g) die_errno("calloc");
  int n = 0;
  for (const unsigned char *s = (const unsigned char *)pattern; *s;) cps[n++] = next_cp(&s);
  int literal = 1;
  for (int i = 0; i < n; i++) {
    uint32_t c = cps[i];
    struct atom a = {.kind = A_CHAR, .cp = c};
    int end;
    if (c == '*') {
      if (i + 1 < n && cps[i + 1] == '*') {
        i++;
        if (i + 1 < n && cps[i + 1] == SLASH) { i++; a.kind = A_SEGS; } else a.kind = A_GLOBSTAR;
      } else a.kind = A_STAR;
    } else if (c == '?') a.kind = A_ANY;
    else if (c == '[') {
      int r = parse_class(cps, n, i, &a, &end);
      if (r < 0) { free(cps); return NULL; }
      if (r > 0) i = end;
    }
    if (a.kind != A_CHAR) literal = 0;
    push_atom(g, a);
    if (literal) g->lit_atoms = g->n;
  }
  free(cps);
  // The literal part up to its last `/` (a wildcard may continue the segment after it).
  g->lit_len = 0;
  const unsigned char *s = (const unsigned char *)pattern;
  for (int i = 0; i < g->lit_atoms; i++) next_cp(&s);
  size_t lit_bytes = s - (const unsigned char *)pattern;
  int atoms = g->lit_atoms;
  while (lit_bytes > 0 && pattern[lit_bytes - 1] != '/') {
    lit_bytes--;
    // Step back over one code point (its continuation bytes first).
    while (lit_bytes > 0 && ((unsigned char)pattern[lit_bytes] & 0xc0) == 0x80) lit_bytes--;
    atoms--;
  }
  g->lit_len = lit_bytes;
  g->lit_atoms = atoms;
  g->lit = strndup(pattern, lit_bytes);
  if (!g->lit) die_errno("strndup");
  g->words = (2 * (g->n + 1) + 63) / 64;
  return g;
}

#define AT(i) (2 * (i))
#define LOOP(i) (2 * (i) + 1)
static void set_bit(uint64_t *s, int b) { s[b / 64] |= 1ull << (b % 64); }
static int has_bit(const uint64_t *s, int b) { return (s[b / 64] >> (b % 64)) & 1; }

// Follow the moves that consume nothing: past `*`, `**` and `**/`, into the loop of `**/`.
static void closure(const struct glob *g, uint64_t *s) {
  for (int i = 0; i < g->n; i++) {
    if (!has_bit(s, AT(i))) continue;
    enum atom_kind k = g->atoms[i].kind;
    if (k == A_STAR || k == A_GLOBSTAR || k == A_SEGS) set_bit(s, AT(i + 1));
    if (k == A_SEGS) set_bit(s, LOOP(i));
  }
}

static int in_class(const struct atom *a, uint32_t c) {
  int hit = 0;
  if (!(c & NOT_UTF8))
    for (int k = 0; k < a->nranges && !hit; k++) hit = a->ranges[k][0] <= c && c <= a->ranges[k][1];
  return a->negated ? !hit : hit;
}

// from → to on code point c (to is cleared first); 0 when no position is left.
static int step(const struct glob *g, const uint64_t *from, uint64_t *to, uint32_t c) {
  memset(to, 0, g->words * sizeof *to);
  for (int i = 0; i < g->n; i++) {
    const struct atom *a = &g->atoms[i];
    if (has_bit(from, AT(i))) {
      switch (a->kind) {
      case A_CHAR: if (c == a->cp) set_bit(to, AT(i + 1)); break;
      case A_ANY: if (c != SLASH) set_bit(to, AT(i + 1)); break;
      case A_CLASS: if (c != SLASH && in_class(a, c)) set_bit(to, AT(i + 1)); break;
      case A_STAR: if (c != SLASH) set_bit(to, AT(i)); break;
      case A_GLOBSTAR: set_bit(to, AT(i)); break;
      case A_SEGS: break; // its loop consumes
      }
    }
    if (a->kind == A_SEGS && has_bit(from, LOOP(i))) {
      set_bit(to, LOOP(i));
      if (c == SLASH) set_bit(to, AT(i + 1));
    }
  }
  closure(g, to);
  for (int w = 0; w < g->words; w++) if (to[w]) return 1;
  return 0;
}

// Run g over text from its start; state receives the positions live after it. stop_at_match:
// stop at the first end of a component (followed by `/` or the end) where the glob matches and
// return that length (0: none). Else returns whether any position is live.
static size_t run(const struct glob *g, const char *text, uint64_t *state, int stop_at_match) {
  uint64_t *tmp = calloc(g->words, sizeof *tmp);
  if (!tmp) die_errno("calloc");
  memset(state, 0, g->words * sizeof *state);
  const unsigned char *s = (const unsigned char *)text;
  if (strncmp(text, g->lit, g->lit_len) == 0) {
    set_bit(state, AT(g->lit_atoms));
    s += g->lit_len;
  } else {
    set_bit(state, AT(0));
  }
  closure(g, state);
  size_t out = !stop_at_match;
  while (*s) {
    uint32_t c = next_cp(&s);
    if (!step(g, state, tmp, c)) { memset(state, 0, g->words * sizeof *state); out = 0; break; }
    memcpy(state, tmp, g->words * sizeof *state);
    if (stop_at_match && (*s == '/' || *s == '\0') && has_bit(state, AT(g->n))) {
      out = (const char *)s - text;
      break;
    }
  }
  free(tmp);
  return out;
}

size_t glob_match_prefix(const struct glob *g, const char *path) {
  uint64_t *state = calloc(g->words, sizeof *state);
  if (!state) die_errno("calloc");
  size_t n = run(g, path, state, 1);
  free(state);
  return n;
}

// The positions live after `dir/` (a fresh state set, NULL when none is).
static uint64_t *below(const struct glob *g, const char *dir) {
  size_t len = strlen(dir);
  char *d = malloc(len + 2);
  uint64_t *state = calloc(g->words, sizeof *state);
  if (!d || !state) die_errno("malloc");
  memcpy(d, dir, len);
  memcpy(d + len, "/", 2);
  size_t live = run(g, d, state, 0);
  free(d);
  if (!live) { free(state); return NULL; }
  return state;
}

int glob_reaches(const struct glob *g, const char *dir) {
  uint64_t *s = below(g, dir);
  free(s);
  return s != NULL;
}

int glob_may_expose(const struct glob *g, const char *from, const char *to) {
  uint64_t *fs = below(g, from);
  if (!fs) return 0;
  uint64_t *ts = below(g, to);
  // Every way a path below from can still match must remain one below to.
  int exposes = !ts;
  for (int w = 0; ts && w < g->words && !exposes; w++) exposes = (fs[w] & ~ts[w]) != 0;
  free(fs);
  free(ts);
  return exposes;
}
