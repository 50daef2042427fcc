// Rules come from srt's pure plan (src/profiles/supervisor.ts encodeRules) in a file of
// NUL-terminated records, one letter and a value each:
//   W<root>   a writable root: names below it are checked
//   P<path>   a protected path (and everything below it), wherever it is
//   N<name>   a protected name: any component with this name below a root (and all below it)
//   S<suffix> the same for names ending in suffix (`.code-workspace`)
//   G<pat>    inside a `.git` that existed before the run: a protected path relative to it,
//             `/`-separated, `*` = one component, `**` = one or more (config, hooks, modules/**/config);
//             those without `/` also directly inside every other git dir that existed (a bare
//             repository, whatever its name: a directory with HEAD, objects/ and refs/)
//   A<path>   exempt from the G rules (a linked worktree's own git dir)
//   F<path>   free of every rule (srt's own TMPDIR, below the protected ~/.srt)
//   M<name>   report the creation of this name (a new repository: `.git`, `HEAD`)
//   H<path>, h<glob>, O<path>  the read gate's denied paths and globs, each with what re-opens
//             inside it (readgate.c)
// A protected name counts only in a directory that existed before the run, and a git dir's
// internals only where the git dir (and the directory holding the entry) existed: what the run
// made is its own (a `git clone` target, an unpacked package, `git init`), and srt reviews every
// new repository when the run ends (from the M reports). Protected paths (P) count always.
//
// This file is the pure matcher: whether a path is protected and by which rule, given the rules
// and what the run created (by device and inode, so a rename keeps it new).

#include "supervisor.h"

#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>

struct list {
  char **v;
  int n;
};
static struct list roots, paths, names, suffixes, gitpats, allows, markers, frees;

static void push(struct list *l, char *s) {
  char **v = realloc(l->v, (l->n + 1) * sizeof *v);
  if (!v) die_errno("realloc");
  l->v = v;
  l->v[l->n++] = s;
}

void supervisor_load_rules(const char *path) {
  size_t done;
  char *buf = read_records(path, "rules file", 16 << 20, &done);
  for (char *p = buf; p < buf + done; p += strlen(p) + 1) {
    char kind = p[0], *val = p + 1;
    if (kind == 0 || val[0] == 0) die("srt-init: %s: empty record", path);
    int absolute = val[0] == '/';
    switch (kind) {
    case 'W': push(&roots, val); break;
    case 'P': push(&paths, val); break;
    case 'A': push(&allows, val); break;
    case 'F': push(&frees, val); break;
    case 'N': push(&names, val); absolute = !absolute; break;
    case 'S': push(&suffixes, val); absolute = !absolute; break;
    case 'G': push(&gitpats, val); absolute = !absolute; break;
    case 'M': push(&markers, val); absolute = !absolute; break;
    case 'H': case 'h': case 'O':
      if (!gate_rule(kind, val)) die("srt-init: %s: record %c%s outside a hidden path", path, kind, val);
      break;
    default: die("srt-init: %s: unknown record %c", path, kind);
    }
    if (!absolute) die("srt-init: %s: record %c%s: bad path", path, kind, val);
  }
}

// Is p equal to or below base (both absolute, no trailing slash but for "/")?
static int within(const char *p, const char *base) {
  size_t n = strlen(base);
  if (n == 1) return 1;
  return strncmp(p, base, n) == 0 && (p[n] == '\0' || p[n] == '/');
}

// ---------------------------------------------------------------- provenance
//
// What the run itself created (SPEC §3): every directory the command made (mkdir), and every
// `.git` entry, by device and inode so a rename keeps them new. A protected *name* counts only
// in a directory that existed before the run: no host program trusts a directory that did not
// (a `git clone` target, an unpacked package). Protected paths (P) count whatever existed.

struct node {
  dev_t dev;
  ino_t ino;
  int used; // 1 in use, -1 removed (probing continues past it), 0 empty
};
static struct node *made;
static size_t made_cap, made_n;

static size_t slot_of(dev_t dev, ino_t ino) {
  uint64_t h = ((uint64_t)dev * 0x9E3779B97F4A7C15ULL) ^ ((uint64_t)ino * 0xC2B2AE3D27D4EB4FULL);
  return (size_t)(h ^ (h >> 29)) & (made_cap - 1);
}

