// Declarations shared by the protected-path supervisor's files (supervisor.c: the notification
// loop; rules.c: the rules and the pure matcher; resolve.c: path resolution; emulate.c: the
// calls performed on the command's behalf). Only these include it.
#ifndef SRT_SUPERVISOR_H
#define SRT_SUPERVISOR_H

#include "helper.h"

#include <limits.h>
#include <linux/seccomp.h>
#include <stdint.h>
#include <sys/stat.h>

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
// FIFO opens waiting for a reader at once (each a thread); past this, EAGAIN.
#define MAX_FIFO_WAITS 256

// rules.c (protected_path: see there; mark_made: the run made st, forget_made: st is gone).
// Which rule protects a path: 'P' a protected path (what: it), 'N' a protected name in a
// directory that existed before the run (what: the name or suffix), 'G' an entry of a git dir
// that existed (what: the rule, `hooks`, `modules/**/config`), 'R' an existing repository's `.git`.
struct verdict {
  char kind;
  const char *what;
};
int protected_path(const char *p, int exists, int partial, struct verdict *why);
int is_marker(const char *leaf);
void mark_made(const struct stat *st);
void forget_made(const struct stat *st);
int made_by_run(const struct stat *st);

// supervisor.c: one notification, and the report.
struct req {
  struct seccomp_notif *n;
  pid_t pid;
  int root; // the command's root (/proc/PID/root), opened when needed
};
void reply(struct req *r, long val, int err);
void reply_fd(struct req *r, int fd, int cloexec);
void report_refused(const char *op, const char *path, const struct verdict *why);
// dirfd: the directory to follow (O_PATH), NOT_A_DIR, or -1 when it could not be opened (then
// srt is told it lost track and searches).
#define NOT_A_DIR (-2)
void report_created(const char *path, int dirfd);
void report_kernel_refusal(const char *op, const char *path, int err);

// loopback.c: connect() calls to a loopback port nothing listens on, counted (see there), and
// their records at the end (with supervisor.c's put).
struct watched {
  int v4;
  unsigned char addr[16];
  unsigned port;
};
int watch_connect(struct req *r, int fd, const unsigned char *sa, size_t len, struct watched *w);
void judge_connect(const struct watched *w);
void report_loopback(int (*put)(const char *fields[], int n));

// resolve.c
// Where a path's last component lives: the parent directory, held open, and its path.
struct loc {
  int parent;
  char leaf[NAME_MAX + 1];
  char dir[LONG_PATH];
  char full[LONG_PATH + NAME_MAX + 2];
  int slash; // the path ended in `/` (or `.`/`..`): it names a directory
  int dot;   // the last component is `.` or `..`
};
int fd_path(int fd, char *out, size_t size);
int is_proc_path(const char *p);
int init_proc_path(const char *p);
int init_proc_fd(int fd);
int proc_open(struct req *r, const char *what, int flags);
int cmd_root(struct req *r);
void loc_free(struct loc *l);
// The full path of the last loc freed ("" after forget_resolved).
const char *last_resolved(void);
void forget_resolved(void);
// Split `path` and resolve its directory part, from the command's cwd or dirfd, or from
// start/start_dir (a descriptor of ours and its path, when following a symlink). 0 or an errno.
int locate(struct req *r, int dirfd, int start, const char *start_dir_path, const char *path, struct loc *l);
// Follow a symlink at l (the kernel's rules): replace l by where its target points.
int follow(struct req *r, struct loc *l, int *links);

// emulate.c: each call, 0 or an errno (do_open: -1 when a worker replies).
enum attr_kind { ATTR_MODE, ATTR_OWNER, ATTR_SETX, ATTR_REMOVEX };
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
void umask_changed(void);
int do_open(struct req *r, int dirfd, const char *path, int flags, mode_t mode, int *fd_out);
int do_mkdir(struct req *r, int dirfd, const char *path, mode_t mode);
int do_mknod(struct req *r, int dirfd, const char *path, mode_t mode, dev_t dev);
int do_symlink(struct req *r, const char *target, int dirfd, const char *path);
int do_unlink(struct req *r, int dirfd, const char *path, int flags);
int do_rename(struct req *r, int odirfd, const char *opath, int ndirfd, const char *npath, unsigned flags);
int do_link(struct req *r, int odirfd, const char *opath, int ndirfd, const char *npath, int flags);
int do_truncate(struct req *r, const char *path, off_t len);
int attr_fd(struct req *r, int fd, const struct attr *a);
int attr_at(struct req *r, int dirfd, const char *path, int flags, const struct attr *a);

#endif
