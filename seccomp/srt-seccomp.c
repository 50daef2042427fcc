// srt-seccomp: the first process inside srt's bubblewrap sandbox.
//
//   srt-seccomp [--relay PORT:SOCKETPATH]... [--writable PATH]... [--no-landlock] --filter FILE
//               -- CMD ARGS...
//
// bwrap starts it as PID 1 of the sandbox's PID namespace (--unshare-user --as-pid-1
// --cap-drop ALL --cap-add CAP_SYS_ADMIN --cap-add CAP_SETPCAP): its capabilities count only in
// bwrap's user namespace. It
//  1. starts one socat per relay (capabilities dropped), listening on 127.0.0.1:PORT and
//     relaying to the Unix socket SOCKETPATH (the proxy outside), and waits until each listens;
//  2. creates a nested PID namespace whose PID 1 ("init") takes a new mount namespace, mounts a
//     fresh /proc there (so the command cannot see socat or this process), re-binds the
//     dangerous /proc entries read-only, drops every capability and forks the command, which
//     sets no_new_privs, restricts writes with Landlock (below), installs the seccomp filter
//     from FILE and execs CMD;
//  3. forwards signals (outer → init → the command's process group), reaps, and exits with the command's status
//     (128+N when killed by signal N). When the outer process exits, the kernel kills everything
//     left in the sandbox, socat included.
// Its own failures exit 125 with a `srt: ` message; exec failures 127 (not found) / 126.
//
// Landlock is defence in depth under the mounts: a read-only bind does not stop opening a FIFO
// or a device for writing (a write channel to whatever reads it on the host), nor reopening a
// descriptor through /proc/self/fd, which lands on the host's own mount. So the command may
// write only beneath the --writable paths (the ones bwrap binds read-write), a few /dev
// entries, /proc, and its own stdio files. Connecting to a socket file is not Landlock's
// business here (the seccomp filter refuses AF_UNIX unless allowed). Without Landlock
// in the kernel (or ABI 1, which cannot allow renames across directories) the helper goes on
// without it; --no-landlock turns it off (a nested sandbox needs mount(2), which Landlock denies).

#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define EXIT_SETUP 125
#define MAX_RELAYS 16
#define MAX_FILTER_INSNS 4096 /* BPF_MAXINSNS */
#define RELAY_WAIT_MS 5000

struct relay {
  unsigned port;
  const char *socket_path;
  pid_t pid;
};

// Signals passed on to the command. SIGCHLD is handled here; SIGKILL/SIGSTOP cannot be caught.
static const int forwarded_signals[] = {
    SIGHUP, SIGINT,  SIGQUIT, SIGUSR1, SIGUSR2, SIGALRM, SIGTERM,
    SIGCONT, SIGTSTP, SIGTTIN, SIGTTOU, SIGWINCH,
};

static void die(const char *fmt, ...) {
  // One write, so that messages from several processes never interleave.
  char msg[1024] = "srt: ";
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg + 5, sizeof msg - 6, fmt, ap);
  va_end(ap);
  size_t len = strlen(msg);
  msg[len] = '\n';
  if (write(STDERR_FILENO, msg, len + 1) < 0) { /* nothing left to report it to */ }
  _exit(EXIT_SETUP);
}

#define die_errno(what) die("seccomp helper: %s: %s", (what), strerror(errno))

static void usage(void) {
  die("seccomp helper: usage: srt-seccomp [--relay PORT:SOCKETPATH]... [--writable PATH]... "
      "[--no-landlock] --filter FILE -- CMD ARGS...");
}

// Empty the bounding set for this process and all it starts. It limits only what execve can
// grant, not the capabilities held now, so it goes first; it needs CAP_SETPCAP.
static void drop_bounding_set(void) {
  for (int cap = 0;; cap++) {
    int present = prctl(PR_CAPBSET_READ, cap, 0, 0, 0);
    if (present < 0) {
      if (errno == EINVAL) break; // past the kernel's last capability
      die_errno("PR_CAPBSET_READ");
    }
    if (present && prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0) {
      if (errno == EPERM)
        die("seccomp helper: cannot clear the capability bounding set: start it with bwrap "
            "--cap-add CAP_SETPCAP");
      die_errno("PR_CAPBSET_DROP");
    }
  }
}

