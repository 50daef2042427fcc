// The supervisor's path resolution (see supervisor.c): where a path the command names lands.
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

#include "supervisor.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

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

int fd_path(int fd, char *out, size_t size) {
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

int is_proc_path(const char *p) {
  return strncmp(p, "/proc", 5) == 0 && (p[5] == '\0' || p[5] == '/');
}

// Is p an entry of init's own /proc directories (/proc/1/..., /proc/TID/... or /proc/1/task/TID/...
// of a thread of this process)? This thread opens /proc entries with init's identity, and a
// process may always open its own /proc/PID/mem, fds and links: served to the command, they would
// hand it init's memory (these very rules) and descriptors, which the kernel refuses the command
// itself (init is non-dumpable). /proc/self/task/N exists only for this process's threads.
int init_proc_path(const char *p) {
  if (strncmp(p, "/proc/", 6) != 0 || p[6] < '0' || p[6] > '9') return 0;
  char *end;
  unsigned long n = strtoul(p + 6, &end, 10);
  if (*end != '\0' && *end != '/') return 0;
  char task[64];
  snprintf(task, sizeof task, "/proc/self/task/%lu", n);
  return n == (unsigned long)getpid() || access(task, F_OK) == 0;
}

// The same for a descriptor of ours (one in /proc whose path cannot be read counts as init's).
int init_proc_fd(int fd) {
  struct statfs sf;
  char path[PATH_MAX];
  if (fstatfs(fd, &sf) != 0) return 1;
  return sf.f_type == PROC_SUPER_MAGIC && (fd_path(fd, path, sizeof path) != 0 || init_proc_path(path));
}

int proc_open(struct req *r, const char *what, int flags) {
  char p[64];
  snprintf(p, sizeof p, "/proc/%d/%s", r->pid, what);
  return open(p, flags | O_CLOEXEC);
}

int cmd_root(struct req *r) {
  if (r->root < 0) r->root = proc_open(r, "root", O_PATH | O_DIRECTORY);
  return r->root;
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
      if (gate_has_globs()) {
        // A symlink on the way whose own name a deny glob matches is not a way in.
        char at[LONG_PATH];
        int err = fd_path(cur, at, sizeof at - NAME_MAX - 2);
        if (!err && at[0] == '/') {
          snprintf(at + strlen(at), NAME_MAX + 2, "%s%s", strcmp(at, "/") == 0 ? "" : "/", comp);
          if (gate_hidden(at, 0, NULL)) err = EACCES;
        }
        if (err) { close(fd); close(cur); return -err; }
      }
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

// Where the last call's path led, kept when its loc is freed: the report names it when the kernel
// refuses the call (a read-only mount, Landlock), after the loc is gone.
static char resolved[sizeof ((struct loc *)0)->full];

const char *last_resolved(void) { return resolved; }
void forget_resolved(void) { resolved[0] = '\0'; }

void loc_free(struct loc *l) {
  if (l->parent >= 0) {
    close(l->parent);
    memcpy(resolved, l->full, strlen(l->full) + 1);
  }
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
int locate(struct req *r, int dirfd, int start, const char *start_dir_path, const char *path,
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
    // With deny globs every symlink on the way is looked at (walk), not only the last one.
    int by_walk = gate_has_globs() && dir[0] != '\0';
    if (dir[0] == '\0') {
      parent = dup(start);
    } else if (!by_walk) {
      struct open_how how = {.flags = O_PATH | O_DIRECTORY | O_CLOEXEC, .resolve = RESOLVE_NO_MAGICLINKS};
      parent = syscall(SYS_openat2, dir[0] == '/' ? AT_FDCWD : start, dir, &how, sizeof how);
    }
    err = by_walk ? 0 : parent < 0 ? errno : fd_path(parent, l->dir, sizeof l->dir);
    if (by_walk || err || is_proc_path(l->dir)) {
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
int follow(struct req *r, struct loc *l, int *links) {
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

