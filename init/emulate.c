// The supervisor's emulated operations (see supervisor.c): each creating, removing or
// re-pointing call, checked against the rules and performed here on the command's behalf.
//
// The call runs with the command's uid/gids (the same user), no capabilities, the command's
// umask (/proc/PID/status, cached per process) and its Landlock domain; setuid/setgid bits are
// stripped from creation modes (the filter refuses such modes before they get here). A FIFO
// opened for writing without a reader would block this thread, so such an open is finished by a
// short-lived worker thread.

#include "supervisor.h"

#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

static int command_umask(struct req *r, mode_t *mask) {
  int fd = proc_open(r, "status", O_RDONLY);
  if (fd < 0) return errno;
  char buf[512];
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return EIO;
  buf[n] = '\0';
  const char *u = strstr(buf, "\nUmask:");
  if (!u) return EIO;
  *mask = (mode_t)strtoul(u + 7, NULL, 8) & 0777;
  return 0;
}


// The rule behind the last refusal (one notification is decided at a time).
static struct verdict rule;

static int refuse(const char *op, const char *path, const struct verdict *why) {
  report_refused(op, path, why);
  return EACCES;
}

// Is `name` in the directory dirfd an entry the run made, or missing (not one that existed)?
static int made_or_missing(int dirfd, const char *name) {
  struct stat st;
  return fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0 || made_by_run(&st);
}

// Something was made where nothing had that name: a directory is the run's own from now on, and
// a marker name may be a new repository. A `.git` always is (its git dir may be written; srt
// reviews it when the run ends); a HEAD is unless it lies in a git dir that existed before the
// run (rewriting an old repository's HEAD is no new repository): `git init --bare`, a git dir
// made inside an old `.git` (`--separate-git-dir=.git/x`), a bare layout in an old directory.
// `fresh`: the entry itself is new (not an existing one renamed here, which keeps its provenance
// unless it becomes a `.git`).
static void created(const struct loc *l, int fresh) {
  struct stat st;
  if (fstatat(l->parent, l->leaf, &st, AT_SYMLINK_NOFOLLOW) != 0) return;
  int git = strcmp(l->leaf, ".git") == 0;
  if ((fresh && S_ISDIR(st.st_mode)) || git) mark_made(&st);
  if (!is_marker(l->leaf)) return;
  if (git) {
    // A `.git` file (a worktree's or submodule's link) is no git dir: nothing to follow.
    report_created(l->full, S_ISDIR(st.st_mode) ? openat(l->parent, l->leaf, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) : NOT_A_DIR);
    return;
  }
  struct stat dir;
  if (fstat(l->parent, &dir) != 0) return;
  int old_git_dir = !made_by_run(&dir) && !made_or_missing(l->parent, "objects") && !made_or_missing(l->parent, "refs");
  if (old_git_dir) return;
  report_created(l->full, openat(l->parent, ".", O_PATH | O_DIRECTORY | O_CLOEXEC));
}

// The command's umask, cached per process: reading /proc/PID/status costs more than the rest of
// a call. An entry holds a pidfd, so a reused pid never sees another process's umask; every
// umask() call (sent here, then continued: it has no argument in memory and nothing is decided)
// empties the cache, and for a moment after it nothing is cached, until the call has surely run.
#define UMASK_CACHE 256
#define UMASK_HOLD_NS 100000000LL
static struct {
  pid_t pid;
  int pidfd;
  mode_t mask;
} umasks[UMASK_CACHE];
static long long umask_hold_until;

static long long now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1000000000LL + t.tv_nsec;
}

static void umask_forget(int slot) {
  if (umasks[slot].pid > 0) close(umasks[slot].pidfd);
  umasks[slot].pid = 0;
}

void umask_changed(void) {
  for (int i = 0; i < UMASK_CACHE; i++) umask_forget(i);
  umask_hold_until = now_ns() + UMASK_HOLD_NS;
}