// Clear the ambient, inheritable, permitted and effective sets.
static void drop_capabilities(void) {
  if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0)
    die_errno("PR_CAP_AMBIENT_CLEAR_ALL");
  struct __user_cap_header_struct header = {_LINUX_CAPABILITY_VERSION_3, 0};
  struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3];
  memset(data, 0, sizeof data);
  if (syscall(SYS_capset, &header, data) != 0) die_errno("capset");
}

static void block_signals(sigset_t *set) {
  sigemptyset(set);
  for (size_t i = 0; i < sizeof forwarded_signals / sizeof forwarded_signals[0]; i++)
    sigaddset(set, forwarded_signals[i]);
  sigaddset(set, SIGCHLD);
  // SIGCHLD must not be SIG_IGN (inherited), or children would be reaped behind our back.
  if (signal(SIGCHLD, SIG_DFL) == SIG_ERR) die_errno("signal(SIGCHLD)");
  // Blocked signals are queued even for a PID-namespace init, and then taken with sigwaitinfo:
  // no handlers, so every other disposition (e.g. nohup's SIG_IGN) reaches the command as is.
  if (sigprocmask(SIG_BLOCK, set, NULL) != 0) die_errno("sigprocmask");
}

static void unblock_signals(void) {
  sigset_t none;
  sigemptyset(&none);
  if (sigprocmask(SIG_SETMASK, &none, NULL) != 0) die_errno("sigprocmask");
}

static int status_code(int status) {
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// Pass signals on to `child`, reap every child (orphans too, as a PID-namespace init must) and
// return `child`'s exit status once it is gone.
static int forward_until_exit(pid_t child, int to_group, const sigset_t *set) {
  for (;;) {
    siginfo_t info;
    int sig = sigwaitinfo(set, &info);
    if (sig < 0) {
      if (errno == EINTR) continue;
      die_errno("sigwaitinfo");
    }
    if (sig != SIGCHLD) {
      // Like a terminal's Ctrl-C: the whole process group of the command, so a shell's
      // foreground child gets it too. Falls back to the pid once the group leader is gone.
      if (to_group && kill(-child, sig) == 0) continue;
      if (kill(child, sig) != 0 && errno != ESRCH) die_errno("kill");
      continue;
    }
    for (;;) {
      int status;
      pid_t pid = waitpid(-1, &status, WNOHANG);
      if (pid < 0 && errno == EINTR) continue;
      if (pid < 0 && errno != ECHILD) die_errno("waitpid");
      if (pid <= 0) break;
      if (pid == child) return status_code(status);
    }
  }
}

static void read_filter(const char *path, struct sock_fprog *prog) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) die("seccomp helper: cannot open filter %s: %s", path, strerror(errno));
  struct stat st;
  if (fstat(fd, &st) != 0) die_errno("fstat");
  size_t max = MAX_FILTER_INSNS * sizeof(struct sock_filter);
  if (!S_ISREG(st.st_mode) || st.st_size <= 0 || (size_t)st.st_size > max ||
      st.st_size % sizeof(struct sock_filter) != 0)
    die("seccomp helper: %s is not a seccomp filter (want 1..%d instructions of 8 bytes)", path,
        MAX_FILTER_INSNS);
  struct sock_filter *insns = malloc(st.st_size);
  if (!insns) die_errno("malloc");
  size_t done = 0;
  while (done < (size_t)st.st_size) {
    ssize_t n = read(fd, (char *)insns + done, st.st_size - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) die_errno("read filter");
    if (n == 0) die("seccomp helper: %s shrank while being read", path);
    done += n;
  }
  if (close(fd) != 0) die_errno("close");
  prog->len = st.st_size / sizeof(struct sock_filter);
  prog->filter = insns;
}

