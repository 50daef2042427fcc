// Mount check: the sandbox's mounts are the ones srt planned, at the places it planned them.
//
// srt plans with real paths (no symlinks) and hands bwrap strings, which bwrap resolves again,
// following symlinks, sources on the host and destinations in the new root. A concurrent process
// that swaps a directory on the way with a symlink (renameat2 RENAME_EXCHANGE, over and over)
// can make bwrap bind the link's target instead (a `$HOME` bound read-write), or put a mask
// somewhere else. So before anything else runs, the helper walks every planned destination
// itself, one component at a time with O_NOFOLLOW (a symlink anywhere on the way is a mismatch),
// and checks what it finds against the plan: a bind is a mount root holding the very file srt
// looked at (device and inode), read-only where planned; a mask is a read-only tmpfs at its
// place; a recreated symlink points where planned; bwrap's --chdir landed in the planned
// directory. Any difference stops the run (exit 125) before the command exists. Once checked, a
// mount cannot be moved by the command (a mount point cannot be renamed inside the sandbox).
//
// Plan file (--verify FILE), NUL-terminated fields, a record letter first:
//   B dest dev ino flags   a bind: flags has `r` (read-only) and/or `o` (optional: the source
//                          may have vanished, then nothing may be at dest)
//   T dest                 a read-only tmpfs
//   L dest target          a symlink
//   D dest dev ino         bwrap's read-only copy of a descriptor (a sentinel copy): a regular
//                          file in a read-only tmpfs, never the host file dev:ino it stands for
//   C dev ino              the working directory

#include "helper.h"

#include <fcntl.h>
#include <linux/magic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <unistd.h>

struct planned {
  char kind;
  const char *dest, *target;
  unsigned long long dev, ino;
  int ro, optional;
};
static struct planned *plan;
static int nplan;
static int have_cwd;
static unsigned long long cwd_dev, cwd_ino;

static unsigned long long number(const char *s, const char *path) {
  char *end;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno || *s == '\0' || *end) die("seccomp helper: %s: bad number %s", path, s);
  return v;
}

// The NUL-terminated field at *p; *p moves past it.
static const char *next_field(char **p, const char *end, const char *path) {
  if (*p >= end) die("seccomp helper: %s: truncated record", path);
  const char *f = *p;
  *p += strlen(*p) + 1;
  return f;
}

void verify_load(const char *path) {
  size_t done;
  char *buf = read_records(path, "mount plan", 64 << 20, &done);
  char *p = buf, *end = buf + done;
  while (p < end) {
    const char *kind = next_field(&p, end, path);
    struct planned r = {0};
    r.kind = kind[0];
    if (kind[0] == 0 || kind[1] != 0) die("seccomp helper: %s: bad record", path);
    if (r.kind == 'C') {
      cwd_dev = number(next_field(&p, end, path), path);
      cwd_ino = number(next_field(&p, end, path), path);
      have_cwd = 1;
      continue;
    }
    r.dest = next_field(&p, end, path);
    if (r.dest[0] != '/') die("seccomp helper: %s: %s: not absolute", path, r.dest);
    if (r.kind == 'D') {
      r.dev = number(next_field(&p, end, path), path);
      r.ino = number(next_field(&p, end, path), path);
    } else if (r.kind == 'B') {
      r.dev = number(next_field(&p, end, path), path);
      r.ino = number(next_field(&p, end, path), path);
      const char *flags = next_field(&p, end, path);
      r.ro = strchr(flags, 'r') != NULL;
      r.optional = strchr(flags, 'o') != NULL;
    } else if (r.kind == 'L') {
      r.target = next_field(&p, end, path);
    } else if (r.kind != 'T') {
      die("seccomp helper: %s: unknown record %c", path, r.kind);
    }
    struct planned *v = realloc(plan, (nplan + 1) * sizeof *v);
    if (!v) die_errno("realloc");
    plan = v;
    plan[nplan++] = r;
  }
}

// Open the last component of an absolute path with O_PATH, every component looked up with
// O_NOFOLLOW in the directory before it (a symlink on the way: ELOOP). *parent gets the
// directory holding it (for "/": -1). Returns the descriptor or -errno.
static int walk_nofollow(const char *path, int *parent) {
  *parent = -1;
  int cur = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (cur < 0) return -errno;
  const char *p = path;
  for (;;) {
    while (*p == '/') p++;
    if (*p == '\0') return cur;
    const char *e = strchrnul(p, '/');
    char comp[256];
    if ((size_t)(e - p) >= sizeof comp) { close(cur); return -ENAMETOOLONG; }
    memcpy(comp, p, e - p);
    comp[e - p] = '\0';
    if (strcmp(comp, ".") == 0 || strcmp(comp, "..") == 0) { close(cur); return -EINVAL; }
    int fd = openat(cur, comp, O_PATH | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) { int err = errno; close(cur); return -err; }
    const char *rest = e;
    while (*rest == '/') rest++;
    if (*rest == '\0') {
      if (*parent >= 0) close(*parent);
      *parent = cur;
      return fd;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISDIR(st.st_mode)) {
      int err = S_ISLNK(st.st_mode) ? ELOOP : ENOTDIR;
      close(fd);
      close(cur);
      return -err;
    }
    close(cur);
    cur = fd;
    p = e;
  }
}

