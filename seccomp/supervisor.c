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
// How a path is resolved: in the command's mount namespace, with one
// openat2(RESOLVE_NO_SYMLINKS) of the absolute spelling (from the command's cwd or dirfd, read
// from /proc/PID/cwd|fd/N) whose lexical form is then its path; with a symlink on the way, from
// the command's directory with RESOLVE_NO_MAGICLINKS and the path read back from the descriptor;
// and through /proc (whose /proc/self here would be init) component by component, /proc/self
// standing for the caller and magic links followed as the kernel follows them. The parent
// directory stays open from the check to the call, and the last component is opened with
// O_NOFOLLOW (symlinks are followed here, one at a time, each target checked), so a concurrent
// rename cannot change what was checked; every rename inside the sandbox comes through this
// one thread, in order.
//
// The call runs with the command's uid/gids (the same user), no capabilities, the command's
// umask (/proc/PID/status, cached per process) and its Landlock domain; setuid/setgid bits are
// stripped from creation modes (the filter refuses such modes before they get here). A FIFO opened for writing without a reader would block this
// thread, so such an open is finished by a short-lived worker thread.
//
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
// A `.git` made during the run is the command's own new repository: its internals may be
// written (srt reviews and disables what would run when the run ends, from the M reports).
//
// Report (--report-fd): NUL-separated records `R`, op, path (a refused write) and `C`, path
// (a created marker), each distinct one once.

#include "helper.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/audit.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#ifndef SECCOMP_IOCTL_NOTIF_SET_FLAGS
#define SECCOMP_IOCTL_NOTIF_SET_FLAGS SECCOMP_IOW(4, __u64)
#define SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP (1UL << 0)
#endif
#ifndef SECCOMP_ADDFD_FLAG_SEND
#define SECCOMP_ADDFD_FLAG_SEND (1UL << 1)
#endif
#ifndef __O_TMPFILE
#define __O_TMPFILE 020000000
#endif
#ifndef AT_EMPTY_PATH
#define AT_EMPTY_PATH 0x1000
#endif

#define MAX_LINKS 40
// Where a directory's path is built (a path may outgrow PATH_MAX, which only bounds a call's argument).
#define LONG_PATH 32768
#define MAX_REPORTED 1024
// FIFO opens waiting for a reader at once (each a thread); past this, EAGAIN.
#define MAX_FIFO_WAITS 256

// ---------------------------------------------------------------- rules

struct list {
  char **v;
  int n;
};
static struct list roots, paths, names, suffixes, gitpats, allows, markers, frees;
static int report_fd = -1;
static int sup_sock[2] = {-1, -1};

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
    if (kind == 0 || val[0] == 0) die("seccomp helper: %s: empty record", path);
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
    case 'H': case 'O':
      if (!gate_rule(kind, val)) die("seccomp helper: %s: record %c%s outside a hidden path", path, kind, val);
      break;
    default: die("seccomp helper: %s: unknown record %c", path, kind);
    }
    if (!absolute) die("seccomp helper: %s: record %c%s: bad path", path, kind, val);
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