static int with_umask(struct req *r) {
  int slot = (unsigned)r->pid % UMASK_CACHE;
  int cacheable = now_ns() >= umask_hold_until;
  if (cacheable && umasks[slot].pid == r->pid) {
    struct pollfd p = {umasks[slot].pidfd, POLLIN, 0};
    if (poll(&p, 1, 0) == 0) {
      umask(umasks[slot].mask);
      return 0;
    }
    umask_forget(slot); // that process is gone: the pid is another's now
  }
  mode_t m;
  int err = command_umask(r, &m);
  if (err) return err;
  umask(m);
  // Only a thread-group leader has a pidfd here (threads need PIDFD_THREAD, Linux 6.9).
  int pidfd = cacheable ? syscall(SYS_pidfd_open, r->pid, 0) : -1;
  if (pidfd >= 0) {
    umask_forget(slot);
    umasks[slot].pid = r->pid;
    umasks[slot].pidfd = pidfd;
    umasks[slot].mask = m;
  }
  return 0;
}

static atomic_int fifo_waits;

struct fifo_job {
  struct req r;
  struct seccomp_notif n;
  int path_fd, flags;
};

static void *fifo_worker(void *arg) {
  struct fifo_job *j = arg;
  j->r.n = &j->n;
  char p[64];
  snprintf(p, sizeof p, "/proc/self/fd/%d", j->path_fd);
  int fd = open(p, j->flags | O_NOCTTY);
  if (fd < 0) reply(&j->r, 0, errno);
  else reply_fd(&j->r, fd, j->flags & O_CLOEXEC);
  close(j->path_fd);
  free(j);
  atomic_fetch_sub(&fifo_waits, 1);
  return NULL;
}

// A FIFO opened for writing waits for a reader: in a worker, so that nothing else waits.
static int open_fifo_later(struct req *r, int path_fd, int flags) {
  if (atomic_fetch_add(&fifo_waits, 1) >= MAX_FIFO_WAITS) {
    atomic_fetch_sub(&fifo_waits, 1);
    return EAGAIN;
  }
  struct fifo_job *j = calloc(1, sizeof *j);
  if (!j) { atomic_fetch_sub(&fifo_waits, 1); return ENOMEM; }
  j->r = *r;
  j->r.root = -1;
  j->n = *r->n;
  j->path_fd = path_fd;
  j->flags = flags & ~(O_CREAT | O_EXCL | O_TRUNC);
  pthread_t t;
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  pthread_attr_setstacksize(&attr, 64 * 1024); // it only opens and answers
  int err = pthread_create(&t, &attr, fifo_worker, j);
  pthread_attr_destroy(&attr);
  if (err) { free(j); atomic_fetch_sub(&fifo_waits, 1); return err; }
  return 0;
}

// /dev/tty means the caller's controlling terminal: the command's, not this thread's.
static int open_ctty(struct req *r, int flags) {
  int fd = proc_open(r, "stat", O_RDONLY);
  if (fd < 0) return -errno;
  char buf[1024];
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return -EIO;
  buf[n] = '\0';
  char *s = strrchr(buf, ')');
  int tty = 0;
  if (!s || sscanf(s + 2, "%*c %*d %*d %*d %d", &tty) != 1) return -EIO;
  unsigned maj = ((unsigned)tty >> 8) & 0xfff, min = ((unsigned)tty & 0xff) | (((unsigned)tty >> 12) & 0xfff00);
  if (tty == 0 || maj < 136 || maj > 143) return -ENXIO;
  char pts[32];
  snprintf(pts, sizeof pts, "dev/pts/%u", (maj - 136) * 256 + min);
  int root = cmd_root(r);
  if (root < 0) return -errno;
  fd = openat(root, pts, (flags & ~(O_CREAT | O_EXCL | O_TRUNC)) | O_NOCTTY | O_NOFOLLOW | O_CLOEXEC);
  return fd < 0 ? -errno : fd;
}

