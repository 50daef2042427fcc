// The read gate: read-denied paths that lie in a writable directory, checked by the supervisor
// at every open (the filter sends it every open but O_PATH ones when the rules hold any).
//
// Why: a denied path is masked by a mount on the host's own directory entry, and the kernel
// detaches that mount in every namespace once the entry is replaced or removed. Outside the
// writable paths srt hangs its masks on a snapshot (entries no host program can touch); inside
// them it cannot, since the command's writes must land on the host. A program outside that
// renames a new `.env` over the old one (an editor saving) would show the new content inside,
// so the supervisor, which performs every open itself, refuses one that reaches a denied path,
// whatever is mounted there at that moment. It also refuses making another name for one (link,
// rename) and writing, replacing or removing one.
//
// Rules (see rules.c): `H<path>` a denied path (and all below it), `h<glob>` a denied glob
// (every path it matches and all below it, judged at each open: nothing is expanded at start, so
// a match made during the run is covered too), each followed by `O<path>` for each path inside
// it that stays readable (an allowRead or writable path of enough trust; for a glob, one at or
// below the match re-opens). At start, a denied directory's own mask (the tmpfs srt mounted on
// it) is recorded by its device: what lies on it is the sandbox's own, so an empty denied
// directory still lists as empty.

#include "helper.h"

#include <limits.h>
#include <linux/magic.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/statfs.h>

struct region {
  char *path;
  struct glob *glob; // an `h` region: path is the glob
  char **reopened;
  int nreopened;
  int has_mask;
  dev_t mask_dev;
};
static struct region *regions;
static int nregions, nglobs;
// The literal regions sorted by path (a path's own and its directories' are looked up, not
// scanned: 1,000 denied files would otherwise cost 1,000 comparisons at every open), and the
// glob regions; made once the rules are complete.
static struct region **lits, **globs;
static int nlits, indexed;

static int by_path(const void *a, const void *b) {
  return strcmp((*(struct region *const *)a)->path, (*(struct region *const *)b)->path);
}

static void gate_index(void) {
  if (indexed) return;
  indexed = 1;
  lits = calloc(nregions + 1, sizeof *lits);
  globs = calloc(nglobs + 1, sizeof *globs);
  if (!lits || !globs) die_errno("calloc");
  int ng = 0;
  for (int i = 0; i < nregions; i++) {
    if (regions[i].glob) globs[ng++] = &regions[i];
    else lits[nlits++] = &regions[i];
  }
  qsort(lits, nlits, sizeof *lits, by_path);
}

// The literal region whose path is the first len bytes of p, or NULL.
static struct region *lit_at(const char *p, size_t len) {
  int lo = 0, hi = nlits;
  while (lo < hi) {
    int mid = (lo + hi) / 2;
    const char *q = lits[mid]->path;
    int c = strncmp(q, p, len);
    if (c == 0) c = q[len] != '\0';
    if (c == 0) return lits[mid];
    if (c < 0) lo = mid + 1;
    else hi = mid;
  }
  return NULL;
}

// Is there a literal region below directory p (its path starts with `p/`)?
static int lit_below(const char *p) {
  size_t len = strlen(p);
  if (len == 1) return nlits > 0; // "/": every path is below it
  int lo = 0, hi = nlits;
  // The first path not before `p/`: every path below p sorts together from there.
  while (lo < hi) {
    int mid = (lo + hi) / 2;
    const char *q = lits[mid]->path;
    int c = strncmp(q, p, len);
    if (c == 0) c = q[len] < '/' ? -1 : q[len] > '/' ? 1 : 0;
    if (c < 0) lo = mid + 1;
    else hi = mid;
  }
  return lo < nlits && strncmp(lits[lo]->path, p, len) == 0 && lits[lo]->path[len] == '/';
}

