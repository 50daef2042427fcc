// The protected-path supervisor: a seccomp user-notification listener that performs, on the
// command's behalf, every call that can create, replace, remove or re-point a name (SPEC §3,
// invariant 10), after checking the name against srt's rules. No host placeholder is needed:
// a protected name that does not exist simply cannot be made, at any depth.
//
// Why perform instead of allowing (SECCOMP_USER_NOTIF_FLAG_CONTINUE): the kernel would read the
// path from the command's memory a second time, after the check, and another thread (or another
// process writing that memory) can rewrite it in between. So the path is read once, into our own
// buffer, and every decision and the call itself use that copy; a new descriptor goes back to the
// command with SECCOMP_IOCTL_NOTIF_ADDFD + SECCOMP_ADDFD_FLAG_SEND.
//
// Where it runs: a thread of init, the nested PID namespace's PID 1, started after init has
// mounted the command's /proc, dropped every capability and taken its Landlock domain. The
// command is forked from init afterwards, so it holds that very Landlock domain: every call
// performed here is judged by the command's own Landlock rules, and Landlock lets this thread
// read the command's memory (a process outside the domain could not). It is as untouchable as
// init: non-dumpable (the command can neither ptrace it nor read its memory or descriptors),
// immune to the namespace's SIGKILL/SIGSTOP, other signals blocked. If it dies, init dies and the
// kernel kills everything in the namespace: no call is ever let through unchecked.
//
// Report (--report-fd): see "report" below.
//
// It also watches every connect() for the refusal report and lets it go on unchanged (loopback.c).
//
// This file: the notification loop (reading each call's arguments from the command's memory,
// dispatching it, answering) and the setup. rules.c decides, resolve.c finds where a path lands,
// emulate.c performs the calls.

#include "supervisor.h"

#include <fcntl.h>
#include <limits.h>
#include <linux/audit.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/xattr.h>
#include <unistd.h>

#ifndef SECCOMP_IOCTL_NOTIF_SET_FLAGS
#define SECCOMP_IOCTL_NOTIF_SET_FLAGS SECCOMP_IOW(4, __u64)
#define SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP (1UL << 0)
#endif
// Distinct refusals reported; past this they are counted (an `N` record says how many).
#define MAX_REPORTED 1024
// New repositories followed to where they end up (an O_PATH descriptor each); past this srt
// searches the writable roots for them when the run ends (a `T` record says so).
#define MAX_FOLLOWED 512
// Marker records at most: a command creating HEAD files in a loop must not fill the disk.
#define MAX_CREATED 65536

static int report_fd = -1;
static int sup_sock[2] = {-1, -1};

// ---------------------------------------------------------------- report
//
// NUL-separated records on --report-fd, read by srt when the run ends:
//   R op path rule   a refused call (each distinct one once; rule: the verdict's kind and what)
//   C path           a created marker: a new repository's git dir may be there (`.git`, `HEAD`);
//                    written when made and again, where it ended up, when the run ends
//   N count          refusals past MAX_REPORTED, not listed
//   T                more new repositories than srt followed: it searches for them itself
//   K op path errno  a call the kernel refused with EACCES or EROFS (a read-only mount, Landlock,
//                    a read-denied path, the file's own permissions: srt tells them apart by its
//                    policy), each distinct one once
//   X                past MAX_KERNEL_REPORTED such calls, once instead of the rest
//   L addr port n    n TCP connections to loopback addr:port refused: nothing listened there
//                    inside (loopback.c), at the end, each pair once; `Y n` for the rest
// Written by the supervisor thread and, at the end, by init: under one lock.

static pthread_mutex_t report_lock = PTHREAD_MUTEX_INITIALIZER;
// Held by the supervisor thread for each call it performs; `finished`: it performs none any more.
static pthread_mutex_t handling = PTHREAD_MUTEX_INITIALIZER;
static int finished;
static uint64_t reported[MAX_REPORTED];
static int nreported;
static long unlisted;
static int followed[MAX_FOLLOWED];
static struct followed {
  dev_t dev;
  ino_t ino;
} followed_id[MAX_FOLLOWED];
static int nfollowed, ncreated, lost_track;

