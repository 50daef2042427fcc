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
// Snapshots (a read-only tmpfs with each entry of a host directory bound back, see bwrap-ops.ts) are
// completed here rather than by bwrap: bwrap re-reads the whole mount table after every bind it
// makes (to re-mount it and its submounts read-only, nosuid, nodev), so a directory of N entries
// costs it O(N²) (0.6 s for 300). bwrap mounts the snapshot's tmpfs and binds the host's
// directory once, read-only, at a stage in srt's run directory; init (in its own mount namespace:
// for a caller other than root, bwrap's is owned by a user namespace the helper has no
// capabilities in) checks each stage is that very directory, binds every planned entry from it
// (no symlink followed; a bind taken from a read-only mount is read-only, nosuid and nodev as it
// is), makes the tmpfs read-only and covers the stages with an empty read-only tmpfs (a mount
// bwrap made cannot be unmounted there). The check that follows covers these mounts like bwrap's.
// For the same reason the helper binds srt's denied file (the F record) over every denied file
// itself (`d` binds): in a snapshot before its tmpfs is made read-only (on a mount point made to
// fit), elsewhere over the file there, each re-mounted read-only.
//
// Plan file (--verify FILE), NUL-terminated fields, a record letter first:
//   B dest dev ino flags   a bind: flags has `r` (read-only) and/or `o` (optional: the source
//                          may have vanished, then nothing may be at dest) and/or `s` (the
//                          helper binds it from the stage of the snapshot holding it) or `d`
//                          (the helper binds the F record's file there, read-only)
//   T dest                 a read-only tmpfs
//   L dest target          a symlink
//   D dest dev ino         bwrap's read-only copy of a descriptor (a sentinel copy): a regular
//                          file in a read-only tmpfs, never the host file dev:ino it stands for
//   S dir stage dev ino    a snapshot of dir the helper completes: stage (in the area of the K
//                          record) holds the host's dir (dev, ino) bound read-only
//   K area                 where the stages are: covered with an empty read-only tmpfs once used
//   F path dev ino         srt's denied file (an empty file nobody may read), for the `d` binds
//   C dev ino              the working directory

#include "helper.h"

#include <fcntl.h>
#include <limits.h>
#include <linux/magic.h>
#include <sys/mount.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

// The new mount API (Linux 5.2), where the C library's headers lack it: the same numbers on
// every architecture.
#ifndef SYS_open_tree
#define SYS_open_tree 428
#endif
#ifndef SYS_move_mount
#define SYS_move_mount 429
#endif
#ifndef OPEN_TREE_CLONE
#define OPEN_TREE_CLONE 1
#endif
#ifndef OPEN_TREE_CLOEXEC
#define OPEN_TREE_CLOEXEC O_CLOEXEC
#endif
#ifndef MOVE_MOUNT_F_EMPTY_PATH
#define MOVE_MOUNT_F_EMPTY_PATH 0x4
#endif

struct planned {
  char kind;
  const char *dest, *target;
  unsigned long long dev, ino;
  int ro, optional, snap, deny;
};
static struct planned *plan;
static int nplan;
static int have_cwd;
static unsigned long long cwd_dev, cwd_ino;
// The working directory is a tmpfs srt mounts (a snapshot, a masked directory): no identity
// exists before it is made, so it must be the mount the check verified at this path.
static const char *cwd_at;
static struct planned denied; // the F record (kind 0 when there is none)

static unsigned long long number(const char *s, const char *path) {
  char *end;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno || *s == '\0' || *end) die("srt-init: %s: bad number %s", path, s);
  return v;
}

// The NUL-terminated field at *p; *p moves past it.
static const char *next_field(char **p, const char *end, const char *path) {
  if (*p >= end) die("srt-init: %s: truncated record", path);
  const char *f = *p;
  *p += strlen(*p) + 1;
  return f;
}

// Is path a direct entry of dir (both absolute, no trailing slash)? Returns its name's offset, 0 if not.
static size_t in_dir(const char *path, const char *dir) {
  size_t n = strlen(dir);
  if (strncmp(path, dir, n) != 0 || path[n] != '/' || path[n + 1] == '\0' || strchr(path + n + 1, '/')) return 0;
  return n + 1;
}