int gate_rule(char kind, char *val) {
  if (kind == 'H' || kind == 'h') {
    struct region *v = realloc(regions, (nregions + 1) * sizeof *v);
    if (!v) die_errno("realloc");
    regions = v;
    regions[nregions] = (struct region){.path = val};
    if (kind == 'h') {
      regions[nregions].glob = glob_compile(val);
      if (!regions[nregions].glob) die("seccomp helper: rules: invalid glob %s", val);
      nglobs++;
    }
    nregions++;
    return 1;
  }
  if (kind != 'O' || nregions == 0) return 0;
  struct region *r = &regions[nregions - 1];
  char **v = realloc(r->reopened, (r->nreopened + 1) * sizeof *v);
  if (!v) die_errno("realloc");
  r->reopened = v;
  r->reopened[r->nreopened++] = val;
  return 1;
}

int gate_active(void) { return nregions > 0; }

int gate_has_globs(void) { return nglobs > 0; }

void gate_start(void) {
  gate_index();
  for (int i = 0; i < nregions; i++) {
    if (regions[i].glob) continue;
    struct stat st;
    struct statfs sf;
    if (lstat(regions[i].path, &st) == 0 && S_ISDIR(st.st_mode) && statfs(regions[i].path, &sf) == 0 &&
        sf.f_type == TMPFS_MAGIC) {
      regions[i].has_mask = 1;
      regions[i].mask_dev = st.st_dev;
    }
  }
}

static int within(const char *p, const char *base) {
  size_t n = strlen(base);
  if (n == 1) return 1;
  return strncmp(p, base, n) == 0 && (p[n] == '\0' || p[n] == '/');
}

// A literal region r covering p (p is r's path or lies below it): does it hide p?
static int lit_hides(const struct region *r, const char *p, const struct stat *st) {
  if (st && r->has_mask && st->st_dev == r->mask_dev) return 0; // srt's own mask
  for (int k = 0; k < r->nreopened; k++)
    if (within(p, r->reopened[k])) return 0;
  return 1;
}

int gate_hidden(const char *path, int partial, const struct stat *st) {
  gate_index();
  // A path read back from a descriptor whose file was unlinked meanwhile: judged by its name.
  char buf[PATH_MAX];
  const char *p = path;
  size_t len = strlen(path);
  const char *deleted = " (deleted)";
  if (len > strlen(deleted) && strcmp(path + len - strlen(deleted), deleted) == 0 && len < sizeof buf) {
    memcpy(buf, path, len - strlen(deleted));
    buf[len - strlen(deleted)] = '\0';
    p = buf;
    len = strlen(p);
  }
  if (p[0] != '/') return 0;
  // p itself and each directory above it, "/" included.
  struct region *r = lit_at("/", 1);
  if (r && lit_hides(r, p, st)) return 1;
  for (size_t i = 1; i <= len; i++) {
    if (p[i] != '/' && p[i] != '\0') continue;
    r = lit_at(p, i);
    if (r && lit_hides(r, p, st)) return 1;
  }
  if (partial && lit_below(p)) return 1; // p holds a denied path
  for (int i = 0; i < nglobs; i++) {
    const struct region *g = globs[i];
    // The shallowest match above p (or p itself) is where the deny is; a re-opened path at or
    // below it, on p's way, lifts it.
    size_t m = glob_match_prefix(g->glob, p);
    if (m == 0) continue;
    int reopened = 0;
    for (int k = 0; k < g->nreopened && !reopened; k++) {
      const char *o = g->reopened[k];
      reopened = within(p, o) && strncmp(o, p, m) == 0 && (o[m] == '\0' || o[m] == '/');
    }
    if (!reopened) return 1;
  }
  return 0;
}

int gate_moves(const char *from, const char *to) {
  gate_index();
  for (int i = 0; i < nglobs; i++) {
    const struct region *r = globs[i];
    if (glob_may_expose(r->glob, from, to)) return 1;
    // Moved to a re-opened path, or to where one lies below, a tree the glob may reach into
    // could come out from under it.
    for (int k = 0; k < r->nreopened; k++) {
      const char *o = r->reopened[k];
      if ((within(to, o) || within(o, to)) && glob_reaches(r->glob, from)) return 1;
    }
  }
  return 0;
}