// May the command change what our descriptor obj stands for (reached through /proc, a magic link
// or a descriptor of the command's)? Judged by its path, read into opath ("pipe:[N]" and the like
// have none to protect); a path too long to read is refused. 0 or an errno (a protected path is
// reported as op).
static int check_object(int obj, const char *op, char *opath, size_t size) {
  int err = fd_path(obj, opath, size);
  if (err) return err;
  if (init_proc_fd(obj)) return EACCES;
  if (opath[0] == '/' && protected_path(opath, 1, 0, &rule)) return refuse(op, opath, &rule);
  return 0;
}

// Open what the O_PATH descriptor obj stands for (a /proc entry, a magic link's target) with
// flags, once its path is checked. Consumes obj. 0 with *fd_out, -1 (a worker replies) or errno.
static int open_object(struct req *r, int obj, int flags, int *fd_out) {
  char opath[LONG_PATH];
  struct stat st;
  // Reads come here too (the read gate): init's own /proc entries are never opened for the
  // command, a read-denied file is hidden, a protected one is not opened for writing.
  int err = fd_path(obj, opath, sizeof opath);
  if (!err && init_proc_fd(obj)) err = EACCES;
  int named = !err && opath[0] == '/';
  if (named && gate_active() && fstat(obj, &st) == 0 && gate_hidden(opath, 0, &st)) err = EACCES;
  else if (named && (flags & (O_ACCMODE | O_TRUNC | O_CREAT)) && protected_path(opath, 1, 0, &rule)) err = refuse("write", opath, &rule);
  if (err) {
    close(obj);
    return err;
  }
  if (fstat(obj, &st) == 0 && S_ISFIFO(st.st_mode) && !(flags & O_NONBLOCK)) {
    char p[64];
    snprintf(p, sizeof p, "/proc/self/fd/%d", obj);
    int fd = open(p, (flags & ~(O_CREAT | O_EXCL | O_TRUNC)) | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd >= 0) {
      close(obj);
      if (fcntl(fd, F_SETFL, flags & (O_APPEND | O_ASYNC | O_DIRECT | O_NOATIME)) != 0) { int e = errno; close(fd); return e; }
      *fd_out = fd;
      return 0;
    }
    if (errno != ENXIO) { int e = errno; close(obj); return e; }
    err = open_fifo_later(r, obj, flags);
    if (err) close(obj);
    return err ? err : -1;
  }
  char p[64];
  snprintf(p, sizeof p, "/proc/self/fd/%d", obj);
  int fd = open(p, (flags & ~(O_CREAT | O_EXCL)) | O_NOCTTY | O_CLOEXEC);
  err = fd < 0 ? errno : 0;
  close(obj);
  *fd_out = fd;
  return err;
}

