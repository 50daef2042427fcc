// init: PID 1 of the nested PID namespace, in its own mount namespace with a fresh /proc, and
// the command it starts (no capabilities, no_new_privs, Landlock, the seccomp filter). With
// --protect, init also runs the protected-path supervisor (supervisor.c) as a second thread.

#include "helper.h"

#include <sched.h>
#include <stdio.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *const proc_covered[] = {"/proc/sys", "/proc/sysrq-trigger", "/proc/irq",
                                           "/proc/bus"};

// Bind a /proc entry over itself read-only (as bwrap does for its own /proc): with uid 0
// mapped to host root, /proc/sys and /proc/sysrq-trigger are otherwise writable by the owner.
static void proc_read_only(const char *path) {
  struct stat st;
  if (lstat(path, &st) != 0) {
    if (errno == ENOENT) return;
    die_errno(path);
  }
  if (mount(path, path, NULL, MS_BIND | MS_REC, NULL) != 0) die_errno(path);
  if (mount(NULL, path, NULL, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
            NULL) != 0)
    die_errno(path);
}

// sup_fd: where the filter's listener goes (-1: no supervisor).
static void exec_command(char **cmd, const struct sock_fprog *prog, const struct pty *pty, int sup_fd) {
  // Its own process group, so init can signal the command and everything it starts at once.
  if (setpgid(0, 0) != 0) die_errno("setpgid");
  if (pty) pty_attach_command(pty);
  unblock_signals();
  int listener = install_filter(prog, sup_fd >= 0);
  if (sup_fd >= 0) supervisor_send_listener(sup_fd, listener);
  execvp(cmd[0], cmd);
  int err = errno;
  if (err == ENOENT || err == ENOTDIR) {
    fprintf(stderr, "srt: %s: command not found\n", cmd[0]);
    _exit(127);
  }
  if (err == EACCES || err == EPERM || err == ENOEXEC || err == EISDIR)
    fprintf(stderr, "srt: %s: permission denied\n", cmd[0]);
  else
    fprintf(stderr, "srt: %s: %s\n", cmd[0], strerror(err));
  _exit(126);
}

// Whether srt said go: one byte (its proxy listens). End of file or an error: srt failed to start
// the proxy, or died, or was signalled; srt says why (if it can), so this says nothing.
static int srt_said_go(int fd) {
  char byte;
  ssize_t n;
  do n = read(fd, &byte, 1);
  while (n < 0 && errno == EINTR);
  close(fd);
  return n == 1;
}

// PID 1 of the nested PID namespace.
int run_init(char **cmd, const struct sock_fprog *prog, const char *const *writable,
             const int *writable_fds, int nwritable, struct pty *pty, int protect, int report_fd,
             int go_fd, const sigset_t *set) {
  if (unshare(CLONE_NEWNS) != 0) die_errno("unshare(CLONE_NEWNS)");
  // Private: nothing mounted here propagates back to bwrap's mount namespace.
  if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0) die_errno("make mounts private");
  // The snapshots of srt's plan, then the whole plan checked here, where the command runs.
  verify_fill_snapshots();
  verify_mounts(1);
  // A /proc of the new PID namespace shows only the command and its descendants. The kernel
  // allows it only while bwrap's /proc is fully visible: for an unprivileged user, bwrap's
  // `--ro-bind /proc/sys /proc/sys` (a locked bind from the host's proc) breaks that, so srt
  // leaves it out when this helper runs (the /proc/sys below replaces it).
  if (mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) != 0)
    die("srt-init: cannot mount a fresh /proc: %s (bwrap must not cover /proc/sys)",
        strerror(errno));
  limit_per_user(); // while this /proc/sys is writable and CAP_SYS_RESOURCE held
  for (size_t i = 0; i < sizeof proc_covered / sizeof proc_covered[0]; i++)
    proc_read_only(proc_covered[i]);
  // Non-dumpable: the command (same uid, no capabilities) can neither ptrace this process nor
  // open its /proc/1/{mem,environ,fd}.
  if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) die_errno("PR_SET_DUMPABLE");
  // No core files, soft and hard: the kernel writes one into the crashing process's working
  // directory itself, past the supervisor (a crash in .git/hooks/ would leave a file there).
  struct rlimit no_core = {0, 0};
  if (setrlimit(RLIMIT_CORE, &no_core) != 0) die_errno("setrlimit(RLIMIT_CORE)");
  drop_capabilities();
  if (pty) pty_init_session(pty);
  // bwrap already sets no_new_privs; set it again: Landlock and seccomp without CAP_SYS_ADMIN
  // require it, and it keeps execve from granting capabilities (setuid files, file caps, uid 0).
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) die_errno("PR_SET_NO_NEW_PRIVS");
  // Landlock here, once all mounts are done (a Landlock domain forbids mounting): the command
  // inherits this very domain, and so does the supervisor, so every call the supervisor makes
  // for the command is judged by the command's own Landlock rules (Landlock also lets a process
  // read another's memory only from an enclosing domain). The stdio rules cover init's stdio;
  // a descriptor the command gets the pty on instead is under /dev/pts, writable anyway.
  if (writable) restrict_writes(writable, writable_fds, nwritable);
  // Last before anything of the command's: all set-up above overlaps srt's start of its proxy.
  if (go_fd >= 0 && !srt_said_go(go_fd)) return 125;
  int sup_fd = -1;
  if (protect) {
    sup_fd = supervisor_socket();
    supervisor_start(report_fd);
  }
  if (report_fd >= 0) close(report_fd);
  pid_t pid = fork();
  if (pid < 0) die_errno("fork");
  if (pid == 0) exec_command(cmd, prog, pty, sup_fd);
  if (protect) supervisor_forked();
  // Also here, so a signal forwarded before the child ran setpgid still reaches the group.
  if (setpgid(pid, pid) != 0 && errno != EACCES && errno != ESRCH) die_errno("setpgid");
  int status = pty ? pty_forward_until_exit(pty, pid, set) : forward_until_exit(pid, 1, set);
  if (protect) supervisor_finish();
  return status;
}
