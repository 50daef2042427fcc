// Rules come from srt's pure plan (src/profiles/protected.ts) in a file of NUL-terminated
// records, one letter and a value each:
//   W<root>   a writable root: names below it are checked
//   P<path>   a protected path (and everything below it), wherever it is
//   N<name>   a protected name: any component with this name below a root (and all below it)
//   S<suffix> the same for names ending in suffix (`.code-workspace`)
//   G<pat>    inside a `.git` that existed before the run: a protected path relative to it,
//             `/`-separated, `*` = one component, `**` = one or more (config, hooks, modules/**/config)
//   A<path>   exempt from the G rules (a linked worktree's own git dir)
//   F<path>   free of every rule (srt's own TMPDIR, below the protected ~/.srt)
//   M<name>   report the creation of this name (a new repository: `.git`, `HEAD`)
//   H<path>, h<glob>, O<path>  the read gate's denied paths and globs, each with what re-opens
//             inside it (readgate.c)
// A `.git` made during the run is the command's own new repository: its internals may be
// written (srt reviews and disables what would run when the run ends, from the M reports).
//
// This file is the pure matcher: whether a path is protected, given the rules and which `.git`
// directories the run created (by device and inode, so a rename keeps them new).

#include "supervisor.h"

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

// Does the component list of pattern match a prefix of rel (`/`-separated)?
// partial: also true when rel is a proper prefix of what the pattern matches.
static int match_pat(const char *pat, const char *rel, int partial) {
  if (*pat == '\0') return 1;
  if (*rel == '\0') return partial;
  const char *pe = strchrnul(pat, '/'), *re = strchrnul(rel, '/');
  const char *pnext = *pe ? pe + 1 : pe, *rnext = *re ? re + 1 : re;
  size_t pl = pe - pat, rl = re - rel;
  if (pl == 2 && pat[0] == '*' && pat[1] == '*') {
    // One or more components: this one, then either the rest of the pattern or more of `**`.
    return match_pat(pnext, rnext, partial) || match_pat(pat, rnext, partial);
  }
  if (!(pl == 1 && pat[0] == '*') && (pl != rl || strncmp(pat, rel, pl) != 0)) return 0;
  return match_pat(pnext, rnext, partial);
}

struct newgit {
  dev_t dev;
  ino_t ino;
};
static struct newgit *new_gits;
static int nnew_gits;

static int is_new_git(dev_t dev, ino_t ino) {
  for (int i = 0; i < nnew_gits; i++)
    if (new_gits[i].dev == dev && new_gits[i].ino == ino) return 1;
  return 0;
}

void add_new_git(const struct stat *st) {
  if (is_new_git(st->st_dev, st->st_ino)) return;
  struct newgit *v = realloc(new_gits, (nnew_gits + 1) * sizeof *v);
  if (!v) return; // then it counts as an existing repository: stricter, not weaker
  new_gits = v;
  new_gits[nnew_gits++] = (struct newgit){st->st_dev, st->st_ino};
}

static int is_name(const char *c, size_t len) {
  for (int i = 0; i < names.n; i++)
    if (strlen(names.v[i]) == len && strncmp(names.v[i], c, len) == 0) return 1;
  for (int i = 0; i < suffixes.n; i++) {
    size_t sl = strlen(suffixes.v[i]);
    if (len > sl && strncmp(c + len - sl, suffixes.v[i], sl) == 0) return 1;
  }
  return 0;
}

// Is the `.git` ending at p[len] one that existed before the run?
static int old_git(const char *p, size_t len) {
  if (nnew_gits == 0) return 1;
  char git[LONG_PATH];
  if (len >= sizeof git) return 1;
  memcpy(git, p, len);
  git[len] = '\0';
  struct stat st;
  return !(lstat(git, &st) == 0 && is_new_git(st.st_dev, st.st_ino));
}

// Does p lie in a `.git` that existed before the run, where a G rule protects it? Every such
// `.git` on the way counts, not only the innermost (a new `.git` made inside an old one does
// not lift the old one's rules). partial: as in protected_path.
static int in_old_git(const char *p, int partial) {
  for (int i = 0; i < allows.n; i++)
    if (within(p, allows.v[i])) return 0;
  for (const char *s = p; (s = strstr(s, "/.git/")) != NULL; s++) {
    size_t len = s - p + 5;
    if (!old_git(p, len)) continue;
    for (int i = 0; i < gitpats.n; i++)
      if (match_pat(gitpats.v[i], p + len + 1, partial)) return 1;
  }
  return 0;
}

// Does p lie inside (below) any `.git` that existed before the run?
int below_old_git(const char *p) {
  for (const char *s = p; (s = strstr(s, "/.git/")) != NULL; s++)
    if (old_git(p, s - p + 5)) return 1;
  return 0;
}

// Is the absolute path p protected? `exists`: p names an existing entry (then a `.git` that is
// not the command's own new one is protected itself). `partial`: p will be a directory or a
// symlink standing where a protected path would then lie below it (renames, symlinks).
int protected_path(const char *p, int exists, int partial) {
  for (int i = 0; i < frees.n; i++)
    if (within(p, frees.v[i])) return 0;
  for (int i = 0; i < paths.n; i++)
    if (within(p, paths.v[i]) || (partial && within(paths.v[i], p))) return 1;
  const char *root = NULL;
  for (int i = 0; i < roots.n; i++)
    if (within(p, roots.v[i]) && (!root || strlen(roots.v[i]) > strlen(root))) root = roots.v[i];
  if (!root) return 0;
  const char *below = p + (strlen(root) == 1 ? 0 : strlen(root));
  for (const char *c = below; *c == '/';) {
    const char *e = strchrnul(c + 1, '/');
    if (is_name(c + 1, e - c - 1)) return 1;
    c = e;
  }
  if (in_old_git(p, partial)) return 1;
  // The `.git` entry itself: an existing repository cannot be moved away, removed or replaced.
  const char *base = strrchr(p, '/');
  if (exists && base && strcmp(base, "/.git") == 0 && strlen(p) > strlen(root)) {
    struct stat st;
    if (lstat(p, &st) != 0 || !is_new_git(st.st_dev, st.st_ino)) return 1;
  }
  return 0;
}

int is_marker(const char *leaf) {
  for (int i = 0; i < markers.n; i++)
    if (strcmp(markers.v[i], leaf) == 0) return 1;
  return 0;
}