void verify_load(const char *path) {
  size_t done;
  char *buf = read_records(path, "mount plan", 64 << 20, &done);
  char *p = buf, *end = buf + done;
  while (p < end) {
    const char *kind = next_field(&p, end, path);
    struct planned r = {0};
    r.kind = kind[0];
    if (kind[0] == 0 || kind[1] != 0) die("srt-init: %s: bad record", path);
    if (r.kind == 'c') {
      cwd_at = next_field(&p, end, path);
      if (cwd_at[0] != '/') die("srt-init: %s: %s: not absolute", path, cwd_at);
      continue;
    }
    if (r.kind == 'C') {
      cwd_dev = number(next_field(&p, end, path), path);
      cwd_ino = number(next_field(&p, end, path), path);
      have_cwd = 1;
      continue;
    }
    r.dest = next_field(&p, end, path);
    if (r.dest[0] != '/') die("srt-init: %s: %s: not absolute", path, r.dest);
    if (r.kind == 'F') {
      if (denied.kind) die("srt-init: %s: more than one denied file", path);
      r.dev = number(next_field(&p, end, path), path);
      r.ino = number(next_field(&p, end, path), path);
      denied = r;
      continue;
    }
    if (r.kind == 'D') {
      r.dev = number(next_field(&p, end, path), path);
      r.ino = number(next_field(&p, end, path), path);
    } else if (r.kind == 'B') {
      r.dev = number(next_field(&p, end, path), path);
      r.ino = number(next_field(&p, end, path), path);
      const char *flags = next_field(&p, end, path);
      r.ro = strchr(flags, 'r') != NULL;
      r.optional = strchr(flags, 'o') != NULL;
      r.snap = strchr(flags, 's') != NULL;
      r.deny = strchr(flags, 'd') != NULL;
      // The helper binds only read-only, optional entries of a snapshot (bwrap's -try binds), and
      // the denied file, read-only, where it must be.
      if (r.snap && (!r.ro || !r.optional || r.deny)) die("srt-init: %s: %s: bad flags", path, r.dest);
      if (r.deny && (!r.ro || r.optional || !denied.kind || r.dev != denied.dev || r.ino != denied.ino))
        die("srt-init: %s: %s: bad flags", path, r.dest);
    } else if (r.kind == 'L') {
      r.target = next_field(&p, end, path);
    } else if (r.kind == 'S') {
      r.target = next_field(&p, end, path);
      r.dev = number(next_field(&p, end, path), path);
      r.ino = number(next_field(&p, end, path), path);
      if (r.target[0] != '/') die("srt-init: %s: %s: not absolute", path, r.target);
    } else if (r.kind != 'T' && r.kind != 'K') {
      die("srt-init: %s: unknown record %c", path, r.kind);
    }
    struct planned *v = realloc(plan, (nplan + 1) * sizeof *v);
    if (!v) die_errno("realloc");
    plan = v;
    plan[nplan++] = r;
  }
  // Every entry the helper binds lies directly in a snapshot it completes; each stage directly in
  // the one area the stages are covered in.
  const struct planned *area = NULL;
  for (int i = 0; i < nplan; i++) {
    if (plan[i].kind != 'K') continue;
    if (area) die("srt-init: %s: more than one area of stages", path);
    area = &plan[i];
  }
  for (int i = 0; i < nplan; i++) {
    if (plan[i].kind == 'S' && (!area || !in_dir(plan[i].target, area->dest)))
      die("srt-init: %s: %s: a stage outside the area covered", path, plan[i].target);
    if (plan[i].kind != 'B' || !plan[i].snap) continue;
    int found = 0;
    for (int k = 0; k < nplan && !found; k++) found = plan[k].kind == 'S' && in_dir(plan[i].dest, plan[k].dest);
    if (!found) die("srt-init: %s: %s: no snapshot holds it", path, plan[i].dest);
  }
}

