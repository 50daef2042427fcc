// Per-user kernel limits: the sandbox runs as the caller's uid, so without a bound it could hold
// all of that user's inotify instances, queued signals or processes, and the user's programs
// outside would fail (inotify_init: EMFILE) while the run lasts. Limits counted per user are
// counted again in every user namespace on the way up: bwrap's user namespace is the sandbox's
// own, so a limit set there bounds the sandbox alone. The sandbox gets half of each, the caller's
// other programs keep the rest:
// - the user-namespace sysctls /proc/sys/user/max_{inotify,fanotify}_* (half of the host's
//   fs.inotify.max_user_* and fs.fanotify.max_user_*), which need CAP_SYS_RESOURCE here;
// - the rlimits counted per user: RLIMIT_NPROC (processes and threads; the kernel does not apply
//   it to uid 0), RLIMIT_SIGPENDING, RLIMIT_MSGQUEUE, soft and hard (the command cannot raise them).
//   A user's process limit is often larger than the host's PID space (kernel.pid_max): half of
//   it would still let one fork loop take every PID, so RLIMIT_NPROC is also at most --max-procs
//   (srt passes a quarter of the host's kernel.pid_max and kernel.threads-max, read outside: in
//   this PID namespace pid_max may be the namespace's own), also when the caller's is unlimited.
// What is counted per user without namespaces (epoll watches, pipe buffers) or system-wide (pids,
// memory) needs cgroups, and the kernel never applies RLIMIT_NPROC to uid 0: docs/linux-sandbox.md.

#include "helper.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

static const struct {
  const char *host, *sandbox;
} counts[] = {
    {"/proc/sys/fs/inotify/max_user_instances", "/proc/sys/user/max_inotify_instances"},
    {"/proc/sys/fs/inotify/max_user_watches", "/proc/sys/user/max_inotify_watches"},
    {"/proc/sys/fs/fanotify/max_user_groups", "/proc/sys/user/max_fanotify_groups"},
    {"/proc/sys/fs/fanotify/max_user_marks", "/proc/sys/user/max_fanotify_marks"},
};
static const int rlimits[] = {RLIMIT_NPROC, RLIMIT_SIGPENDING, RLIMIT_MSGQUEUE};
static rlim_t max_procs = 1;

// --max-procs: the most RLIMIT_NPROC may be (main.c, before init starts).
void limit_processes_to(rlim_t max) { max_procs = max; }

// A sysctl's value, -1 when this kernel has none.
static long read_count(const char *path) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return -1;
    die("srt-init: %s: %s", path, strerror(errno));
  }
  char buf[32];
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) die("srt-init: cannot read %s", path);
  buf[n] = '\0';
  return strtol(buf, NULL, 10);
}

// In init, with a fresh /proc of the sandbox's user namespace still writable and
// CAP_SYS_RESOURCE held; before the command is forked.
void limit_per_user(void) {
  for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++) {
    long host = read_count(counts[i].host), here = read_count(counts[i].sandbox);
    if (host <= 0 || here < 0 || here <= host / 2) continue;
    int fd = open(counts[i].sandbox, O_WRONLY | O_CLOEXEC);
    char val[32];
    int len = snprintf(val, sizeof val, "%ld", host / 2 > 0 ? host / 2 : 1);
    if (fd < 0 || write(fd, val, len) != len)
      die("srt-init: cannot bound %s: %s (bwrap --cap-add CAP_SYS_RESOURCE)", counts[i].sandbox, strerror(errno));
    close(fd);
  }
  for (size_t i = 0; i < sizeof rlimits / sizeof rlimits[0]; i++) {
    struct rlimit rl;
    if (getrlimit(rlimits[i], &rl) != 0) die_errno("getrlimit");
    rlim_t bound = rl.rlim_cur == RLIM_INFINITY ? RLIM_INFINITY : rl.rlim_cur / 2 > 0 ? rl.rlim_cur / 2 : 1;
    if (rlimits[i] == RLIMIT_NPROC && bound > max_procs) bound = max_procs; // RLIM_INFINITY too
    if (bound == RLIM_INFINITY) continue;
    rl.rlim_cur = rl.rlim_max = bound;
    if (setrlimit(rlimits[i], &rl) != 0) die_errno("setrlimit");
  }
}