// One record, whole or not at all (under report_lock). 0 when it could not be put together.
static int put(const char *fields[], int n) {
  static char line[2 * LONG_PATH + 64];
  size_t len = 0;
  for (int i = 0; i < n; i++) {
    size_t l = strlen(fields[i]) + 1;
    if (len + l > sizeof line) return 0;
    memcpy(line + len, fields[i], l);
    len += l;
  }
  if (write(report_fd, line, len) < 0) { /* srt reads what arrived */ }
  return 1;
}

void report_refused(const char *op, const char *path, const struct verdict *why) {
  if (report_fd < 0) return;
  uint64_t h = 1469598103934665603ULL;
  for (const char *s = op; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ULL;
  h = (h ^ 0xff) * 1099511628211ULL;
  for (const char *s = path; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ULL;
  char rule[PATH_MAX + 2];
  snprintf(rule, sizeof rule, "%c%s", why->kind, why->what);
  pthread_mutex_lock(&report_lock);
  int seen = 0;
  for (int i = 0; i < nreported && !seen; i++) seen = reported[i] == h;
  if (!seen && nreported == MAX_REPORTED) unlisted++;
  else if (!seen) {
    reported[nreported++] = h;
    put((const char *[]){"R", op, path, rule}, 4);
  }
  pthread_mutex_unlock(&report_lock);
}

// A marker was made at path; dirfd (see supervisor.h) is the directory that may be a new git dir,
// kept to find where it is when the run ends, whatever it was renamed to. Consumes dirfd.
void report_created(const char *path, int dirfd) {
  if (report_fd < 0) {
    if (dirfd >= 0) close(dirfd);
    return;
  }
  int lost = dirfd == -1;
  struct stat st;
  if (dirfd >= 0 && fstat(dirfd, &st) != 0) {
    close(dirfd);
    dirfd = -1;
    lost = 1;
  }
  pthread_mutex_lock(&report_lock);
  if (lost) lost_track = 1;
  if (ncreated < MAX_CREATED && put((const char *[]){"C", path}, 2)) ncreated++;
  else lost_track = 1;
  // Each directory followed once (`git init` makes `.git` and `.git/HEAD`: the same git dir).
  for (int i = 0; i < nfollowed && dirfd >= 0; i++)
    if (followed_id[i].dev == st.st_dev && followed_id[i].ino == st.st_ino) {
      close(dirfd);
      dirfd = -1;
    }
  if (dirfd >= 0 && nfollowed < MAX_FOLLOWED) {
    followed_id[nfollowed] = (struct followed){st.st_dev, st.st_ino};
    followed[nfollowed++] = dirfd;
  } else if (dirfd >= 0) {
    lost_track = 1;
    close(dirfd);
  }
  pthread_mutex_unlock(&report_lock);
}

// In init, once the command has ended: no call is performed any more, and the report ends
// with where each new git dir is now.
void supervisor_finish(void) {
  pthread_mutex_lock(&handling);
  finished = 1;
  pthread_mutex_unlock(&handling);
  if (report_fd < 0) return;
  pthread_mutex_lock(&report_lock);
  for (int i = 0; i < nfollowed; i++) {
    char path[LONG_PATH];
    int err = fd_path(followed[i], path, sizeof path);
    if (err == ENAMETOOLONG) lost_track = 1;
    if (err == 0 && path[0] == '/' && !strstr(path, " (deleted)")) {
      char marker[LONG_PATH + 8];
      // The directory itself stands for a `.git` made there or for the git dir a HEAD was made in.
      snprintf(marker, sizeof marker, "%s/HEAD", path);
      if (!put((const char *[]){"C", marker}, 2)) lost_track = 1;
    }
  }
  if (unlisted) {
    char n[32];
    snprintf(n, sizeof n, "%ld", unlisted);
    put((const char *[]){"N", n}, 2);
  }
  if (lost_track) put((const char *[]){"T"}, 1);
  report_loopback(put);
  pthread_mutex_unlock(&report_lock);
}

#define MAX_KERNEL_REPORTED 4096
#define KERNEL_SLOTS 8192 // a power of two, twice the records: the probe stays short

void report_kernel_refusal(const char *op, const char *path, int err) {
  static uint64_t slots[KERNEL_SLOTS];
  static int count;
  if (report_fd < 0 || path[0] != '/' || is_proc_path(path)) return;
  uint64_t h = 1469598103934665603ULL;
  for (const char *s = op; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ULL;
  h = (h ^ 0xff) * 1099511628211ULL;
  for (const char *s = path; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ULL;
  if (h == 0) h = 1; // 0 marks an empty slot
  size_t i = h & (KERNEL_SLOTS - 1);
  while (slots[i] && slots[i] != h) i = (i + 1) & (KERNEL_SLOTS - 1);
  if (slots[i] == h || count > MAX_KERNEL_REPORTED) return;
  pthread_mutex_lock(&report_lock);
  if (count++ == MAX_KERNEL_REPORTED) put((const char *[]){"X"}, 1);
  else {
    slots[i] = h;
    put((const char *[]){"K", op, path, err == EROFS ? "EROFS" : "EACCES"}, 4);
  }
  pthread_mutex_unlock(&report_lock);
}

// ---------------------------------------------------------------- one notification

static int listener = -1;

static int notif_valid(struct req *r) {
  return ioctl(listener, SECCOMP_IOCTL_NOTIF_ID_VALID, &r->n->id) == 0;
}

// Let the call go on as the command made it (for calls the supervisor only watches).
static void reply_continue(struct req *r) {
  struct seccomp_notif_resp resp = {.id = r->n->id, .flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE};
  if (ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &resp) != 0 && errno != ENOENT) { /* interrupted */ }
}

void reply(struct req *r, long val, int err) {
  struct seccomp_notif_resp resp = {.id = r->n->id, .val = val, .error = err ? -err : 0};
  if (ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &resp) != 0 && errno != ENOENT) {
    // ENOENT: the call was interrupted (the command was killed meanwhile).
  }
}

void reply_fd(struct req *r, int fd, int cloexec) {
  struct seccomp_notif_addfd add = {
      .id = r->n->id, .flags = SECCOMP_ADDFD_FLAG_SEND, .srcfd = fd, .newfd = 0,
      .newfd_flags = cloexec ? O_CLOEXEC : 0};
  int ret = ioctl(listener, SECCOMP_IOCTL_NOTIF_ADDFD, &add);
  if (ret < 0 && errno != ENOENT) reply(r, 0, errno); // e.g. EMFILE in the command
  close(fd);
}

// Copy a NUL-terminated string from the command's memory: 0, or an errno.
static int read_string(struct req *r, uint64_t addr, char *buf, size_t size) {
  if (addr == 0) return EFAULT;
  size_t got = 0;
  long page = 4096;
  while (got < size) {
    size_t chunk = page - ((addr + got) % page);
    if (chunk > size - got) chunk = size - got;
    struct iovec local = {buf + got, chunk}, remote = {(void *)(uintptr_t)(addr + got), chunk};
    ssize_t n = process_vm_readv(r->pid, &local, 1, &remote, 1, 0);
    if (n <= 0) return errno == ESRCH ? ESRCH : (n == 0 || errno == EFAULT ? EFAULT : errno);
    char *nul = memchr(buf + got, '\0', n);
    if (nul) return 0;
    got += n;
    if ((size_t)n < chunk) return EFAULT;
  }
  return ENAMETOOLONG;
}


// Syscall numbers by architecture (asm/unistd_64.h, asm-generic/unistd.h; setxattrat and
// removexattrat, Linux 6.13, share one number everywhere); -1: none there.
enum op {
  OP_OPEN, OP_CREAT, OP_OPENAT, OP_MKDIR, OP_MKDIRAT, OP_MKNOD, OP_MKNODAT, OP_SYMLINK,
  OP_SYMLINKAT, OP_LINK, OP_LINKAT, OP_UNLINK, OP_UNLINKAT, OP_RMDIR, OP_RENAME, OP_RENAMEAT,
  OP_RENAMEAT2, OP_TRUNCATE, OP_CHMOD, OP_FCHMOD, OP_FCHMODAT, OP_FCHMODAT2, OP_UMASK,
  OP_CHOWN, OP_FCHOWN, OP_LCHOWN, OP_FCHOWNAT, OP_SETXATTR, OP_LSETXATTR, OP_FSETXATTR,
  OP_SETXATTRAT, OP_REMOVEXATTR, OP_LREMOVEXATTR, OP_FREMOVEXATTR, OP_REMOVEXATTRAT, OP_COUNT
};
#if defined(__x86_64__)
#define OUR_ARCH AUDIT_ARCH_X86_64
#define NR_CONNECT 42
static const int op_nr[OP_COUNT] = {2, 85, 257, 83, 258, 133, 259, 88, 266, 86, 265,
                                    87, 263, 84, 82, 264, 316, 76, 90, 91, 268, 452, 95,
                                    92, 93, 94, 260, 188, 189, 190, 463, 197, 198, 199, 466};
#elif defined(__aarch64__)
#define OUR_ARCH AUDIT_ARCH_AARCH64
#define NR_CONNECT 203
static const int op_nr[OP_COUNT] = {-1, -1, 56, -1, 34, -1, 33, -1, 36, -1, 37,
                                    -1, 35, -1, -1, -1, 276, 45, -1, 52, 53, 452, 166,
                                    -1, 55, -1, 54, 5, 6, 7, 463, 14, 15, 16, 466};
#else
#error "srt-init supports x86_64 and aarch64"
#endif

#define XATTR_ARGS_SIZE_VER0 16 // <linux/xattr.h>

static int read_bytes(struct req *r, uint64_t addr, void *buf, size_t len) {
  if (len == 0) return 0;
  struct iovec local = {buf, len}, remote = {(void *)(uintptr_t)addr, len};
  ssize_t n = process_vm_readv(r->pid, &local, 1, &remote, 1, 0);
  if (n < 0) return errno == ESRCH ? ESRCH : EFAULT;
  return (size_t)n == len ? 0 : EFAULT;
}

// An extended attribute's name (and value, for a set) from the command's memory, checked as the
// kernel checks them; the buffers are static, as is the rest of one notification's state.
static int read_xattr(struct req *r, struct attr *x, uint64_t name, uint64_t value, uint64_t size, uint64_t flags) {
  static char nbuf[XATTR_NAME_MAX + 1], vbuf[XATTR_SIZE_MAX];
  int err = read_string(r, name, nbuf, sizeof nbuf);
  if (err) return err == ENAMETOOLONG ? ERANGE : err;
  if (nbuf[0] == '\0') return ERANGE;
  x->name = nbuf;
  if (x->kind == ATTR_REMOVEX) return 0;
  if (flags & ~(uint64_t)(XATTR_CREATE | XATTR_REPLACE)) return EINVAL;
  if (size > XATTR_SIZE_MAX) return E2BIG;
  x->xflags = (int)flags;
  x->size = size;
  x->value = vbuf;
  return read_bytes(r, value, vbuf, size);
}

// setxattrat's struct xattr_args {u64 value; u32 size; u32 flags} (usize bytes, any beyond the
// first version zero), then the attribute.
static int read_xattr_args(struct req *r, struct attr *x, uint64_t name, uint64_t uargs, uint64_t usize) {
  unsigned char buf[4096];
  if (usize < XATTR_ARGS_SIZE_VER0) return EINVAL;
  if (usize > sizeof buf) return E2BIG;
  int err = read_bytes(r, uargs, buf, usize);
  if (err) return err;
  for (size_t i = XATTR_ARGS_SIZE_VER0; i < usize; i++)
    if (buf[i]) return E2BIG;
  uint64_t value;
  uint32_t size, flags;
  memcpy(&value, buf, 8);
  memcpy(&size, buf + 8, 4);
  memcpy(&flags, buf + 12, 4);
  return read_xattr(r, x, name, value, size, flags);
}

// Calls newer than some kernels srt runs on: performed here through older ones, so the command
// would see a call its kernel lacks. Asked once with arguments every kernel that has it refuses.
static int kernel_lacks(int op) {
  static signed char lacks[OP_COUNT];
  if (op != OP_FCHMODAT2 && op != OP_SETXATTRAT && op != OP_REMOVEXATTRAT) return 0;
  if (lacks[op] == 0) lacks[op] = syscall(op_nr[op], -1, NULL, 0, NULL, NULL, 0) < 0 && errno == ENOSYS ? 1 : -1;
  return lacks[op] == 1;
}

// What a call does, in the words of the report.
static const char *op_word(int op, const __u64 *a) {
  switch (op) {
  case OP_OPEN: return (a[1] & (O_ACCMODE | O_TRUNC | O_CREAT)) ? "write" : "read";
  case OP_OPENAT: return (a[2] & (O_ACCMODE | O_TRUNC | O_CREAT)) ? "write" : "read";
  case OP_CREAT: case OP_TRUNCATE: return "write";
  case OP_MKDIR: case OP_MKDIRAT: return "mkdir";
  case OP_MKNOD: case OP_MKNODAT: case OP_SYMLINK: case OP_SYMLINKAT: case OP_LINK: case OP_LINKAT: return "create";
  case OP_UNLINK: case OP_UNLINKAT: case OP_RMDIR: return "remove";
  case OP_RENAME: case OP_RENAMEAT: case OP_RENAMEAT2: return "move";
  case OP_CHMOD: case OP_FCHMOD: case OP_FCHMODAT: case OP_FCHMODAT2: return "chmod";
  case OP_CHOWN: case OP_FCHOWN: case OP_LCHOWN: case OP_FCHOWNAT: return "chown";
  case OP_SETXATTR: case OP_LSETXATTR: case OP_FSETXATTR: case OP_SETXATTRAT: return "setxattr";
  default: return "removexattr";
  }
}

static void handle(struct seccomp_notif *n) {
  struct req r = {.n = n, .pid = n->pid, .root = -1};
  const __u64 *a = n->data.args;
  if (n->data.arch == OUR_ARCH && n->data.nr == NR_CONNECT) {
    // Only watched (loopback.c): the call goes on unchanged, whatever its address was.
    unsigned char sa[sizeof(struct sockaddr_in6)];
    size_t len = (uint32_t)a[2] < sizeof sa ? (uint32_t)a[2] : sizeof sa;
    struct watched w;
    // Judged while the call is held: a server that stops right after would otherwise be gone
    // before it is looked for, and its connection counted as refused.
    if (read_bytes(&r, a[1], sa, len) == 0 && watch_connect(&r, (int)a[0], sa, len, &w) && notif_valid(&r)) judge_connect(&w);
    reply_continue(&r);
    return;
  }
  int op = -1;
  for (int i = 0; i < OP_COUNT; i++)
    if (op_nr[i] == n->data.nr) op = i;
  if (n->data.arch != OUR_ARCH || op < 0 || kernel_lacks(op)) { reply(&r, 0, ENOSYS); return; }
  if (op == OP_UMASK) {
    umask_changed();
    reply_continue(&r);
    return;
  }
  static char p1[PATH_MAX], p2[PATH_MAX];
  int err = 0, fd = -1;
  forget_resolved();
  struct attr at = {.kind = ATTR_MODE};
  // Which arguments are paths: read them all (and an attribute's name and value) before the
  // validity check.
  switch (op) {
  case OP_OPEN: case OP_CREAT: case OP_MKDIR: case OP_MKNOD: case OP_UNLINK: case OP_RMDIR:
  case OP_TRUNCATE: case OP_CHMOD: case OP_CHOWN: case OP_LCHOWN:
    err = read_string(&r, a[0], p1, sizeof p1); break;
  case OP_OPENAT: case OP_MKDIRAT: case OP_MKNODAT: case OP_UNLINKAT: case OP_FCHMODAT:
  case OP_FCHMODAT2: case OP_FCHOWNAT:
    err = read_string(&r, a[1], p1, sizeof p1); break;
  case OP_SYMLINK: case OP_LINK: case OP_RENAME:
    err = read_string(&r, a[0], p1, sizeof p1);
    if (!err) err = read_string(&r, a[1], p2, sizeof p2);
    break;
  case OP_SYMLINKAT:
    err = read_string(&r, a[0], p1, sizeof p1);
    if (!err) err = read_string(&r, a[2], p2, sizeof p2);
    break;
  case OP_LINKAT: case OP_RENAMEAT: case OP_RENAMEAT2:
    err = read_string(&r, a[1], p1, sizeof p1);
    if (!err) err = read_string(&r, a[3], p2, sizeof p2);
    break;
  case OP_SETXATTR: case OP_LSETXATTR:
    at.kind = ATTR_SETX;
    err = read_string(&r, a[0], p1, sizeof p1);
    if (!err) err = read_xattr(&r, &at, a[1], a[2], a[3], a[4]);
    break;
  case OP_FSETXATTR:
    at.kind = ATTR_SETX;
    err = read_xattr(&r, &at, a[1], a[2], a[3], a[4]);
    break;
  case OP_REMOVEXATTR: case OP_LREMOVEXATTR:
    at.kind = ATTR_REMOVEX;
    err = read_string(&r, a[0], p1, sizeof p1);
    if (!err) err = read_xattr(&r, &at, a[1], 0, 0, 0);
    break;
  case OP_FREMOVEXATTR:
    at.kind = ATTR_REMOVEX;
    err = read_xattr(&r, &at, a[1], 0, 0, 0);
    break;
  case OP_SETXATTRAT: case OP_REMOVEXATTRAT:
    at.kind = op == OP_SETXATTRAT ? ATTR_SETX : ATTR_REMOVEX;
    // No path at all means an empty one with AT_EMPTY_PATH (getname_maybe_null).
    if (a[1] == 0 && (a[2] & AT_EMPTY_PATH)) p1[0] = '\0';
    else err = read_string(&r, a[1], p1, sizeof p1);
    if (!err) err = op == OP_SETXATTRAT ? read_xattr_args(&r, &at, a[3], a[4], a[5]) : read_xattr(&r, &at, a[3], 0, 0, 0);
    break;
  case OP_FCHMOD: case OP_FCHOWN: case OP_UMASK: break;
  }
  // The pid could have been reused if the caller died meanwhile: what was read must be its.
  if (!notif_valid(&r)) return;
  if (err) { reply(&r, 0, err == ESRCH ? EPERM : err); return; }
  int d0 = (int)a[0], d2 = (int)a[2];
  struct attr mode = {.kind = ATTR_MODE, .mode = (mode_t)a[op == OP_CHMOD || op == OP_FCHMOD ? 1 : 2]};
  struct attr own = {.kind = ATTR_OWNER, .uid = (uid_t)a[op == OP_FCHOWNAT ? 2 : 1], .gid = (gid_t)a[op == OP_FCHOWNAT ? 3 : 2]};
  switch (op) {
  case OP_OPEN: err = do_open(&r, AT_FDCWD, p1, (int)a[1], (mode_t)a[2], &fd); break;
  case OP_CREAT: err = do_open(&r, AT_FDCWD, p1, O_CREAT | O_WRONLY | O_TRUNC, (mode_t)a[1], &fd); break;
  case OP_OPENAT: err = do_open(&r, d0, p1, (int)a[2], (mode_t)a[3], &fd); break;
  case OP_MKDIR: err = do_mkdir(&r, AT_FDCWD, p1, (mode_t)a[1]); break;
  case OP_MKDIRAT: err = do_mkdir(&r, d0, p1, (mode_t)a[2]); break;
  case OP_MKNOD: err = do_mknod(&r, AT_FDCWD, p1, (mode_t)a[1], (dev_t)a[2]); break;
  case OP_MKNODAT: err = do_mknod(&r, d0, p1, (mode_t)a[2], (dev_t)a[3]); break;
  case OP_SYMLINK: err = do_symlink(&r, p1, AT_FDCWD, p2); break;
  case OP_SYMLINKAT: err = do_symlink(&r, p1, (int)a[1], p2); break;
  case OP_LINK: err = do_link(&r, AT_FDCWD, p1, AT_FDCWD, p2, 0); break;
  case OP_LINKAT: err = do_link(&r, d0, p1, d2, p2, (int)a[4]); break;
  case OP_UNLINK: err = do_unlink(&r, AT_FDCWD, p1, 0); break;
  case OP_UNLINKAT: err = do_unlink(&r, d0, p1, (int)a[2]); break;
  case OP_RMDIR: err = do_unlink(&r, AT_FDCWD, p1, AT_REMOVEDIR); break;
  case OP_RENAME: err = do_rename(&r, AT_FDCWD, p1, AT_FDCWD, p2, 0); break;
  case OP_RENAMEAT: err = do_rename(&r, d0, p1, d2, p2, 0); break;
  case OP_RENAMEAT2: err = do_rename(&r, d0, p1, d2, p2, (unsigned)a[4]); break;
  case OP_TRUNCATE: err = do_truncate(&r, p1, (off_t)a[1]); break;
  case OP_CHMOD: err = attr_at(&r, AT_FDCWD, p1, 0, &mode); break;
  case OP_FCHMOD: err = attr_fd(&r, d0, &mode); break;
  case OP_FCHMODAT: err = attr_at(&r, d0, p1, 0, &mode); break; // no flags argument
  case OP_FCHMODAT2: err = attr_at(&r, d0, p1, (int)a[3], &mode); break;
  case OP_CHOWN: err = attr_at(&r, AT_FDCWD, p1, 0, &own); break;
  case OP_LCHOWN: err = attr_at(&r, AT_FDCWD, p1, AT_SYMLINK_NOFOLLOW, &own); break;
  case OP_FCHOWN: err = attr_fd(&r, d0, &own); break;
  case OP_FCHOWNAT: err = attr_at(&r, d0, p1, (int)a[4], &own); break;
  case OP_SETXATTR: case OP_REMOVEXATTR: err = attr_at(&r, AT_FDCWD, p1, 0, &at); break;
  case OP_LSETXATTR: case OP_LREMOVEXATTR: err = attr_at(&r, AT_FDCWD, p1, AT_SYMLINK_NOFOLLOW, &at); break;
  case OP_FSETXATTR: case OP_FREMOVEXATTR: err = attr_fd(&r, d0, &at); break;
  case OP_SETXATTRAT: case OP_REMOVEXATTRAT: err = attr_at(&r, d0, p1, (int)a[2], &at); break;
  }
  if (r.root >= 0) close(r.root);
  if (err == -1) return; // a worker replies
  if (err == EACCES || err == EROFS) report_kernel_refusal(op_word(op, a), last_resolved(), err);
  if (err) reply(&r, 0, err);
  else if (fd >= 0) {
    int cloexec = op == OP_OPENAT ? (a[2] & O_CLOEXEC) : op == OP_OPEN ? (a[1] & O_CLOEXEC) : 0;
    reply_fd(&r, fd, cloexec);
  } else reply(&r, 0, 0);
}

// ---------------------------------------------------------------- setup

int supervisor_socket(void) {
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sup_sock) != 0) die_errno("socketpair");
  return sup_sock[1];
}