// One component of a path (`len` bytes at `name`) looked up in `dir` with O_PATH and no symlink
// followed; when `want_dir`, it must be a directory (a symlink: ELOOP). `.` and `..` are refused
// (EINVAL). Returns the descriptor or -errno.
static int open_component(int dir, const char *name, size_t len, int want_dir) {
  char comp[NAME_MAX + 1];
  if (len > NAME_MAX) return -ENAMETOOLONG;
  memcpy(comp, name, len);
  comp[len] = '\0';
  if (strcmp(comp, ".") == 0 || strcmp(comp, "..") == 0) return -EINVAL;
  int fd = openat(dir, comp, O_PATH | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return -errno;
  if (!want_dir) return fd;
  struct stat st;
  int err = fstat(fd, &st) != 0 ? errno : S_ISDIR(st.st_mode) ? 0 : S_ISLNK(st.st_mode) ? ELOOP : ENOTDIR;
  if (err) {
    close(fd);
    return -err;
  }
  return fd;
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
    const char *rest = e;
    while (*rest == '/') rest++;
    int last = *rest == '\0';
    int fd = open_component(cur, p, e - p, !last);
    if (fd < 0) {
      close(cur);
      return fd;
    }
    if (last) {
      *parent = cur;
      return fd;
    }
    close(cur);
    cur = fd;
    p = e;
  }
}