// socat parses its address arguments (`:` `,` `!` quotes, brackets), so only plain path
// characters are accepted rather than escaped.
static int plain_path(const char *p) {
  if (p[0] != '/') return 0;
  for (; *p; p++)
    if (!strchr("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789/._-+@=~%", *p))
      return 0;
  return 1;
}

static void parse_relay(const char *spec, struct relay *r) {
  char *end;
  errno = 0;
  unsigned long port = strtoul(spec, &end, 10);
  if (errno || end == spec || *end != ':' || port < 1 || port > 65535 || spec[0] == '0')
    die("seccomp helper: --relay %s: want PORT:SOCKETPATH", spec);
  if (!plain_path(end + 1))
    die("seccomp helper: --relay %s: socket path must be absolute and use only letters, digits "
        "and /._-+@=~%%", spec);
  r->port = (unsigned)port;
  r->socket_path = end + 1;
}

// socat runs without the filter, so it is looked up only in the system directories: the
// command's PATH may start with a directory the project controls (npm puts node_modules/.bin
// first), and a `socat` there would run unfiltered.
static const char *find_socat(void) {
  static const char *const candidates[] = {"/usr/local/bin/socat", "/usr/bin/socat", "/bin/socat",
                                           "/usr/local/sbin/socat", "/usr/sbin/socat",
                                           "/sbin/socat"};
  for (size_t i = 0; i < sizeof candidates / sizeof candidates[0]; i++) {
    struct stat st;
    if (stat(candidates[i], &st) == 0 && S_ISREG(st.st_mode) && access(candidates[i], X_OK) == 0)
      return candidates[i];
  }
  die("socat not found in /usr/local/bin, /usr/bin, /bin or the sbin directories: install socat "
      "(e.g. apt-get install socat)");
  return NULL;
}

static void start_relay(const char *socat, struct relay *r) {
  char listen[64], *connect;
  snprintf(listen, sizeof listen, "TCP-LISTEN:%u,bind=127.0.0.1,fork,reuseaddr", r->port);
  if (asprintf(&connect, "UNIX-CONNECT:%s", r->socket_path) < 0) die_errno("asprintf");
  r->pid = fork();
  if (r->pid < 0) die_errno("fork");
  if (r->pid > 0) {
    free(connect);
    return;
  }
  drop_capabilities();
  unblock_signals();
  // socat never reads the terminal; stderr stays so that its errors are visible.
  int null = open("/dev/null", O_RDWR | O_CLOEXEC);
  if (null < 0 || dup2(null, STDIN_FILENO) < 0 || dup2(null, STDOUT_FILENO) < 0)
    die_errno("/dev/null");
  char *argv[] = {(char *)"socat", listen, connect, NULL};
  execv(socat, argv);
  die("cannot run %s: %s", socat, strerror(errno));
}

// Is something listening on 127.0.0.1:port in this network namespace? Read from
// /proc/net/tcp rather than by connecting, which would open a relay to the proxy.
static int listening(unsigned port) {
  FILE *f = fopen("/proc/net/tcp", "re");
  if (!f) die_errno("/proc/net/tcp");
  char line[512];
  int found = 0;
  while (!found && fgets(line, sizeof line, f)) {
    unsigned addr, lport, state;
    // "  sl  local_address rem_address   st ..." → "0: 0100007F:0C38 00000000:0000 0A"
    if (sscanf(line, " %*u: %8X:%4X %*8X:%*4X %2X", &addr, &lport, &state) == 3)
      found = addr == htonl(INADDR_LOOPBACK) && lport == port && state == 0x0A /* LISTEN */;
  }
  if (fclose(f) != 0) die_errno("fclose");
  return found;
}