// In the command, right after the filter is installed: hand its listener to the supervisor.
void supervisor_send_listener(int sock, int fd) {
  close(sup_sock[0]);
  char byte = 0;
  struct iovec iov = {&byte, 1};
  union {
    struct cmsghdr h;
    char buf[CMSG_SPACE(sizeof(int))];
  } u;
  memset(&u, 0, sizeof u);
  struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof u.buf};
  struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(int));
  memcpy(CMSG_DATA(c), &fd, sizeof fd);
  if (sendmsg(sock, &msg, 0) != 1) die_errno("send the seccomp listener");
  close(fd);
  close(sock);
}

// The listener, or -1 when the command ended before it installed the filter.
static int recv_listener(int sock) {
  char byte;
  struct iovec iov = {&byte, 1};
  union {
    struct cmsghdr h;
    char buf[CMSG_SPACE(sizeof(int))];
  } u;
  struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof u.buf};
  ssize_t n;
  do n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
  while (n < 0 && errno == EINTR);
  if (n <= 0) return -1;
  struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
  if (!c || c->cmsg_type != SCM_RIGHTS || c->cmsg_len != CMSG_LEN(sizeof(int)))
    die("srt-init: supervisor: no listener from the command");
  int fd;
  memcpy(&fd, CMSG_DATA(c), sizeof fd);
  return fd;
}