// The mount a descriptor lies on: statx (Linux 5.8), else /proc/self/fdinfo (3.15); the same id.
static long mount_id(int fd) {
  struct statx sx;
  if (statx(fd, "", AT_EMPTY_PATH, STATX_MNT_ID, &sx) == 0 && (sx.stx_mask & STATX_MNT_ID)) return (long)sx.stx_mnt_id;
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

// While the denied files are bound and while verify_mounts runs (every mount made, nothing else
// running), the directories on the way to the last destination stay open (O_PATH), each reached
// with no symlink followed: dirs.fd[k] is the directory at the first dirs.end[k] bytes of
// dirs.path (dirs.fd[0] is /), dirs.mnt[k] its mount once read (-2 before). The next destination
// is reached from the deepest one its path shares: the entries of a directory are one lookup
// each, a directory beside the last one a lookup or two, rather than a walk from /.
#define DIRS_MAX 256
static struct {
  char path[PATH_MAX];
  size_t end[DIRS_MAX];
  int fd[DIRS_MAX];
  long mnt[DIRS_MAX];
  int depth; // open entries; 0: none
  int on;    // walk_held uses them
} dirs;

static void dirs_drop(int keep) {
  while (dirs.depth > keep) close(dirs.fd[--dirs.depth]);
}

// The directory at the first n bytes of the absolute path p, open: -1 with *err set when a
// component is missing, a symlink (ELOOP), not a directory or `.`/`..` (EINVAL), or the path is
// deeper than DIRS_MAX (E2BIG: the caller walks it from / instead).
static int dirs_open(const char *p, size_t n, int *err) {
  if (n >= sizeof dirs.path) { *err = ENAMETOOLONG; return -1; }
  if (dirs.depth == 0) {
    dirs.fd[0] = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (dirs.fd[0] < 0) { *err = errno; return -1; }
    dirs.end[0] = 0;
    dirs.mnt[0] = -2;
    dirs.depth = 1;
  }
  // Keep the held prefix that p shares, component by component.
  int k = 1;
  while (k < dirs.depth && dirs.end[k] <= n && memcmp(dirs.path, p, dirs.end[k]) == 0 &&
         (dirs.end[k] == n || p[dirs.end[k]] == '/'))
    k++;
  dirs_drop(k);
  memcpy(dirs.path, p, n);
  dirs.path[n] = '\0';
  for (size_t at = dirs.end[k - 1]; at < n;) {
    while (at < n && p[at] == '/') at++;
    if (at == n) break;
    const char *e = memchr(p + at, '/', n - at);
    size_t end = e ? (size_t)(e - p) : n;
    if (dirs.depth == DIRS_MAX) { *err = E2BIG; return -1; }
    int fd = open_component(dirs.fd[dirs.depth - 1], p + at, end - at, 1);
    if (fd < 0) { *err = -fd; return -1; }
    dirs.fd[dirs.depth] = fd;
    dirs.mnt[dirs.depth] = -2;
    dirs.end[dirs.depth++] = end;
    at = end;
  }
  return dirs.fd[dirs.depth - 1];
}

// The mount of the deepest open directory.
static long dirs_mount(void) {
  int k = dirs.depth - 1;
  if (dirs.mnt[k] == -2) dirs.mnt[k] = mount_id(dirs.fd[k]);
  return dirs.mnt[k];
}

// walk_nofollow, the parent taken from `dirs` when they are on: *parent is then theirs (*own 0).
static int walk_held(const char *path, int *parent, int *own) {
  *own = 1;
  const char *slash = strrchr(path, '/');
  const char *leaf = slash + 1;
  if (!dirs.on || slash == path || !*leaf || strcmp(leaf, ".") == 0 || strcmp(leaf, "..") == 0)
    return walk_nofollow(path, parent);
  int err, d = dirs_open(path, slash - path, &err);
  // Not a directory reached without symlinks: the full walk says what is wrong.
  if (d < 0) return walk_nofollow(path, parent);
  *own = 0;
  *parent = d;
  int fd = openat(d, leaf, O_PATH | O_NOFOLLOW | O_CLOEXEC);
  return fd < 0 ? -errno : fd;
}

static const char *mismatch;

// Does dest hold what r plans? Sets `mismatch` to why not. With fd_out (binds only), the
// checked object stays open there.
static int check(const struct planned *r, int *fd_out) {
  int parent, own;
  int fd = walk_held(r->dest, &parent, &own);
  if (fd < 0) {
    if (r->kind == 'B' && r->optional && fd == -ENOENT && !fd_out) return 1;
    mismatch = fd == -ELOOP ? "a symlink is on the way" : strerror(-fd);
    if (parent >= 0 && own) close(parent);
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
  } else if (parent >= 0 && mount_id(fd) == (own ? mount_id(parent) : dirs_mount())) {
    mismatch = "nothing is mounted there";
  } else if (r->kind == 'T' || r->kind == 'K') {
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
  if (parent >= 0 && own) close(parent);
  if (ok && fd_out) *fd_out = fd;
  else close(fd);
  return ok;
}

// One entry of a snapshot: what the stage holds under `name` (no symlink followed) bound at the
// same name in the snapshot's tmpfs, on a mount point made to fit. An entry gone meanwhile, or
// replaced by a symlink, is left out (as bwrap's --ro-bind-try leaves out a vanished source):
// the check then wants nothing there.
static void bind_entry(int stage, int dir, const char *name, const char *dest) {
  int src = openat(stage, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
  if (src < 0 && errno == ENOENT) return;
  if (src < 0) die("srt-init: snapshot entry %s: %s", dest, strerror(errno));
  struct stat st;
  if (fstat(src, &st) != 0) die_errno("fstat");
  if (S_ISLNK(st.st_mode)) {
    close(src);
    return;
  }
  int made = S_ISDIR(st.st_mode) ? mkdirat(dir, name, 0700) : mknodat(dir, name, S_IFREG | 0600, 0);
  if (made != 0) die("srt-init: snapshot entry %s: cannot make its mount point: %s", dest, strerror(errno));
  int at = openat(dir, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
  if (at < 0) die("srt-init: snapshot entry %s: %s", dest, strerror(errno));
  char from[40], to[40];
  snprintf(from, sizeof from, "/proc/self/fd/%d", src);
  snprintf(to, sizeof to, "/proc/self/fd/%d", at);
  // Recursive: mounts below the entry come along (read-only too: bwrap made the stage's so).
  if (mount(from, to, NULL, MS_BIND | MS_REC, NULL) != 0)
    die("srt-init: cannot bind the snapshot entry %s: %s", dest, strerror(errno));
  close(at);
  close(src);
}

// The flags a mount has now that a remount must keep (a mount bwrap made is locked in init's
// namespace for a caller other than root: it may gain restrictions, never lose one).
static unsigned long kept_flags(int fd) {
  struct statvfs sv;
  if (fstatvfs(fd, &sv) != 0) die_errno("fstatvfs");
  return (sv.f_flag & ST_NOSUID ? MS_NOSUID : 0) | (sv.f_flag & ST_NODEV ? MS_NODEV : 0) |
         (sv.f_flag & ST_NOEXEC ? MS_NOEXEC : 0) | (sv.f_flag & ST_NOATIME ? MS_NOATIME : 0) |
         (sv.f_flag & ST_NODIRATIME ? MS_NODIRATIME : 0) | (sv.f_flag & ST_RELATIME ? MS_RELATIME : 0);
}

// srt's denied file, opened once with no symlink followed (-1 when the plan has none).
static int denied_fd = -1;

static void open_denied(void) {
  if (!denied.kind) return;
  int parent;
  denied_fd = walk_nofollow(denied.dest, &parent);
  if (denied_fd < 0) die("srt-init: srt's denied file %s: %s", denied.dest, strerror(-denied_fd));
  if (parent >= 0) close(parent);
  struct stat st;
  if (fstat(denied_fd, &st) != 0) die_errno("fstat");
  if (!S_ISREG(st.st_mode) || st.st_dev != denied.dev || st.st_ino != denied.ino)
    die("srt-init: %s is not srt's denied file: a path changed while the sandbox was being set up; nothing ran, try again", denied.dest);
}

// The first denied file's read-only bind, held open: each next one is a clone of it moved onto
// its name in the held directory (open_tree, move_mount), one mount where a bind and a read-only
// remount took two, each looked up through /proc/self/fd. A clone keeps its source's flags.
// Before Linux 5.2, or where a seccomp filter around srt refuses those calls, every one is a bind
// and a remount, as the first is.
static int denied_mount = -1;
static int clones_refused;

// A clone of denied_mount moved onto `name` in `dir`; 0 when there is none to clone from, or the
// kernel refuses the calls themselves.
static int clone_denied(int dir, const char *name, const char *dest) {
  if (denied_mount < 0 || clones_refused) return 0;
  int m = (int)syscall(SYS_open_tree, denied_mount, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH);
  if (m >= 0 && syscall(SYS_move_mount, m, "", dir, name, MOVE_MOUNT_F_EMPTY_PATH) == 0) {
    close(m);
    return 1;
  }
  int e = errno;
  if (m >= 0) close(m);
  if (e == ENOSYS || e == EPERM) {
    clones_refused = 1;
    return 0;
  }
  die("srt-init: cannot bind over the denied file %s: %s", dest, strerror(e));
}

// The denied file bound at `name` in `dir` (what is there now: made first when `make`), then
// re-mounted read-only: the bind keeps the flags of the run directory's mount.
static void bind_denied(int dir, const char *name, const char *dest, int make) {
  if (make && mknodat(dir, name, S_IFREG | 0600, 0) != 0)
    die("srt-init: denied file %s: cannot make its mount point: %s", dest, strerror(errno));
  struct stat st;
  if (fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
    die("the sandbox's denied file %s is gone: a path changed while the sandbox was being set up; nothing ran, try again", dest);
  if (S_ISDIR(st.st_mode) || S_ISLNK(st.st_mode))
    die("the sandbox's denied file %s is no longer a file: a path changed while the sandbox was being set up; nothing ran, try again", dest);
  if (clone_denied(dir, name, dest)) return;
  int at = openat(dir, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
  if (at < 0) die("the sandbox's denied file %s is gone: a path changed while the sandbox was being set up; nothing ran, try again", dest);
  char from[40], to[40];
  snprintf(from, sizeof from, "/proc/self/fd/%d", denied_fd);
  snprintf(to, sizeof to, "/proc/self/fd/%d", at);
  if (mount(from, to, NULL, MS_BIND, NULL) != 0) die("srt-init: cannot bind over the denied file %s: %s", dest, strerror(errno));
  close(at);
  // Re-opened, the name leads to the new mount's root.
  at = openat(dir, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
  if (at < 0) die("srt-init: denied file %s: %s", dest, strerror(errno));
  snprintf(to, sizeof to, "/proc/self/fd/%d", at);
  if (mount(NULL, to, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | kept_flags(at), NULL) != 0)
    die("srt-init: cannot make the bind over the denied file %s read-only: %s", dest, strerror(errno));
  if (denied_mount < 0 && !clones_refused) denied_mount = at;
  else close(at);
}

static int in_snapshot(const char *dest) {
  for (int k = 0; k < nplan; k++)
    if (plan[k].kind == 'S' && in_dir(dest, plan[k].dest)) return 1;
  return 0;
}

static void fill_snapshot(const struct planned *s) {
  const struct planned stage = {.kind = 'B', .dest = s->target, .dev = s->dev, .ino = s->ino, .ro = 1};
  int from = -1;
  if (!check(&stage, &from))
    die("the sandbox's snapshot of %s is not taken from that directory (%s): a path changed while "
        "the sandbox was being set up; nothing ran, try again",
        s->dest, mismatch);
  int parent;
  int dir = walk_nofollow(s->dest, &parent);
  if (dir < 0) die("srt-init: snapshot %s: %s", s->dest, strerror(-dir));
  if (parent >= 0) close(parent);
  for (int i = 0; i < nplan; i++) {
    size_t at = plan[i].kind == 'B' && (plan[i].snap || plan[i].deny) ? in_dir(plan[i].dest, s->dest) : 0;
    if (at && plan[i].snap) bind_entry(from, dir, plan[i].dest + at, plan[i].dest);
    else if (at) bind_denied(dir, plan[i].dest + at, plan[i].dest, 1);
  }
  close(from);
  char path[40];
  snprintf(path, sizeof path, "/proc/self/fd/%d", dir);
  if (mount(NULL, path, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | kept_flags(dir), NULL) != 0)
    die("srt-init: cannot make the snapshot %s read-only: %s", s->dest, strerror(errno));
  close(dir);
}

void verify_fill_snapshots(void) {
  const char *area = NULL;
  open_denied();
  for (int i = 0; i < nplan; i++) {
    if (plan[i].kind == 'S') fill_snapshot(&plan[i]);
    if (plan[i].kind == 'K') area = plan[i].dest;
  }
  // Denied files outside the snapshots: over the file that is there, reached from the deepest
  // directory its path shares with the last one's (dirs). Where each bind lands is the check's
  // to judge (verify_mounts walks every destination again, from / at first), so a directory
  // moved meanwhile fails the run.
  for (int i = 0; i < nplan; i++) {
    if (plan[i].kind != 'B' || !plan[i].deny || in_snapshot(plan[i].dest)) continue;
    const char *leaf = strrchr(plan[i].dest, '/') + 1;
    int err, own = 0, dir = *leaf ? dirs_open(plan[i].dest, leaf - plan[i].dest - 1, &err) : -1;
    if (dir < 0) {
      // Deeper than dirs hold, or not there as planned: the full walk says what is wrong.
      int fd = walk_nofollow(plan[i].dest, &dir);
      if (fd < 0 || dir < 0)
        die("the sandbox's denied file %s: %s: a path changed while the sandbox was being set up; nothing ran, try again",
            plan[i].dest, fd < 0 ? strerror(-fd) : "is /");
      close(fd);
      own = 1;
    }
    bind_denied(dir, leaf, plan[i].dest, 0);
    if (own) close(dir);
  }
  dirs_drop(0);
  if (denied_fd >= 0) close(denied_fd);
  if (denied_mount >= 0) close(denied_mount);
  if (area && mount("tmpfs", area, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=0555") != 0)
    die("srt-init: cannot cover the snapshots' stages at %s: %s", area, strerror(errno));
}

// Completed only in init (verify_fill_snapshots): a snapshot's tmpfs, its entries, the stages'
// cover, the denied files' binds.
static int completed_late(const struct planned *r) {
  if (r->kind == 'K' || (r->kind == 'B' && (r->snap || r->deny))) return 1;
  for (int i = 0; r->kind == 'T' && i < nplan; i++)
    if (plan[i].kind == 'S' && strcmp(plan[i].dest, r->dest) == 0) return 1;
  return 0;
}

void verify_mounts(int all) {
  dirs.on = 1;
  for (int i = 0; i < nplan; i++) {
    if (plan[i].kind == 'S') continue; // its tmpfs and entries have records of their own
    if (!all && completed_late(&plan[i])) continue;
    if (!check(&plan[i], NULL))
      die("the sandbox's mount at %s is not what srt planned (%s): a path changed while the "
          "sandbox was being set up; nothing ran, try again",
          plan[i].dest, mismatch);
  }
  dirs_drop(0);
  dirs.on = 0;
  if (cwd_at) {
    struct stat at;
    if (stat(cwd_at, &at) != 0) die("srt-init: %s: %s", cwd_at, strerror(errno));
    cwd_dev = at.st_dev;
    cwd_ino = at.st_ino;
    have_cwd = 1;
  }
  if (have_cwd) {
    struct stat st;
    if (stat(".", &st) != 0 || st.st_dev != cwd_dev || st.st_ino != cwd_ino)
      die("the sandbox's working directory is not the one srt planned: a path changed while the "
          "sandbox was being set up; nothing ran, try again");
  }
}

int verify_loaded(void) { return plan != NULL || have_cwd || cwd_at; }

int verified_open(const char *path) {
  for (int i = 0; i < nplan; i++) {
    if (plan[i].kind != 'B' || plan[i].ro || strcmp(plan[i].dest, path) != 0) continue;
    int fd = -1;
    if (!check(&plan[i], &fd)) die("the sandbox's writable mount %s changed (%s); nothing ran", path, mismatch);
    return fd;
  }
  return -1;
}