// open/openat/creat: 0 with *fd_out set, -1 when a worker will reply, else an errno.
int do_open(struct req *r, int dirfd, const char *path, int flags, mode_t mode, int *fd_out) {
  struct loc l;
  int links = 0;
  int err = locate(r, dirfd, -1, NULL, path, &l);
  if (err) return err;
  int creating = flags & O_CREAT;
  int tmpfile = (flags & __O_TMPFILE) == __O_TMPFILE;
  // Only a read-only open gets here unless it can write: when the read gate is on (readgate.c).
  int writing = (flags & (O_ACCMODE | O_TRUNC | O_CREAT)) || tmpfile;
  mode &= 07777 & ~(S_ISUID | S_ISGID);
  for (;;) {
    if (l.slash || l.dot || tmpfile) {
      // The path names a directory: only O_TMPFILE can write there.
      if (creating && !tmpfile) { loc_free(&l); return EISDIR; }
      // The name as spelled first: it may be a symlink (followed below) a deny glob matches.
      if (gate_has_globs() && !l.dot && gate_hidden(l.full, 0, NULL)) { loc_free(&l); return EACCES; }
      int dir = openat(l.parent, l.leaf, O_PATH | O_DIRECTORY | O_CLOEXEC);
      if (dir < 0) { err = errno; loc_free(&l); return err; }
      char dpath[LONG_PATH];
      err = fd_path(dir, dpath, sizeof dpath);
      loc_free(&l);
      if (err) { close(dir); return err; }
      struct stat dst;
      if (gate_active() && fstat(dir, &dst) == 0 && gate_hidden(dpath, 0, writing ? NULL : &dst)) { close(dir); return EACCES; }
      if (!writing) {
        int fd = openat(dir, ".", (flags & ~O_NOFOLLOW) | O_CLOEXEC);
        err = fd < 0 ? errno : 0;
        close(dir);
        *fd_out = fd;
        return err;
      }
      if (!tmpfile) { close(dir); return EISDIR; }
      if (protected_path(dpath, 1, 0, &rule)) { close(dir); return refuse("create in", dpath, &rule); }
      err = with_umask(r);
      int fd = err ? -1 : openat(dir, ".", flags | O_CLOEXEC, mode);
      if (fd < 0 && !err) err = errno;
      close(dir);
      *fd_out = fd;
      return err;
    }
    if (is_proc_path(l.dir)) {
      // In the command's /proc: find what the name stands for without opening it, check that,
      // then open it.
      int obj = openat(l.parent, l.leaf, O_PATH | O_CLOEXEC | (flags & O_NOFOLLOW));
      if (obj < 0) { err = errno == ENOENT && creating ? EACCES : errno; loc_free(&l); return err; }
      loc_free(&l);
      if (creating && (flags & O_EXCL)) { close(obj); return EEXIST; }
      return open_object(r, obj, flags, fd_out);
    }
    // Only a `.git` or a marker needs to be known to exist before the check; anything else is
    // opened with O_NOFOLLOW and the answer tells (ELOOP: a symlink to follow).
    int known = strcmp(l.leaf, ".git") == 0 || is_marker(l.leaf);
    struct stat st;
    int exists = 0;
    if (known) {
      exists = fstatat(l.parent, l.leaf, &st, AT_SYMLINK_NOFOLLOW) == 0;
      if (!exists && errno != ENOENT) { err = errno; loc_free(&l); return err; }
    }
    if (writing && gate_active() && gate_hidden(l.full, 0, NULL)) { loc_free(&l); return EACCES; }
    if (writing && protected_path(l.full, exists, 0, &rule)) {
      if (!known) exists = fstatat(l.parent, l.leaf, &st, AT_SYMLINK_NOFOLLOW) == 0;
      loc_free(&l);
      return refuse(exists ? "write" : "create", l.full, &rule);
    }
    if ((err = creating ? with_umask(r) : 0)) { loc_free(&l); return err; }
    // O_NONBLOCK: a FIFO without a reader must not make this thread wait (ENXIO, handled below).
    int fd = openat(l.parent, l.leaf, flags | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC | O_NONBLOCK, mode);
    if (fd >= 0 && !writing) {
      // What this open reached, whatever is mounted there now (a mask a host rename detached).
      if (fstat(fd, &st) != 0 || gate_hidden(l.full, 0, &st)) { close(fd); loc_free(&l); return EACCES; }
      if (S_ISFIFO(st.st_mode) && !(flags & O_NONBLOCK)) {
        // A FIFO's reader waits for a writer: in a worker, so that nothing else waits.
        close(fd);
        int obj = openat(l.parent, l.leaf, O_PATH | O_NOFOLLOW | O_CLOEXEC);
        loc_free(&l);
        if (obj < 0) return errno;
        err = open_fifo_later(r, obj, flags);
        if (err) close(obj);
        return err ? err : -1;
      }
    }
    if (fd >= 0) {
      if (!(flags & O_NONBLOCK) && fcntl(fd, F_SETFL, flags & (O_APPEND | O_ASYNC | O_DIRECT | O_NOATIME)) != 0) {
        err = errno;
        close(fd);
        loc_free(&l);
        return err;
      }
      if (known && !exists) created(&l, 1);
      if (!(flags & O_NONBLOCK) && fstat(fd, &st) == 0 && S_ISCHR(st.st_mode) && st.st_rdev == makedev(5, 0)) {
        // /dev/tty means the caller's controlling terminal: the command's, not init's.
        close(fd);
        loc_free(&l);
        fd = open_ctty(r, flags);
        if (fd < 0) return -fd;
        *fd_out = fd;
        return 0;
      }
      loc_free(&l);
      *fd_out = fd;
      return 0;
    }
    err = errno;
    if (err == ELOOP && !(flags & O_NOFOLLOW) &&
        fstatat(l.parent, l.leaf, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode)) {
      if (creating && (flags & O_EXCL)) { loc_free(&l); return EEXIST; }
      // A symlink whose own name a deny glob matches is not a way in.
      if (gate_has_globs() && gate_hidden(l.full, 0, NULL)) { loc_free(&l); return EACCES; }
      if ((err = follow(r, &l, &links))) return err;
      continue;
    }
    if (err == ENXIO && !(flags & O_NONBLOCK)) {
      // A FIFO with no reader yet, or /dev/tty: look at what it is.
      int obj = openat(l.parent, l.leaf, O_PATH | O_NOFOLLOW | O_CLOEXEC);
      loc_free(&l);
      if (obj < 0) return errno;
      if (fstat(obj, &st) == 0 && S_ISCHR(st.st_mode) && st.st_rdev == makedev(5, 0)) {
        close(obj);
        fd = open_ctty(r, flags);
        if (fd < 0) return -fd;
        *fd_out = fd;
        return 0;
      }
      if (!S_ISFIFO(st.st_mode)) { close(obj); return ENXIO; }
      err = open_fifo_later(r, obj, flags);
      if (err) close(obj);
      return err ? err : -1;
    }
    loc_free(&l);
    return err;
  }
}