static void wait_for_relays(struct relay *relays, int n) {
  struct timespec start, now, pause = {0, 1000 * 1000};
  if (clock_gettime(CLOCK_MONOTONIC, &start) != 0) die_errno("clock_gettime");
  for (;;) {
    int ready = 0;
    for (int i = 0; i < n; i++) {
      int status;
      pid_t pid = waitpid(relays[i].pid, &status, WNOHANG);
      if (pid < 0) die_errno("waitpid");
      if (pid > 0)
        die("relay for 127.0.0.1:%u (socat) exited with status %d before listening",
            relays[i].port, status_code(status));
      ready += listening(relays[i].port);
    }
    if (ready == n) return;
    if (clock_gettime(CLOCK_MONOTONIC, &now) != 0) die_errno("clock_gettime");
    long ms = (now.tv_sec - start.tv_sec) * 1000 + (now.tv_nsec - start.tv_nsec) / 1000000;
    if (ms > RELAY_WAIT_MS) die("relays did not start listening within %d ms", RELAY_WAIT_MS);
    nanosleep(&pause, NULL);
  }
}

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

// Landlock user API (linux/landlock.h), spelled out so that older kernel headers build too.
#ifndef SYS_landlock_create_ruleset
#define SYS_landlock_create_ruleset 444
#endif
#ifndef SYS_landlock_add_rule
#define SYS_landlock_add_rule 445
#endif
#ifndef SYS_landlock_restrict_self
#define SYS_landlock_restrict_self 446
#endif
#define LL_CREATE_RULESET_VERSION (1U << 0)
#define LL_RULE_PATH_BENEATH 1
#define LL_WRITE_FILE (1ULL << 1)
#define LL_REMOVE_DIR (1ULL << 4)
#define LL_REMOVE_FILE (1ULL << 5)
#define LL_MAKE_CHAR (1ULL << 6)
#define LL_MAKE_DIR (1ULL << 7)
#define LL_MAKE_REG (1ULL << 8)
#define LL_MAKE_SOCK (1ULL << 9)
#define LL_MAKE_FIFO (1ULL << 10)
#define LL_MAKE_BLOCK (1ULL << 11)
#define LL_MAKE_SYM (1ULL << 12)
#define LL_REFER (1ULL << 13)    /* ABI 2 */
#define LL_TRUNCATE (1ULL << 14) /* ABI 3 */
// Only writing is handled: reads and execution are the mounts' business. IOCTL_DEV (ABI 5)
// stays unhandled: a terminal needs its ioctls.
#define LL_WRITE_RIGHTS                                                                           \
  (LL_WRITE_FILE | LL_REMOVE_DIR | LL_REMOVE_FILE | LL_MAKE_CHAR | LL_MAKE_DIR | LL_MAKE_REG |    \
   LL_MAKE_SOCK | LL_MAKE_FIFO | LL_MAKE_BLOCK | LL_MAKE_SYM | LL_REFER)
// The rights that apply to a file itself (a rule on a non-directory may hold only these).
#define LL_FILE_RIGHTS (LL_WRITE_FILE | LL_TRUNCATE)

struct ll_ruleset_attr {
  uint64_t handled_access_fs;
};
struct ll_path_beneath_attr {
  uint64_t allowed_access;
  int32_t parent_fd;
} __attribute__((packed));

// Writable beyond the --writable paths. /dev: the sinks, the controlling terminal, new ptys
// (/dev/ptmx → pts/ptmx) and POSIX shared memory; nothing else of bwrap's /dev. /proc: the
// command's own files (oom_score_adj, uid_map of a nested namespace, ...); /proc/sys and the
// other dangerous entries are read-only mounts.
static const char *const always_writable[] = {"/dev/null", "/dev/zero", "/dev/full", "/dev/tty",
                                              "/dev/pts",  "/dev/shm",  "/proc"};

// Allow `handled` beneath the file or directory open at fd (only the file rights on a file).
static void allow_beneath(int ruleset, int fd, uint64_t handled, const char *what) {
  struct stat st;
  if (fstat(fd, &st) != 0) die("seccomp helper: %s: %s", what, strerror(errno));
  struct ll_path_beneath_attr rule = {
      S_ISDIR(st.st_mode) ? handled : handled & LL_FILE_RIGHTS, fd};
  if (syscall(SYS_landlock_add_rule, ruleset, LL_RULE_PATH_BENEATH, &rule, 0) != 0)
    die("seccomp helper: landlock rule for %s: %s", what, strerror(errno));
}