// The mount a descriptor lies on (/proc/self/fdinfo, any kernel since 3.15).
static long mount_id(int fd) {
  char path[64], buf[512];
  snprintf(path, sizeof path, "/proc/self/fdinfo/%d", fd);
  int f = open(path, O_RDONLY | O_CLOEXEC);
  if (f < 0) return -1;
  ssize_t n = read(f, buf, sizeof buf - 1);
  close(f);
  if (n <= 0) return -1;
  buf[n] = '\0';
  const char *m = strstr(buf, "mnt_id:");
  return m ? strtol(m + 7, NULL, 10) : -1;
}

static const char *mismatch;

// Does dest hold what r plans? Sets `mismatch` to why not. With fd_out (binds only), the
// checked object stays open there.
static int check(const struct planned *r, int *fd_out) {
  int parent;
  int fd = walk_nofollow(r->dest, &parent);
  if (fd < 0) {
    if (r->kind == 'B' && r->optional && fd == -ENOENT && !fd_out) return 1;
    mismatch = fd == -ELOOP ? "a symlink is on the way" : strerror(-fd);
    if (parent >= 0) close(parent);
    return 0;
  }
  int ok = 0;
  struct stat st;
  struct statfs sf;
  if (fstat(fd, &st) != 0 || fstatfs(fd, &sf) != 0) mismatch = strerror(errno);
  else if (r->kind == 'L') {
    char target[4096];
    const char *leaf = strrchr(r->dest, '/') + 1;
    ssize_t n = S_ISLNK(st.st_mode) && parent >= 0 ? readlinkat(parent, leaf, target, sizeof target - 1) : -1;
    if (n >= 0) target[n] = '\0';
    ok = n >= 0 && strcmp(target, r->target) == 0;
    if (!ok) mismatch = "not the planned symlink";
  } else if (parent >= 0 && mount_id(fd) == mount_id(parent)) {
    mismatch = "nothing is mounted there";
  } else if (r->kind == 'T') {
    ok = sf.f_type == TMPFS_MAGIC && (sf.f_flags & ST_RDONLY);
    if (!ok) mismatch = "not a read-only tmpfs";
  } else if (r->kind == 'D') {
    // bwrap's copy: a read-only regular file in its tmpfs, never the host file it stands for.
    ok = S_ISREG(st.st_mode) && sf.f_type == TMPFS_MAGIC && (sf.f_flags & ST_RDONLY) && !(st.st_dev == r->dev && st.st_ino == r->ino);
    if (!ok) mismatch = "not srt's read-only copy";
  } else if (st.st_dev != r->dev || st.st_ino != r->ino) {
    mismatch = "another file is mounted there";
  } else if (r->ro && !(sf.f_flags & ST_RDONLY)) {
    mismatch = "mounted writable";
  } else {
    ok = 1;
  }
  if (parent >= 0) close(parent);
  if (ok && fd_out) *fd_out = fd;
  else close(fd);
  return ok;
}

void verify_mounts(void) {
  for (int i = 0; i < nplan; i++) {
    if (!check(&plan[i], NULL))
      die("the sandbox's mount at %s is not what srt planned (%s): a path changed while the "
          "sandbox was being set up; nothing ran, try again",
          plan[i].dest, mismatch);
  }
  if (have_cwd) {
    struct stat st;
    if (stat(".", &st) != 0 || st.st_dev != cwd_dev || st.st_ino != cwd_ino)
      die("the sandbox's working directory is not the one srt planned: a path changed while the "
          "sandbox was being set up; nothing ran, try again");
  }
}

int verify_loaded(void) { return plan != NULL || have_cwd; }

int verified_open(const char *path) {
  for (int i = 0; i < nplan; i++) {
    if (plan[i].kind != 'B' || plan[i].ro || strcmp(plan[i].dest, path) != 0) continue;
    int fd = -1;
    if (!check(&plan[i], &fd)) die("the sandbox's writable mount %s changed (%s); nothing ran", path, mismatch);
    return fd;
  }
  return -1;
}