static int orphaned(int fd) {
  struct pollfd p = {.fd = fd, .events = POLLIN};
  return poll(&p, 1, 0) == 1 && (p.revents & POLLHUP);
}

static void *serve(void *arg) {
  (void)arg;
  listener = recv_listener(sup_sock[0]);
  close(sup_sock[0]);
  if (listener < 0) return NULL;
  // Linux 6.6+: each side wakes the other on the same CPU (a call costs two switches; this
  // halves their latency). Older kernels refuse the flag: the notifications work the same.
  if (ioctl(listener, SECCOMP_IOCTL_NOTIF_SET_FLAGS, SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP) != 0) { /* older kernel */ }
  umask(0777); // never in effect: every creation sets the command's umask first
  struct seccomp_notif_sizes sizes;
  if (syscall(SYS_seccomp, SECCOMP_GET_NOTIF_SIZES, 0, &sizes) != 0) die_errno("SECCOMP_GET_NOTIF_SIZES");
  size_t size = sizes.seccomp_notif > sizeof(struct seccomp_notif) ? sizes.seccomp_notif : sizeof(struct seccomp_notif);
  struct seccomp_notif *n = malloc(size);
  if (!n) die_errno("malloc");
  for (;;) {
    memset(n, 0, size);
    if (ioctl(listener, SECCOMP_IOCTL_NOTIF_RECV, n) != 0) {
      // Once no process is under the filter (the command and all it started are gone) the
      // kernel answers ENOENT at once, again and again, and the listener shows POLLHUP: no call
      // can come any more (a filter without users never gains one), so stop rather than spin.
      if (errno == ENOENT && orphaned(listener)) break;
      if (errno == EINTR || errno == ENOENT) continue;
      // Unanswered calls would hang the command: end the sandbox instead (fail closed).
      die_errno("supervisor: SECCOMP_IOCTL_NOTIF_RECV");
    }
    // One call at a time, and none performed once the run's report is closed (a process the
    // command left behind could otherwise move a new repository after srt was told where it is);
    // a connect() is only watched: it goes on, uncounted.
    pthread_mutex_lock(&handling);
    struct req late = {.n = n, .pid = n->pid, .root = -1};
    if (!finished) handle(n);
    else if (n->data.arch == OUR_ARCH && n->data.nr == NR_CONNECT) reply_continue(&late);
    else reply(&late, 0, EPERM);
    pthread_mutex_unlock(&handling);
  }
  free(n);
  return NULL;
}

// In init, before the command is forked; the thread inherits init's Landlock domain, blocked
// signals and empty capability sets.
void supervisor_start(int fd) {
  gate_start();
  if (fd >= 0 && (report_fd = dup(fd)) < 0) die_errno("dup");
  if (report_fd >= 0 && fcntl(report_fd, F_SETFD, FD_CLOEXEC) != 0) die_errno("fcntl");
  pthread_t t;
  int err = pthread_create(&t, NULL, serve, NULL);
  if (err) die("srt-init: cannot start the supervisor: %s", strerror(err));
  pthread_detach(t);
}

// Once the command is forked: its end of the socket is not ours to hold.
void supervisor_forked(void) {
  close(sup_sock[1]);
  sup_sock[1] = -1;
}