static void allow_path(int ruleset, const char *path, uint64_t handled, int must_exist) {
  int fd = open(path, O_PATH | O_CLOEXEC);
  if (fd < 0) {
    if (!must_exist && errno == ENOENT) return;
    die("seccomp helper: writable path %s: %s", path, strerror(errno));
  }
  allow_beneath(ruleset, fd, handled, path);
  close(fd);
}

// Runs in the command process, after init mounted /proc: the paths are the sandbox's.
static void restrict_writes(const char *const *writable, int nwritable) {
  long abi = syscall(SYS_landlock_create_ruleset, NULL, 0, LL_CREATE_RULESET_VERSION);
  if (abi < 0 && (errno == ENOSYS || errno == EOPNOTSUPP)) return; // not built in, or disabled
  if (abi < 0) die_errno("landlock_create_ruleset");
  if (abi < 2) return; // ABI 1 refuses every rename/link across directories, even inside cwd
  uint64_t handled = LL_WRITE_RIGHTS | (abi >= 3 ? LL_TRUNCATE : 0);
  struct ll_ruleset_attr attr = {handled};
  int ruleset = syscall(SYS_landlock_create_ruleset, &attr, sizeof attr, 0);
  if (ruleset < 0) die_errno("landlock_create_ruleset");
  for (int i = 0; i < nwritable; i++) allow_path(ruleset, writable[i], handled, 1);
  for (size_t i = 0; i < sizeof always_writable / sizeof always_writable[0]; i++)
    allow_path(ruleset, always_writable[i], handled, 0);
  // Stdio open for writing may be a host file or terminal: reopening it (/dev/stdout,
  // /proc/self/fd/2) gives nothing the descriptor does not. Pipes and sockets are outside
  // Landlock's reach anyway (EBADFD).
  for (int fd = 0; fd <= 2; fd++) {
    int flags = fcntl(fd, F_GETFL);
    if (flags < 0 || (flags & O_PATH) || (flags & O_ACCMODE) == O_RDONLY) continue;
    struct ll_path_beneath_attr rule = {handled & LL_FILE_RIGHTS, fd};
    if (syscall(SYS_landlock_add_rule, ruleset, LL_RULE_PATH_BENEATH, &rule, 0) != 0 &&
        errno != EBADFD)
      die("seccomp helper: landlock rule for fd %d: %s", fd, strerror(errno));
  }
  if (syscall(SYS_landlock_restrict_self, ruleset, 0) != 0) die_errno("landlock_restrict_self");
  close(ruleset);
}

static void install_filter(const struct sock_fprog *prog) {
  if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, prog) == 0) return;
  if (errno != ENOSYS) die_errno("seccomp");
  if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, prog, 0, 0) != 0) die_errno("PR_SET_SECCOMP");
}

// writable: NULL to leave Landlock out.
static void exec_command(char **cmd, const struct sock_fprog *prog,
                         const char *const *writable, int nwritable) {
  // Its own process group, so init can signal the command and everything it starts at once.
  if (setpgid(0, 0) != 0) die_errno("setpgid");
  unblock_signals();
  // bwrap already sets no_new_privs; set it again: Landlock and seccomp without CAP_SYS_ADMIN
  // require it, and it keeps execve from granting capabilities (setuid files, file caps, uid 0).
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) die_errno("PR_SET_NO_NEW_PRIVS");
  if (writable) restrict_writes(writable, nwritable);
  install_filter(prog);
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

