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

int gate_hidden(const char *path, int partial, const struct stat *st) {
  // A path read back from a descriptor whose file was unlinked meanwhile: judged by its name.
  char buf[PATH_MAX];
  const char *p = path;
  size_t len = strlen(path);
  const char *deleted = " (deleted)";
  if (len > strlen(deleted) && strcmp(path + len - strlen(deleted), deleted) == 0 && len < sizeof buf) {
    memcpy(buf, path, len - strlen(deleted));
    buf[len - strlen(deleted)] = '\0';
    p = buf;
  }
  for (int i = 0; i < nregions; i++) {
    const struct region *r = &regions[i];
    if (r->glob) {
      // The shallowest match above p (or p itself) is where the deny is; a re-opened path at or
      // below it, on p's way, lifts it.
      size_t m = glob_match_prefix(r->glob, p);
      if (m == 0) continue;
      int reopened = 0;
      for (int k = 0; k < r->nreopened && !reopened; k++) {
        const char *o = r->reopened[k];
        reopened = within(p, o) && strncmp(o, p, m) == 0 && (o[m] == '\0' || o[m] == '/');
      }
      if (!reopened) return 1;
      continue;
    }
    if (partial && within(r->path, p)) return 1; // p holds a denied path
    if (!within(p, r->path)) continue;
    if (st && r->has_mask && st->st_dev == r->mask_dev) continue; // srt's own mask
    int reopened = 0;
    for (int k = 0; k < r->nreopened && !reopened; k++) reopened = within(p, r->reopened[k]);
    if (!reopened) return 1;
  }
  return 0;
}

int gate_moves(const char *from, const char *to) {
  for (int i = 0; i < nregions; i++) {
    const struct region *r = &regions[i];
    if (!r->glob) continue;
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