static int is_made(dev_t dev, ino_t ino) {
  if (made_n == 0) return 0;
  for (size_t i = slot_of(dev, ino), k = 0; k < made_cap; i = (i + 1) & (made_cap - 1), k++) {
    if (made[i].used == 0) return 0;
    if (made[i].used == 1 && made[i].dev == dev && made[i].ino == ino) return 1;
  }
  return 0;
}

static void insert(dev_t dev, ino_t ino) {
  size_t i = slot_of(dev, ino);
  while (made[i].used == 1) i = (i + 1) & (made_cap - 1);
  made[i] = (struct node){dev, ino, 1};
  made_n++;
}

// The run made st. When memory runs out it stays unknown, and so counts as existing before the
// run: stricter, not weaker.
void mark_made(const struct stat *st) {
  if (is_made(st->st_dev, st->st_ino)) return;
  if ((made_n + 1) * 2 > made_cap) {
    size_t cap = made_cap ? made_cap * 2 : 1024;
    struct node *old = made, *grown = calloc(cap, sizeof *grown);
    if (!grown) return;
    size_t old_cap = made_cap;
    made = grown;
    made_cap = cap;
    made_n = 0;
    for (size_t i = 0; i < old_cap; i++)
      if (old[i].used == 1) insert(old[i].dev, old[i].ino);
    free(old);
  }
  insert(st->st_dev, st->st_ino);
}

// st is gone (removed, or replaced by a rename): its inode may be reused by anything.
void forget_made(const struct stat *st) {
  if (made_n == 0) return;
  for (size_t i = slot_of(st->st_dev, st->st_ino), k = 0; k < made_cap; i = (i + 1) & (made_cap - 1), k++) {
    if (made[i].used == 0) return;
    if (made[i].used == 1 && made[i].dev == st->st_dev && made[i].ino == st->st_ino) {
      made[i].used = -1;
      made_n--;
      return;
    }
  }
}

int made_by_run(const struct stat *st) {
  return is_made(st->st_dev, st->st_ino);
}

// Did the entry at the first len bytes of p exist before the run? (A path too long to look at,
// or one that cannot be looked at, counts as existing: stricter.)
static int existed(const char *p, size_t len) {
  if (made_n == 0) return 1;
  char buf[LONG_PATH];
  if (len == 0) len = 1; // the root directory
  if (len >= sizeof buf) return 1;
  memcpy(buf, p, len);
  buf[len] = '\0';
  struct stat st;
  return !(lstat(buf, &st) == 0 && is_made(st.st_dev, st.st_ino));
}

// ---------------------------------------------------------------- names

static const char *is_name(const char *c, size_t len) {
  for (int i = 0; i < names.n; i++)
    if (strlen(names.v[i]) == len && strncmp(names.v[i], c, len) == 0) return names.v[i];
  for (int i = 0; i < suffixes.n; i++) {
    size_t sl = strlen(suffixes.v[i]);
    if (len > sl && strncmp(c + len - sl, suffixes.v[i], sl) == 0) return suffixes.v[i];
  }
  return NULL;
}

// ---------------------------------------------------------------- git dirs

// How many bytes of rel the pattern matched (the protected entry ends there), or -1; with
// `partial`, rel may end inside what the pattern would match: then the whole of rel.
static long match_len(const char *pat, const char *rel, const char *start, int partial) {
  if (*pat == '\0') return rel - start - (rel > start && rel[-1] == '/' ? 1 : 0);
  if (*rel == '\0') return partial ? (long)(rel - start) : -1;
  const char *pe = strchrnul(pat, '/'), *re = strchrnul(rel, '/');
  const char *pnext = *pe ? pe + 1 : pe, *rnext = *re ? re + 1 : re;
  size_t pl = pe - pat, rl = re - rel;
  if (pl == 2 && pat[0] == '*' && pat[1] == '*') {
    // One or more components: this one, then either the rest of the pattern or more of `**`.
    long n = match_len(pnext, rnext, start, partial);
    return n >= 0 ? n : match_len(pat, rnext, start, partial);
  }
  if (!(pl == 1 && pat[0] == '*') && (pl != rl || strncmp(pat, rel, pl) != 0)) return -1;
  return match_len(pnext, rnext, start, partial);
}