int do_mkdir(struct req *r, int dirfd, const char *path, mode_t mode) {
  struct loc l;
  int err = locate(r, dirfd, -1, NULL, path, &l);
  if (err) return err;
  if (l.dot) { loc_free(&l); return EEXIST; }
  struct stat st;
  int exists = fstatat(l.parent, l.leaf, &st, AT_SYMLINK_NOFOLLOW) == 0;
  if (exists) err = EEXIST;
  else if (gate_hidden(l.full, 0, NULL)) err = EACCES;
  else if (protected_path(l.full, 0, 0, &rule)) err = refuse("create", l.full, &rule);
  else if (!(err = with_umask(r))) {
    if (mkdirat(l.parent, l.leaf, mode & 07777 & ~(S_ISUID | S_ISGID)) != 0) err = errno;
    else created(&l, 1);
  }
  loc_free(&l);
  return err;
}

int do_mknod(struct req *r, int dirfd, const char *path, mode_t mode, dev_t dev) {
  struct loc l;
  int err = locate(r, dirfd, -1, NULL, path, &l);
  if (err) return err;
  if (l.dot || l.slash) { loc_free(&l); return EEXIST; }
  struct stat st;
  if (fstatat(l.parent, l.leaf, &st, AT_SYMLINK_NOFOLLOW) == 0) err = EEXIST;
  else if (gate_hidden(l.full, 0, NULL)) err = EACCES;
  else if (protected_path(l.full, 0, 0, &rule)) err = refuse("create", l.full, &rule);
  else if (!(err = with_umask(r))) {
    if (mknodat(l.parent, l.leaf, mode & ~(S_ISUID | S_ISGID), dev) != 0) err = errno;
    else created(&l, 1);
  }
  loc_free(&l);
  return err;
}

int do_symlink(struct req *r, const char *target, int dirfd, const char *path) {
  struct loc l;
  int err = locate(r, dirfd, -1, NULL, path, &l);
  if (err) return err;
  struct stat st;
  if (l.dot || l.slash || fstatat(l.parent, l.leaf, &st, AT_SYMLINK_NOFOLLOW) == 0) err = EEXIST;
  else if (gate_hidden(l.full, 0, NULL)) err = EACCES;
  else if (protected_path(l.full, 0, 1, &rule)) err = refuse("create", l.full, &rule);
  else if (symlinkat(target, l.parent, l.leaf) != 0) err = errno;
  else created(&l, 1);
  loc_free(&l);
  return err;
}