// PID 1 of the nested PID namespace.
static int run_init(char **cmd, const struct sock_fprog *prog, const char *const *writable,
                    int nwritable, const sigset_t *set) {
  if (unshare(CLONE_NEWNS) != 0) die_errno("unshare(CLONE_NEWNS)");
  // Private: nothing mounted here propagates back to bwrap's mount namespace.
  if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0) die_errno("make mounts private");
  // A /proc of the new PID namespace shows only the command and its descendants. The kernel
  // allows it only while bwrap's /proc is fully visible: for an unprivileged user, bwrap's
  // `--ro-bind /proc/sys /proc/sys` (a locked bind from the host's proc) breaks that, so srt
  // leaves it out when this helper runs (the /proc/sys below replaces it).
  if (mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) != 0)
    die("seccomp helper: cannot mount a fresh /proc: %s (bwrap must not cover /proc/sys)",
        strerror(errno));
  for (size_t i = 0; i < sizeof proc_covered / sizeof proc_covered[0]; i++)
    proc_read_only(proc_covered[i]);
  // Non-dumpable: the command (same uid, no capabilities) can neither ptrace this process nor
  // open its /proc/1/{mem,environ,fd}.
  if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) die_errno("PR_SET_DUMPABLE");
  drop_capabilities();
  pid_t pid = fork();
  if (pid < 0) die_errno("fork");
  if (pid == 0) exec_command(cmd, prog, writable, nwritable);
  // Also here, so a signal forwarded before the child ran setpgid still reaches the group.
  if (setpgid(pid, pid) != 0 && errno != EACCES && errno != ESRCH) die_errno("setpgid");
  return forward_until_exit(pid, 1, set);
}

int main(int argc, char **argv) {
  if (argc == 2 && strcmp(argv[1], "--version") == 0) {
    printf("srt-seccomp 1\n");
    return 0;
  }
  sigset_t set;
  block_signals(&set); // first: a signal arriving during setup is queued, then forwarded
  drop_bounding_set();
  // Whatever srt's caller left open without close-on-exec (a pipe, a log file, a control fd)
  // would otherwise be readable or writable from inside: nothing past stderr goes in.
  if (syscall(SYS_close_range, 3U, ~0U, 0U) != 0) die_errno("close_range");

  struct relay relays[MAX_RELAYS];
  int nrelays = 0;
  const char *filter_path = NULL;
  const char **writable = calloc(argc, sizeof *writable);
  if (!writable) die_errno("calloc");
  int nwritable = 0, landlock = 1;
  int i = 1;
  for (; i < argc; i++) {
    if (strcmp(argv[i], "--") == 0) break;
    if (strcmp(argv[i], "--no-landlock") == 0) {
      landlock = 0;
      continue;
    }
    if (i + 1 >= argc) usage();
    if (strcmp(argv[i], "--relay") == 0) {
      if (nrelays == MAX_RELAYS) die("seccomp helper: more than %d relays", MAX_RELAYS);
      parse_relay(argv[++i], &relays[nrelays]);
      for (int r = 0; r < nrelays; r++)
        if (relays[r].port == relays[nrelays].port)
          die("seccomp helper: --relay: port %u given twice", relays[r].port);
      nrelays++;
    } else if (strcmp(argv[i], "--writable") == 0) {
      if (argv[i + 1][0] != '/') die("seccomp helper: --writable %s: not absolute", argv[i + 1]);
      writable[nwritable++] = argv[++i];
    } else if (strcmp(argv[i], "--filter") == 0 && !filter_path) {
      filter_path = argv[++i];
    } else {
      usage();
    }
  }
  if (!filter_path || i + 1 >= argc) usage();
  if (!landlock && nwritable > 0)
    die("seccomp helper: --writable and --no-landlock exclude each other");
  char **cmd = argv + i + 1;

  struct sock_fprog prog;
  read_filter(filter_path, &prog);

  if (nrelays > 0) {
    const char *socat = find_socat();
    for (int r = 0; r < nrelays; r++) start_relay(socat, &relays[r]);
    wait_for_relays(relays, nrelays);
  }

  // CLONE_NEWPID applies to the next child, which becomes PID 1 of the nested namespace.
  if (unshare(CLONE_NEWPID) != 0)
    die("seccomp helper: cannot create a PID namespace: %s (run under bwrap --unshare-user "
        "--cap-add CAP_SYS_ADMIN)",
        strerror(errno));
  pid_t init = fork();
  if (init < 0) die_errno("fork");
  if (init == 0) _exit(run_init(cmd, &prog, landlock ? writable : NULL, nwritable, &set));
  drop_capabilities();
  return forward_until_exit(init, 0, &set);
}