static void add_new_git(const struct stat *st) {
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
static int below_old_git(const char *p) {
  for (const char *s = p; (s = strstr(s, "/.git/")) != NULL; s++)
    if (old_git(p, s - p + 5)) return 1;
  return 0;
}

// Is the absolute path p protected? `exists`: p names an existing entry (then a `.git` that is
// not the command's own new one is protected itself). `partial`: p will be a directory or a
// symlink standing where a protected path would then lie below it (renames, symlinks).
static int protected_path(const char *p, int exists, int partial) {
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

static int is_marker(const char *leaf) {
  for (int i = 0; i < markers.n; i++)
    if (strcmp(markers.v[i], leaf) == 0) return 1;
  return 0;
}

// ---------------------------------------------------------------- report

static uint64_t reported[MAX_REPORTED];
static int nreported;

static void report(char kind, const char *op, const char *path) {
  if (report_fd < 0) return;
  uint64_t h = 1469598103934665603ULL;
  for (const char *s = op; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ULL;
  h = (h ^ (unsigned char)kind) * 1099511628211ULL;
  for (const char *s = path; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ULL;
  for (int i = 0; i < nreported; i++)
    if (reported[i] == h) return;
  if (nreported == MAX_REPORTED) return;
  reported[nreported++] = h;
  char line[PATH_MAX + 64];
  int n = kind == 'R' ? snprintf(line, sizeof line, "R%c%s%c%s%c", 0, op, 0, path, 0)
                      : snprintf(line, sizeof line, "C%c%s%c", 0, path, 0);
  if (n > 0 && n < (int)sizeof line && write(report_fd, line, n) < 0) { /* srt reads what arrived */ }
}

// ---------------------------------------------------------------- one notification

struct req {
  struct seccomp_notif *n;
  pid_t pid;
  int root; // the command's root (/proc/PID/root), opened when needed
};

static int listener = -1;

static int notif_valid(struct req *r) {
  return ioctl(listener, SECCOMP_IOCTL_NOTIF_ID_VALID, &r->n->id) == 0;
}

static void reply(struct req *r, long val, int err) {
  struct seccomp_notif_resp resp = {.id = r->n->id, .val = val, .error = err ? -err : 0};
  if (ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &resp) != 0 && errno != ENOENT) {
    // ENOENT: the call was interrupted (the command was killed meanwhile).
  }
}

static void reply_fd(struct req *r, int fd, int cloexec) {
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

// The path of a directory deeper than a page (d_path's limit): climbed with "..", each name
// found in its parent by inode (a mount root by what the name leads to). 0 or an errno.
static int long_dir_path(int fd, char *out, size_t size) {
  struct stat root, st, pst;
  if (stat("/", &root) != 0) return errno;
  size_t pos = size - 1;
  out[pos] = '\0';
  int cur = dup(fd);
  if (cur < 0) return errno;
  int err = 0;
  for (int depth = 0; err == 0; depth++) {
    if (fstat(cur, &st) != 0) { err = errno; break; }
    if ((st.st_dev == root.st_dev && st.st_ino == root.st_ino) || depth > 8192) break;
    int parent = openat(cur, "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (parent < 0) { err = errno; break; }
    if (fstat(parent, &pst) != 0 || (pst.st_dev == st.st_dev && pst.st_ino == st.st_ino)) { close(parent); break; }
    DIR *d = fdopendir(dup(parent));
    const char *found = NULL;
    for (int pass = 0; d && !found && pass < 2; pass++) {
      rewinddir(d);
      struct dirent *e;
      while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        struct stat es;
        if ((pass == 1 || e->d_ino == st.st_ino) && fstatat(parent, e->d_name, &es, AT_SYMLINK_NOFOLLOW) == 0 &&
            es.st_dev == st.st_dev && es.st_ino == st.st_ino) { found = e->d_name; break; }
      }
    }
    size_t n = found ? strlen(found) : 0;
    if (!found) err = ENOENT;
    else if (n + 1 > pos) err = ENAMETOOLONG;
    else {
      pos -= n;
      memcpy(out + pos, found, n);
      out[--pos] = '/';
    }
    if (d) closedir(d);
    close(cur);
    cur = parent;
  }
  close(cur);
  if (err) return err;
  if (out[pos] == '\0') out[--pos] = '/';
  memmove(out, out + pos, size - pos);
  return 0;
}

static int fd_path(int fd, char *out, size_t size) {
  char link[64];
  snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  ssize_t n = readlink(link, out, size - 1);
  if (n < 0 && errno == ENAMETOOLONG) {
    struct stat st;
    if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) return long_dir_path(fd, out, size);
  }
  if (n < 0) return errno;
  if ((size_t)n >= size - 1) return ENAMETOOLONG;
  out[n] = '\0';
  return 0;
}

static int is_proc_path(const char *p) {
  return strncmp(p, "/proc", 5) == 0 && (p[5] == '\0' || p[5] == '/');
}

// Is p an entry of init's own /proc directories (/proc/1/..., /proc/TID/... or /proc/1/task/TID/...
// of a thread of this process)? This thread opens /proc entries with init's identity, and a
// process may always open its own /proc/PID/mem, fds and links: served to the command, they would
// hand it init's memory (these very rules) and descriptors, which the kernel refuses the command
// itself (init is non-dumpable). /proc/self/task/N exists only for this process's threads.
static int init_proc_path(const char *p) {
  if (strncmp(p, "/proc/", 6) != 0 || p[6] < '0' || p[6] > '9') return 0;
  char *end;
  unsigned long n = strtoul(p + 6, &end, 10);
  if (*end != '\0' && *end != '/') return 0;
  char task[64];
  snprintf(task, sizeof task, "/proc/self/task/%lu", n);
  return n == (unsigned long)getpid() || access(task, F_OK) == 0;
}

// The same for a descriptor of ours (one in /proc whose path cannot be read counts as init's).
static int init_proc_fd(int fd) {
  struct statfs sf;
  char path[PATH_MAX];
  if (fstatfs(fd, &sf) != 0) return 1;
  return sf.f_type == PROC_SUPER_MAGIC && (fd_path(fd, path, sizeof path) != 0 || init_proc_path(path));
}

static int proc_open(struct req *r, const char *what, int flags) {
  char p[64];
  snprintf(p, sizeof p, "/proc/%d/%s", r->pid, what);
  return open(p, flags | O_CLOEXEC);
}

static int cmd_root(struct req *r) {
  if (r->root < 0) r->root = proc_open(r, "root", O_PATH | O_DIRECTORY);
  return r->root;
}

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

// The directory a relative path starts from: the command's cwd, or its descriptor dirfd.
static int start_dir(struct req *r, int dirfd) {
  if (dirfd == AT_FDCWD) {
    int fd = proc_open(r, "cwd", O_PATH | O_DIRECTORY);
    return fd < 0 ? -errno : fd;
  }
  if (dirfd < 0) return -EBADF;
  char what[32];
  snprintf(what, sizeof what, "fd/%d", dirfd);
  int fd = proc_open(r, what, O_PATH);
  return fd < 0 ? (errno == ENOENT ? -EBADF : -errno) : fd;
}

static int same_file(int a, int b) {
  struct stat sa, sb;
  return fstat(a, &sa) == 0 && fstat(b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

// Resolve every component of `dir` (following symlinks) from `start` in the command's view,
// one at a time: /proc/self and /proc/thread-self mean the command, and /proc's magic links are
// followed as the kernel follows them; init's own /proc entries are out of reach (EACCES), as
// they are for the command. Returns an O_PATH directory descriptor or -errno.
static int walk(struct req *r, int start, const char *dir) {
  int root = cmd_root(r);
  if (root < 0) return -errno;
  char pend[2 * PATH_MAX + 2];
  if (strlen(dir) >= sizeof pend) return -ENAMETOOLONG;
  strcpy(pend, dir);
  int cur = dup(dir[0] == '/' ? root : start);
  if (cur < 0) return -errno;
  if (init_proc_fd(cur)) { close(cur); return -EACCES; }
  int links = 0;
  char *p = pend;
  for (;;) {
    while (*p == '/') p++;
    if (*p == '\0') return cur;
    char *e = strchrnul(p, '/');
    char comp[NAME_MAX + 1];
    if ((size_t)(e - p) > NAME_MAX) { close(cur); return -ENAMETOOLONG; }
    memcpy(comp, p, e - p);
    comp[e - p] = '\0';
    p = e;
    if (strcmp(comp, ".") == 0) continue;
    if (strcmp(comp, "..") == 0) {
      if (same_file(cur, root)) continue;
      int up = openat(cur, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
      close(cur);
      if (up < 0) return -errno;
      cur = up;
      if (init_proc_fd(cur)) { close(cur); return -EACCES; }
      continue;
    }
    int fd = openat(cur, comp, O_PATH | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) { int err = errno; close(cur); return -err; }
    struct stat st;
    if (fstat(fd, &st) != 0) { int err = errno; close(fd); close(cur); return -err; }
    if (!S_ISLNK(st.st_mode)) {
      close(cur);
      if (!S_ISDIR(st.st_mode)) { close(fd); return -ENOTDIR; }
      cur = fd;
      if (init_proc_fd(cur)) { close(cur); return -EACCES; }
      continue;
    }
    if (++links > MAX_LINKS) { close(fd); close(cur); return -ELOOP; }
    struct statfs sf;
    struct stat cst;
    char target[PATH_MAX];
    ssize_t tl = -1;
    if (fstatfs(cur, &sf) == 0 && sf.f_type == PROC_SUPER_MAGIC && fstat(cur, &cst) == 0 &&
        cst.st_ino != 1) {
      // A magic link (/proc/PID/cwd, fd/N, root, ...): jump where it points, as the kernel does.
      close(fd);
      int to = openat(cur, comp, O_PATH | O_CLOEXEC);
      close(cur);
      if (to < 0) return -errno;
      cur = to;
      if (init_proc_fd(cur)) { close(cur); return -EACCES; }
      continue;
    }
    if (fstatfs(cur, &sf) == 0 && sf.f_type == PROC_SUPER_MAGIC &&
        (strcmp(comp, "self") == 0 || strcmp(comp, "thread-self") == 0)) {
      // Ours would name init: the caller's thread stands for it (/proc/TID is its own view).
      tl = strcmp(comp, "self") == 0 ? snprintf(target, sizeof target, "%d", r->pid)
                                     : snprintf(target, sizeof target, "%d/task/%d", r->pid, r->pid);
    } else {
      tl = readlinkat(fd, "", target, sizeof target - 1);
      if (tl < 0) { int err = errno; close(fd); close(cur); return -err; }
      if ((size_t)tl >= sizeof target - 1) { close(fd); close(cur); return -ENAMETOOLONG; }
      target[tl] = '\0';
    }
    close(fd);
    size_t rest = strlen(p);
    if ((size_t)tl + 1 + rest >= sizeof pend) { close(cur); return -ENAMETOOLONG; }
    memmove(pend + tl + 1, p, rest + 1);
    memcpy(pend, target, tl);
    pend[tl] = '/';
    p = pend;
    if (target[0] == '/') {
      close(cur);
      cur = dup(root);
      if (cur < 0) return -errno;
    }
  }
}

// Where a path's last component lives: the parent directory, held open, and its path.
struct loc {
  int parent;
  char leaf[NAME_MAX + 1];
  char dir[LONG_PATH];
  char full[LONG_PATH + NAME_MAX + 2];
  int slash; // the path ended in `/` (or `.`/`..`): it names a directory
  int dot;   // the last component is `.` or `..`
};

static void loc_free(struct loc *l) {
  if (l->parent >= 0) close(l->parent);
  l->parent = -1;
}

// "/a/./b/../c" → "/a/c" in place (the path has no symlinks, so this is where it leads).
static void normalize(char *p) {
  char *out = p, *in = p;
  while (*in) {
    while (*in == '/') in++;
    char *e = strchrnul(in, '/');
    size_t n = e - in;
    if (n == 0) break;
    if (n == 1 && in[0] == '.') {
    } else if (n == 2 && in[0] == '.' && in[1] == '.') {
      while (out > p && *--out != '/') {}
    } else {
      *out++ = '/';
      memmove(out, in, n);
      out += n;
    }
    in = e;
  }
  if (out == p) *out++ = '/';
  *out = '\0';
}

// The path of the command's cwd or of its descriptor dirfd; 0 or an errno.
static int start_path(struct req *r, int dirfd, char *out, size_t size) {
  char link[64];
  if (dirfd == AT_FDCWD) snprintf(link, sizeof link, "/proc/%d/cwd", r->pid);
  else if (dirfd < 0) return EBADF;
  else snprintf(link, sizeof link, "/proc/%d/fd/%d", r->pid, dirfd);
  ssize_t n = readlink(link, out, size - 1);
  if (n < 0) return errno == ENOENT ? EBADF : errno;
  if ((size_t)n >= size - 1) return ENAMETOOLONG;
  out[n] = '\0';
  return 0;
}

// Split `path` and resolve its directory part, from the command's cwd or dirfd, or from
// start/start_dir (a descriptor of ours and its path, when following a symlink). 0 or an errno.
static int locate(struct req *r, int dirfd, int start, const char *start_dir_path, const char *path,
                  struct loc *l) {
  l->parent = -1;
  l->slash = l->dot = 0;
  size_t len = strlen(path);
  if (len == 0) return ENOENT;
  char dir[PATH_MAX];
  if (len >= sizeof dir) return ENAMETOOLONG;
  memcpy(dir, path, len + 1);
  while (len > 1 && dir[len - 1] == '/') { dir[--len] = '\0'; l->slash = 1; }
  char *slash = strrchr(dir, '/');
  const char *leaf = slash ? slash + 1 : dir;
  if (leaf[0] == '\0') leaf = "."; // the path is "/"
  if (strlen(leaf) > NAME_MAX) return ENAMETOOLONG;
  strcpy(l->leaf, leaf);
  l->dot = strcmp(leaf, ".") == 0 || strcmp(leaf, "..") == 0;
  if (slash) {
    if (slash == dir) dir[1] = '\0';
    else *slash = '\0';
  } else {
    dir[0] = '\0';
  }
  // Quick: the absolute spelling, resolved with no symlink at all (RESOLVE_NO_SYMLINKS), is
  // then exactly where its lexical form points, so that form is the directory's path.
  int parent = -1, err = 0;
  char base[PATH_MAX];
  if (path[0] == '/') base[0] = '\0';
  else if (start_dir_path && strlen(start_dir_path) >= sizeof base) err = ENAMETOOLONG; // the slow way
  else if (start_dir_path) snprintf(base, sizeof base, "%s", start_dir_path);
  else err = start_path(r, dirfd, base, sizeof base);
  if (err == EBADF || err == ENOTDIR) return err;
  if (!err && (path[0] == '/' || (base[0] == '/' && !strstr(base, " (deleted)")))) {
    char abs[2 * PATH_MAX + 2];
    snprintf(abs, sizeof abs, "%s%s%s", base, base[0] && dir[0] ? "/" : "", dir);
    if (abs[0] == '/' && strlen(abs) < PATH_MAX) {
      struct open_how how = {.flags = O_PATH | O_DIRECTORY | O_CLOEXEC, .resolve = RESOLVE_NO_SYMLINKS};
      parent = syscall(SYS_openat2, AT_FDCWD, abs, &how, sizeof how);
      if (parent >= 0) {
        normalize(abs);
        if (is_proc_path(abs)) { close(parent); parent = -1; }
        else strcpy(l->dir, abs);
      } else if (errno == ENOENT || errno == ENOTDIR || errno == EACCES || errno == ENAMETOOLONG) {
        // What the kernel would say too: no symlink was in the way of this answer.
        return errno;
      }
    }
  }
  if (parent < 0) {
    // Symlinks, /proc, a deleted directory: resolve from the command's own directory, and when
    // that touches /proc (whose /proc/self is not the command's) walk it component by component.
    int own = -1;
    if (path[0] != '/' && start < 0) {
      own = start_dir(r, dirfd);
      if (own < 0) return -own;
      start = own;
    }
    if (dir[0] == '\0') {
      parent = dup(start);
    } else {
      struct open_how how = {.flags = O_PATH | O_DIRECTORY | O_CLOEXEC, .resolve = RESOLVE_NO_MAGICLINKS};
      parent = syscall(SYS_openat2, dir[0] == '/' ? AT_FDCWD : start, dir, &how, sizeof how);
    }
    err = parent < 0 ? errno : fd_path(parent, l->dir, sizeof l->dir);
    if (err || is_proc_path(l->dir)) {
      if (parent >= 0) close(parent);
      parent = dir[0] == '\0' ? dup(start) : walk(r, start, dir);
      if (parent < 0) err = -parent;
      else err = fd_path(parent, l->dir, sizeof l->dir);
    }
    if (own >= 0) close(own);
    if (err) {
      if (parent >= 0) close(parent);
      return err;
    }
    if (strstr(l->dir, " (deleted)")) { close(parent); return ENOENT; }
    if (init_proc_path(l->dir)) { close(parent); return EACCES; }
  }
  l->parent = parent;
  snprintf(l->full, sizeof l->full, "%s/%s", strcmp(l->dir, "/") == 0 ? "" : l->dir, l->leaf);
  return 0;
}

// Follow a symlink at l (the kernel's rules): replace l by where its target points.
static int follow(struct req *r, struct loc *l, int *links) {
  if (++*links > MAX_LINKS) return ELOOP;
  char target[PATH_MAX];
  ssize_t n = readlinkat(l->parent, l->leaf, target, sizeof target - 1);
  if (n < 0) return errno;
  if ((size_t)n >= sizeof target - 1) return ENAMETOOLONG;
  target[n] = '\0';
  int from = l->parent;
  char from_path[LONG_PATH];
  snprintf(from_path, sizeof from_path, "%s", l->dir);
  l->parent = -1;
  int err = target[0] == '/' ? locate(r, AT_FDCWD, -1, "/", target, l)
                             : locate(r, AT_FDCWD, from, from_path, target, l);
  close(from);
  return err;
}

static int refuse(const char *op, const char *path) {
  report('R', op, path);
  return EACCES;
}

// A marker name made where nothing had that name: a new repository, unless it lies in a git dir
// that existed before the run (rewriting an old repository's HEAD is no new repository).
static void created(const struct loc *l) {
  if (!is_marker(l->leaf) || below_old_git(l->full)) return;
  report('C', "", l->full);
  if (strcmp(l->leaf, ".git") == 0) {
    struct stat st;
    if (fstatat(l->parent, l->leaf, &st, AT_SYMLINK_NOFOLLOW) == 0) add_new_git(&st);
  }
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

static void umask_changed(void) {
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
  if (opath[0] == '/' && protected_path(opath, 1, 0)) return refuse(op, opath);
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
  else if (named && (flags & (O_ACCMODE | O_TRUNC | O_CREAT)) && protected_path(opath, 1, 0)) err = refuse("write", opath);
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
static int do_open(struct req *r, int dirfd, const char *path, int flags, mode_t mode, int *fd_out) {
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
      if (protected_path(dpath, 1, 0)) { close(dir); return refuse("create in", dpath); }
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
    if (writing && protected_path(l.full, exists, 0)) {
      if (!known) exists = fstatat(l.parent, l.leaf, &st, AT_SYMLINK_NOFOLLOW) == 0;
      loc_free(&l);
      return refuse(exists ? "write" : "create", l.full);
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
      if (known && !exists) created(&l);
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

static int do_mkdir(struct req *r, int dirfd, const char *path, mode_t mode) {
  struct loc l;
  int err = locate(r, dirfd, -1, NULL, path, &l);
  if (err) return err;
  if (l.dot) { loc_free(&l); return EEXIST; }
  struct stat st;
  int exists = fstatat(l.parent, l.leaf, &st, AT_SYMLINK_NOFOLLOW) == 0;
  if (exists) err = EEXIST;
  else if (gate_hidden(l.full, 0, NULL)) err = EACCES;
  else if (protected_path(l.full, 0, 0)) err = refuse("create", l.full);
  else if (!(err = with_umask(r))) {
    if (mkdirat(l.parent, l.leaf, mode & 07777 & ~(S_ISUID | S_ISGID)) != 0) err = errno;
    else created(&l);
  }
  loc_free(&l);
  return err;
}

static int do_mknod(struct req *r, int dirfd, const char *path, mode_t mode, dev_t dev) {
  struct loc l;
  int err = locate(r, dirfd, -1, NULL, path, &l);
  if (err) return err;
  if (l.dot || l.slash) { loc_free(&l); return EEXIST; }
  struct stat st;
  if (fstatat(l.parent, l.leaf, &st, AT_SYMLINK_NOFOLLOW) == 0) err = EEXIST;
  else if (gate_hidden(l.full, 0, NULL)) err = EACCES;
  else if (protected_path(l.full, 0, 0)) err = refuse("create", l.full);
  else if (!(err = with_umask(r))) {
    if (mknodat(l.parent, l.leaf, mode & ~(S_ISUID | S_ISGID), dev) != 0) err = errno;
    else created(&l);
  }
  loc_free(&l);
  return err;
}

static int do_symlink(struct req *r, const char *target, int dirfd, const char *path) {
  struct loc l;
  int err = locate(r, dirfd, -1, NULL, path, &l);
  if (err) return err;
  struct stat st;
  if (l.dot || l.slash || fstatat(l.parent, l.leaf, &st, AT_SYMLINK_NOFOLLOW) == 0) err = EEXIST;
  else if (gate_hidden(l.full, 0, NULL)) err = EACCES;
  else if (protected_path(l.full, 0, 1)) err = refuse("create", l.full);
  else if (symlinkat(target, l.parent, l.leaf) != 0) err = errno;
  else created(&l);
  loc_free(&l);
  return err;
}

static int do_unlink(struct req *r, int dirfd, const char *path, int flags) {
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
    else if (protected_path(l.full, 1, 0)) err = refuse("remove", l.full);
    else if (unlinkat(l.parent, l.leaf, rmdir_) != 0) err = errno;
  }
  loc_free(&l);
  return err;
}

static int do_rename(struct req *r, int odirfd, const char *opath, int ndirfd, const char *npath,
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
    // A denied path (or a directory holding one) gets no other name, and none is put in its place.
    if (gate_hidden(o.full, tree, NULL) || gate_hidden(n.full, ntree, NULL)) err = EACCES;
    else if (protected_path(o.full, 1, exchange && ntree)) err = refuse("move", o.full);
    else if (protected_path(n.full, nexists, tree)) err = refuse(nexists ? "replace" : "create", n.full);
    else if (syscall(SYS_renameat2, o.parent, o.leaf, n.parent, n.leaf, flags) != 0) err = errno;
    else {
      // An exchange or a replacement puts nothing new in place.
      if (!nexists) created(&n);
    }
  }
  loc_free(&o);
  loc_free(&n);
  return err;
}

static int do_link(struct req *r, int odirfd, const char *opath, int ndirfd, const char *npath, int flags) {
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
  if (!err && opathbuf[0] == '/' && protected_path(opathbuf, 1, 0)) err = refuse("link", opathbuf);
  if (!err) err = locate(r, ndirfd, -1, NULL, npath, &n);
  else n.parent = -1;
  if (!err) {
    struct stat st;
    if (n.dot || n.slash || fstatat(n.parent, n.leaf, &st, AT_SYMLINK_NOFOLLOW) == 0) err = EEXIST;
    else if (gate_hidden(n.full, 0, NULL)) err = EACCES;
    else if (protected_path(n.full, 0, 0)) err = refuse("create", n.full);
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
      else created(&n);
    }
  }
  if (obj >= 0) close(obj);
  loc_free(&o);
  loc_free(&n);
  return err;
}

static int do_truncate(struct req *r, const char *path, off_t len) {
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
// Calls that change what a file is without naming anything new: its mode, owner, and extended
// attributes (a POSIX ACL in system.posix_acl_access rewrites the mode bits; other attributes are
// refused on a protected file all the same). They act on an object found by path or descriptor,
// judged like a write, then changed through an O_PATH descriptor of ours.

enum attr_kind { ATTR_MODE, ATTR_OWNER, ATTR_SETX, ATTR_REMOVEX };
static const char *const attr_op[] = {"chmod", "chown", "setxattr", "removexattr"};

struct attr {
  enum attr_kind kind;
  mode_t mode;
  uid_t uid;
  gid_t gid;
  const char *name;
  const void *value;
  size_t size;
  int xflags;
};

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
static int attr_fd(struct req *r, int fd, const struct attr *a) {
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
static int attr_at(struct req *r, int dirfd, const char *path, int flags, const struct attr *a) {
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
      err = protected_path(l.full, 1, 0) ? refuse(attr_op[a->kind], l.full) : apply_attr(obj, a);
      close(obj);
    }
    break;
  }
  loc_free(&l);
  return err;
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
static const int op_nr[OP_COUNT] = {2, 85, 257, 83, 258, 133, 259, 88, 266, 86, 265,
                                    87, 263, 84, 82, 264, 316, 76, 90, 91, 268, 452, 95,
                                    92, 93, 94, 260, 188, 189, 190, 463, 197, 198, 199, 466};
#elif defined(__aarch64__)
#define OUR_ARCH AUDIT_ARCH_AARCH64
static const int op_nr[OP_COUNT] = {-1, -1, 56, -1, 34, -1, 33, -1, 36, -1, 37,
                                    -1, 35, -1, -1, -1, 276, 45, -1, 52, 53, 452, 166,
                                    -1, 55, -1, 54, 5, 6, 7, 463, 14, 15, 16, 466};
#else
#error "srt-seccomp supports x86_64 and aarch64"
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

static void handle(struct seccomp_notif *n) {
  struct req r = {.n = n, .pid = n->pid, .root = -1};
  const __u64 *a = n->data.args;
  int op = -1;
  for (int i = 0; i < OP_COUNT; i++)
    if (op_nr[i] == n->data.nr) op = i;
  if (n->data.arch != OUR_ARCH || op < 0 || kernel_lacks(op)) { reply(&r, 0, ENOSYS); return; }
  if (op == OP_UMASK) {
    umask_changed();
    struct seccomp_notif_resp resp = {.id = n->id, .flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE};
    if (ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &resp) != 0 && errno != ENOENT) { /* interrupted */ }
    return;
  }
  static char p1[PATH_MAX], p2[PATH_MAX];
  int err = 0, fd = -1;
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
    die("seccomp helper: supervisor: no listener from the command");
  int fd;
  memcpy(&fd, CMSG_DATA(c), sizeof fd);
  return fd;
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
      if (errno == EINTR || errno == ENOENT) continue;
      // Unanswered calls would hang the command: end the sandbox instead (fail closed).
      die_errno("supervisor: SECCOMP_IOCTL_NOTIF_RECV");
    }
    handle(n);
  }
}

// In init, before the command is forked; the thread inherits init's Landlock domain, blocked
// signals and empty capability sets.
void supervisor_start(int fd) {
  gate_start();
  if (fd >= 0 && (report_fd = dup(fd)) < 0) die_errno("dup");
  if (report_fd >= 0 && fcntl(report_fd, F_SETFD, FD_CLOEXEC) != 0) die_errno("fcntl");
  pthread_t t;
  int err = pthread_create(&t, NULL, serve, NULL);
  if (err) die("seccomp helper: cannot start the supervisor: %s", strerror(err));
  pthread_detach(t);
}

// Once the command is forked: its end of the socket is not ours to hold.
void supervisor_forked(void) {
  close(sup_sock[1]);
  sup_sock[1] = -1;
}