int do_unlink(struct req *r, int dirfd, const char *path, int flags) {
  if (flags & ~AT_REMOVEDIR) return EINVAL;
  struct loc l;
  int err = locate(r, dirfd, -1, NULL, path, &l);
  if (err) return err;
  int rmdir_ = flags & AT_REMOVEDIR;
  if (l.dot) err = !rmdir_ ? EISDIR : strcmp(l.leaf, ".") == 0 ? EINVAL : ENOTEMPTY;
  else {
    struct stat st;
    if (fstatat(l.parent, l.leaf, &st, AT_SYMLINK_NOFOLLOW) != 0) err = errno;
    else if (l.slash && !S_ISDIR(st.st_mode)) err = ENOTDIR;
    else if (l.slash && !rmdir_) err = EISDIR;
    else if (gate_hidden(l.full, S_ISDIR(st.st_mode), NULL)) err = EACCES;
    else if (protected_path(l.full, 1, 0, &rule)) err = refuse("remove", l.full, &rule);
    else if (unlinkat(l.parent, l.leaf, rmdir_) != 0) err = errno;
    else if (S_ISDIR(st.st_mode) || strcmp(l.leaf, ".git") == 0) forget_made(&st);
  }
  loc_free(&l);
  return err;
}

int do_rename(struct req *r, int odirfd, const char *opath, int ndirfd, const char *npath,
                     unsigned flags) {
  struct loc o, n;
  int err = locate(r, odirfd, -1, NULL, opath, &o);
  if (err) return err;
  if ((err = locate(r, ndirfd, -1, NULL, npath, &n))) { loc_free(&o); return err; }
  struct stat st, nst;
  if (o.dot || n.dot) err = EBUSY;
  else if (fstatat(o.parent, o.leaf, &st, AT_SYMLINK_NOFOLLOW) != 0) err = errno;
  else if ((o.slash || n.slash) && !S_ISDIR(st.st_mode)) err = ENOTDIR;
  else {
    int tree = S_ISDIR(st.st_mode) || S_ISLNK(st.st_mode);
    int nexists = fstatat(n.parent, n.leaf, &nst, AT_SYMLINK_NOFOLLOW) == 0;
    int ntree = nexists && (S_ISDIR(nst.st_mode) || S_ISLNK(nst.st_mode));
    int exchange = flags & RENAME_EXCHANGE;
    // A denied path (or a directory holding one) gets no other name, and none is put in its place;
    // a directory a deny glob may reach into does not move where the glob would not reach.
    if (gate_hidden(o.full, tree, NULL) || gate_hidden(n.full, ntree, NULL)) err = EACCES;
    else if ((tree && gate_moves(o.full, n.full)) || (exchange && ntree && gate_moves(n.full, o.full))) err = EACCES;
    else if (protected_path(o.full, 1, exchange && ntree, &rule)) err = refuse("move", o.full, &rule);
    else if (protected_path(n.full, nexists, tree, &rule)) err = refuse(nexists ? "replace" : "create", n.full, &rule);
    else if (syscall(SYS_renameat2, o.parent, o.leaf, n.parent, n.leaf, flags) != 0) err = errno;
    else {
      // An exchange or a replacement puts nothing new in place.
      if (!nexists) created(&n, 0);
      else if (ntree && !exchange) forget_made(&nst);
    }
  }
  loc_free(&o);
  loc_free(&n);
  return err;
}