// Does p lie in a `.git` that existed before the run, where a G rule protects it? Every such
// `.git` on the way counts, not only the innermost (a new `.git` made inside an old one does
// not lift the old one's rules); the directory holding the protected entry must have existed
// too (`.git/modules/<new>/config` is a new repository, reviewed when the run ends).
static const char *in_old_git(const char *p, int partial) {
  for (int i = 0; i < allows.n; i++)
    if (within(p, allows.v[i])) return NULL;
  for (const char *s = p; (s = strstr(s, "/.git/")) != NULL; s++) {
    size_t len = s - p + 5;
    if (!existed(p, len)) continue;
    const char *rel = p + len + 1;
    for (int i = 0; i < gitpats.n; i++) {
      long n = match_len(gitpats.v[i], rel, rel, partial);
      if (n < 0) continue;
      const char *holder = memrchr(rel, '/', n);
      if (!holder || *rel == '\0' || existed(p, holder - p)) return gitpats.v[i];
    }
  }
  return NULL;
}

// Is the directory at the first len bytes of p a git dir as git recognises one (HEAD, objects/,
// refs/), whatever its name: a bare repository, a submodule's, a `--separate-git-dir`?
static int git_dir_at(const char *p, size_t len) {
  char buf[LONG_PATH];
  if (len + sizeof "/objects" >= sizeof buf) return 0;
  memcpy(buf, p, len);
  struct stat st;
  strcpy(buf + len, "/HEAD");
  if (lstat(buf, &st) != 0 || !(S_ISREG(st.st_mode) || S_ISLNK(st.st_mode))) return 0;
  strcpy(buf + len, "/objects");
  if (stat(buf, &st) != 0 || !S_ISDIR(st.st_mode)) return 0;
  strcpy(buf + len, "/refs");
  return stat(buf, &st) == 0 && S_ISDIR(st.st_mode);
}

// The entries of a git dir (the G rules without `/`) that p has directly below a git dir that
// existed before the run, at or below the writable root: hooks and config of a bare repository.
static const char *in_old_git_dir(const char *p, const char *below) {
  for (int a = 0; a < allows.n; a++)
    if (within(p, allows.v[a])) return NULL;
  for (const char *c = below; *c == '/';) {
    const char *e = strchrnul(c + 1, '/');
    for (int i = 0; i < gitpats.n; i++) {
      const char *g = gitpats.v[i];
      if (strchr(g, '/') || strlen(g) != (size_t)(e - c - 1) || strncmp(g, c + 1, e - c - 1) != 0) continue;
      if (git_dir_at(p, c - p) && existed(p, c - p)) return g;
    }
    c = e;
  }
  return NULL;
}

// Is the absolute path p protected? `exists`: p names an existing entry (then a `.git` that is
// not the command's own new one is protected itself). `partial`: p will be a directory or a
// symlink standing where a protected path would then lie below it (renames, symlinks). `why`
// (may be NULL) says which rule.
int protected_path(const char *p, int exists, int partial, struct verdict *why) {
  struct verdict v = {0, NULL};
  for (int i = 0; i < frees.n; i++)
    if (within(p, frees.v[i])) return 0;
  for (int i = 0; i < paths.n; i++)
    if (within(p, paths.v[i]) || (partial && within(paths.v[i], p))) { v = (struct verdict){'P', paths.v[i]}; goto yes; }
  const char *root = NULL;
  for (int i = 0; i < roots.n; i++)
    if (within(p, roots.v[i]) && (!root || strlen(roots.v[i]) > strlen(root))) root = roots.v[i];
  if (!root) return 0;
  const char *below = p + (strlen(root) == 1 ? 0 : strlen(root));
  for (const char *c = below; *c == '/';) {
    const char *e = strchrnul(c + 1, '/');
    const char *name = is_name(c + 1, e - c - 1);
    // Only in a directory that existed before the run.
    if (name && existed(p, c - p)) { v = (struct verdict){'N', name}; goto yes; }
    c = e;
  }
  if ((v.what = in_old_git(p, partial)) || (v.what = in_old_git_dir(p, below))) { v.kind = 'G'; goto yes; }
  // The `.git` entry itself: an existing repository cannot be moved away, removed or replaced.
  const char *base = strrchr(p, '/');
  if (exists && base && strcmp(base, "/.git") == 0 && strlen(p) > strlen(root) && existed(p, strlen(p))) {
    v = (struct verdict){'R', ".git"};
    goto yes;
  }
  return 0;
yes:
  if (why) *why = v;
  return 1;
}

int is_marker(const char *leaf) {
  for (int i = 0; i < markers.n; i++)
    if (strcmp(markers.v[i], leaf) == 0) return 1;
  return 0;
}