int do_link(struct req *r, int odirfd, const char *opath, int ndirfd, const char *npath, int flags) {
  if (flags & ~(AT_SYMLINK_FOLLOW | AT_EMPTY_PATH)) return EINVAL;
  struct loc n;
  int err;
  int obj = -1; // the source as an object (an empty path, or a /proc link), else o.parent/o.leaf
  struct loc o = {.parent = -1};
  char opathbuf[LONG_PATH + NAME_MAX + 2];
  if (opath[0] == '\0' && (flags & AT_EMPTY_PATH)) {
    int pidfd = syscall(SYS_pidfd_open, r->pid, 0);
    if (pidfd < 0) return errno;
    obj = syscall(SYS_pidfd_getfd, pidfd, odirfd, 0);
    err = obj < 0 ? (errno == EBADF ? EBADF : errno) : 0;
    close(pidfd);
    if (err) return err;
  } else {
    int links = 0;
    if ((err = locate(r, odirfd, -1, NULL, opath, &o))) return err;
    for (;;) {
      struct stat st;
      if (is_proc_path(o.dir)) {
        obj = openat(o.parent, o.leaf, O_PATH | O_CLOEXEC | ((flags & AT_SYMLINK_FOLLOW) ? 0 : O_NOFOLLOW));
        err = obj < 0 ? errno : 0;
        loc_free(&o);
        if (err) return err;
        break;
      }
      if (!(flags & AT_SYMLINK_FOLLOW) || fstatat(o.parent, o.leaf, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
          !S_ISLNK(st.st_mode))
        break;
      if ((err = follow(r, &o, &links))) return err;
    }
  }
  if (obj >= 0) err = fd_path(obj, opathbuf, sizeof opathbuf);
  else snprintf(opathbuf, sizeof opathbuf, "%s", o.full);
  if (!err && obj >= 0 && init_proc_fd(obj)) err = EACCES;
  if (!err && opathbuf[0] == '/' && gate_hidden(opathbuf, 0, NULL)) err = EACCES;
  if (!err && opathbuf[0] == '/' && protected_path(opathbuf, 1, 0, &rule)) err = refuse("link", opathbuf, &rule);
  if (!err) err = locate(r, ndirfd, -1, NULL, npath, &n);
  else n.parent = -1;
  if (!err) {
    struct stat st;
    if (n.dot || n.slash || fstatat(n.parent, n.leaf, &st, AT_SYMLINK_NOFOLLOW) == 0) err = EEXIST;
    else if (gate_hidden(n.full, 0, NULL)) err = EACCES;
    else if (protected_path(n.full, 0, 0, &rule)) err = refuse("create", n.full, &rule);
    else {
      int ret;
      if (obj >= 0 && (flags & AT_EMPTY_PATH) && opath[0] == '\0') {
        ret = linkat(obj, "", n.parent, n.leaf, AT_EMPTY_PATH);
      } else if (obj >= 0) {
        char p[64];
        snprintf(p, sizeof p, "/proc/self/fd/%d", obj);
        ret = linkat(AT_FDCWD, p, n.parent, n.leaf, AT_SYMLINK_FOLLOW);
      } else {
        ret = linkat(o.parent, o.leaf, n.parent, n.leaf, 0);
      }
      if (ret != 0) err = errno;
      else created(&n, 1);
    }
  }
  if (obj >= 0) close(obj);
  loc_free(&o);
  loc_free(&n);
  return err;
}

int do_truncate(struct req *r, const char *path, off_t len) {
  int fd = -1;
  int err = do_open(r, AT_FDCWD, path, O_WRONLY | O_NONBLOCK, 0, &fd);
  if (err == -1) return EINVAL; // a FIFO
  if (err) return err;
  err = ftruncate(fd, len) != 0 ? errno : 0;
  close(fd);
  return err;
}


// ---------------------------------------------------------------- attributes
//
//
// Calls that change what a file is without naming anything new: its mode, owner, and extended
// attributes (a POSIX ACL in system.posix_acl_access rewrites the mode bits; other attributes are
// refused on a protected file all the same). They act on an object found by path or descriptor,
// judged like a write, then changed through an O_PATH descriptor of ours.


static const char *const attr_op[] = {"chmod", "chown", "setxattr", "removexattr"};

// Change obj (O_PATH) as a says. 0 or an errno.
static int apply_attr(int obj, const struct attr *a) {
  char p[64];
  snprintf(p, sizeof p, "/proc/self/fd/%d", obj);
  struct stat st;
  switch (a->kind) {
  case ATTR_MODE:
    if (a->mode & (S_ISUID | S_ISGID)) return EPERM; // the filter refuses these already
    if (fstat(obj, &st) == 0 && S_ISLNK(st.st_mode)) return EOPNOTSUPP; // a link has no mode
    return fchmodat(AT_FDCWD, p, a->mode, 0) != 0 ? errno : 0;
  case ATTR_OWNER:
    return fchownat(obj, "", a->uid, a->gid, AT_EMPTY_PATH) != 0 ? errno : 0;
  // Through the magic link, which lands on obj itself (a symlink too: it is not followed again).
  case ATTR_SETX:
    return setxattr(p, a->name, a->value, a->size, a->xflags) != 0 ? errno : 0;
  case ATTR_REMOVEX:
    return removexattr(p, a->name) != 0 ? errno : 0;
  }
  return EINVAL;
}

// Check and change an object (reached through /proc or a descriptor). Consumes obj.
static int change_object(int obj, const struct attr *a) {
  char opath[LONG_PATH];
  int err = check_object(obj, attr_op[a->kind], opath, sizeof opath);
  if (!err) err = apply_attr(obj, a);
  close(obj);
  return err;
}

// fchmod, fchown, fsetxattr, fremovexattr, and the *at calls with AT_EMPTY_PATH: the command's
// descriptor fd (or its cwd). O_PATH descriptors are accepted (the kernel refuses some with EBADF).
int attr_fd(struct req *r, int fd, const struct attr *a) {
  char what[32];
  if (fd == AT_FDCWD) snprintf(what, sizeof what, "cwd");
  else if (fd < 0) return EBADF;
  else snprintf(what, sizeof what, "fd/%d", fd);
  int obj = proc_open(r, what, O_PATH);
  if (obj < 0) return EBADF;
  return change_object(obj, a);
}

// The path calls: the object path names from dirfd, symlinks followed unless AT_SYMLINK_NOFOLLOW
// (a trailing slash follows one all the same); an empty path is dirfd with AT_EMPTY_PATH.
int attr_at(struct req *r, int dirfd, const char *path, int flags, const struct attr *a) {
  if (flags & ~(AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH)) return EINVAL;
  if (path[0] == '\0') return (flags & AT_EMPTY_PATH) ? attr_fd(r, dirfd, a) : ENOENT;
  int nofollow = flags & AT_SYMLINK_NOFOLLOW, links = 0;
  struct loc l;
  int err = locate(r, dirfd, -1, NULL, path, &l);
  if (err) return err;
  for (;;) {
    if (is_proc_path(l.dir)) {
      // A magic link is resolved by the kernel, then judged by where it led.
      int obj = openat(l.parent, l.leaf, O_PATH | O_CLOEXEC | (nofollow ? O_NOFOLLOW : 0));
      err = obj < 0 ? errno : change_object(obj, a);
      break;
    }
    int obj = openat(l.parent, l.leaf, O_PATH | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    if (obj < 0 || fstat(obj, &st) != 0) {
      err = errno;
      if (obj >= 0) close(obj);
      break;
    }
    if (S_ISLNK(st.st_mode) && (!nofollow || l.slash)) {
      close(obj);
      if ((err = follow(r, &l, &links))) return err;
      continue;
    }
    if (l.slash && !S_ISDIR(st.st_mode)) { close(obj); err = ENOTDIR; }
    // `.` and `..` name a directory whose lexical path is not where it is.
    else if (l.dot) err = change_object(obj, a);
    else {
      err = protected_path(l.full, 1, 0, &rule) ? refuse(attr_op[a->kind], l.full, &rule) : apply_attr(obj, a);
      close(obj);
    }
    break;
  }
  loc_free(&l);
  return err;
}

