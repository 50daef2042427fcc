// srt-seccomp: the first process inside srt's bubblewrap sandbox.
//
//   srt-seccomp [--relay ADDR:PORT:SOCKETPATH]... [--expose FD:PORT]... [--writable PATH]...
//               [--socket-files] [--no-landlock] [--pty CHANNELFD:STATFD:STDIO]
//               [--protect RULES [--report-fd N]] [--verify PLAN] --filter FILE -- CMD ARGS...
//   srt-seccomp --host-listen FD:ADDR:PORT... -- BWRAP ARGS...   (outside, see relays.c)
//   srt-seccomp --connect PROXYADDR:PORT HOST PORT               (ssh ProxyCommand, connect.c)
//   srt-seccomp --landlock-abi                                   (for srt doctor, landlock.c)
//
// bwrap starts it as PID 1 of the sandbox's PID namespace (--unshare-user --as-pid-1
// --cap-drop ALL --cap-add CAP_SYS_ADMIN --cap-add CAP_SETPCAP --cap-add CAP_DAC_READ_SEARCH (for
// the mount check) --cap-add CAP_SYS_RESOURCE (init sets the sandbox's share of the per-user
// limits, limits.c), plus CAP_NET_BIND_SERVICE when a relay listens below port 1024): its
// capabilities count only in bwrap's user namespace. It
//  0. with --verify, checks every mount of the sandbox against srt's plan (verify.c), but the
//     snapshots', which init completes in its mount namespace (and checks there, step 2);
//  1. binds every relay's listener and starts the relay process (relays.c; no capabilities),
//     which passes each connection on to srt's proxy (--relay) or into the sandbox (--expose);
//  2. creates a nested PID namespace whose PID 1 ("init") takes a new mount namespace, completes
//     the snapshots there and checks every planned mount, mounts a fresh /proc there (so the
//     command cannot see the relay or this process), re-binds the dangerous /proc entries
//     read-only, drops every capability, sets no_new_privs, restricts writes with Landlock
//     (landlock.c) and forks the command, which installs the seccomp filter
//     from FILE and execs CMD; with --pty, on its own terminal, relayed to srt (pty.c); with
//     --protect, the filter's user notifications go to the protected-path supervisor, a thread
//     of init (supervisor.c), which performs the creating calls itself after checking them
//     against RULES, and reports refusals on descriptor N;
//  3. forwards signals (outer → init → the command's process group), reaps, and exits with the command's status
//     (128+N when killed by signal N). When the outer process exits, the kernel kills everything
//     left in the sandbox, the relay included.
// Its own failures exit 125 with a `srt: ` message; exec failures 127 (not found) / 126.
//
// This file: arguments, signal plumbing and the outer process; each mechanism has its own file
// (helper.h lists them).

#include "helper.h"

#include <stdarg.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_RELAYS 256

// Signals passed on to the command. SIGCHLD is handled here; SIGKILL/SIGSTOP cannot be caught.
static const int forwarded_signals[] = {
    SIGHUP, SIGINT,  SIGQUIT, SIGUSR1, SIGUSR2, SIGALRM, SIGTERM,
    SIGCONT, SIGTSTP, SIGTTIN, SIGTTOU, SIGWINCH,
};

void die(const char *fmt, ...) {
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

char *read_records(const char *path, const char *what, size_t max, size_t *len) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) die("seccomp helper: cannot open the %s %s: %s", what, path, strerror(errno));
  struct stat st;
  if (fstat(fd, &st) != 0) die_errno("fstat");
  if (!S_ISREG(st.st_mode) || (size_t)st.st_size > max) die("seccomp helper: %s: not a %s", path, what);
  char *buf = malloc(st.st_size + 1);
  if (!buf) die_errno("malloc");
  size_t done = 0;
  while (done < (size_t)st.st_size) {
    ssize_t n = read(fd, buf + done, st.st_size - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) die("seccomp helper: cannot read the %s %s", what, path);
    done += n;
  }
  close(fd);
  buf[done] = '\0';
  if (done > 0 && buf[done - 1] != '\0') die("seccomp helper: %s: unterminated record", path);
  *len = done;
  return buf;
}

void warn(const char *fmt, ...) {
  char msg[1024] = "srt: warning: ";
  size_t head = strlen(msg);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg + head, sizeof msg - head - 1, fmt, ap);
  va_end(ap);
  size_t len = strlen(msg);
  msg[len] = '\n';
  if (write(STDERR_FILENO, msg, len + 1) < 0) { /* nothing left to report it to */ }
}

static void usage(void) {
  die("seccomp helper: usage: srt-seccomp [--relay ADDR:PORT:SOCKETPATH]... [--expose FD:PORT]... "
      "[--writable PATH]... [--socket-files] [--no-landlock] [--pty CHANNELFD:STATFD:STDIO] "
      "[--protect RULES [--report-fd N]] [--verify PLAN] "
      "--filter FILE -- CMD ARGS...");
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

void unblock_signals(void) {
  sigset_t none;
  sigemptyset(&none);
  if (sigprocmask(SIG_SETMASK, &none, NULL) != 0) die_errno("sigprocmask");
}

int status_code(int status) {
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// Pass signals on to `child`, reap every child (orphans too, as a PID-namespace init must) and
// return `child`'s exit status once it is gone.
int forward_until_exit(pid_t child, int to_group, const sigset_t *set) {
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
      if (pid == relay_pid) {
        fprintf(stderr, "srt: the network relay exited (status %d); new connections from the "
                        "sandbox fail\n", status_code(status));
        relay_pid = 0;
      }
    }
  }
}

void sort_fds(int *fds, int n) {
  for (int i = 1; i < n; i++)
    for (int k = i; k > 0 && fds[k - 1] > fds[k]; k--) {
      int t = fds[k];
      fds[k] = fds[k - 1];
      fds[k - 1] = t;
    }
}

// Whatever srt's caller left open without close-on-exec (a pipe, a log file, a control fd)
// would otherwise be readable or writable from inside: nothing past stderr goes in but the
// descriptors named on the command line (`keep`, ascending).
void close_inherited_fds(const int *keep, int nkeep) {
  unsigned from = 3;
  for (int k = 0; k < nkeep; k++) {
    if ((unsigned)keep[k] > from && syscall(SYS_close_range, from, (unsigned)keep[k] - 1, 0U) != 0)
      die_errno("close_range");
    from = (unsigned)keep[k] + 1;
  }
  if (syscall(SYS_close_range, from, ~0U, 0U) != 0) die_errno("close_range");
}

int main(int argc, char **argv) {
  if (argc == 2 && strcmp(argv[1], "--version") == 0) {
    printf("srt-seccomp 2\n");
    return 0;
  }
  if (argc == 2 && strcmp(argv[1], "--landlock-abi") == 0) {
    printf("%ld\n", landlock_abi());
    return 0;
  }
  if (argc > 1 && strcmp(argv[1], "--connect") == 0) return proxy_connect(argc - 2, argv + 2);
  if (argc > 1 && strcmp(argv[1], "--host-listen") == 0) host_listen_exec(argc - 1, argv + 1);
  sigset_t set;
  block_signals(&set); // first: a signal arriving during setup is queued, then forwarded
  drop_bounding_set();

  struct relay relays[MAX_RELAYS];
  struct pty pty;
  int use_pty = 0;
  int nrelays = 0;
  const char *filter_path = NULL, *protect_path = NULL, *verify_path = NULL;
  int report_fd = -1;
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
    if (strcmp(argv[i], "--socket-files") == 0) {
      landlock_allow_socket_files();
      continue;
    }
    if (i + 1 >= argc) usage();
    if (strcmp(argv[i], "--relay") == 0 || strcmp(argv[i], "--expose") == 0) {
      if (nrelays == MAX_RELAYS) die("seccomp helper: more than %d relays", MAX_RELAYS);
      struct relay *r = &relays[nrelays];
      if (argv[i][2] == 'r') parse_relay(argv[++i], r);
      else parse_expose(argv[++i], r);
      for (int k = 0; k < nrelays; k++) {
        if (strcmp(relays[k].label, r->label) == 0)
          die("seccomp helper: %s: %s given twice", argv[i - 1], r->label);
        if (r->kind == RELAY_TO_SANDBOX && relays[k].listen_fd == r->listen_fd)
          die("seccomp helper: --expose: descriptor %d given twice", r->listen_fd);
      }
      nrelays++;
    } else if (strcmp(argv[i], "--writable") == 0) {
      if (argv[i + 1][0] != '/') die("seccomp helper: --writable %s: not absolute", argv[i + 1]);
      writable[nwritable++] = argv[++i];
    } else if (strcmp(argv[i], "--pty") == 0 && !use_pty) {
      parse_pty(argv[++i], &pty);
      use_pty = 1;
    } else if (strcmp(argv[i], "--protect") == 0 && !protect_path) {
      protect_path = argv[++i];
    } else if (strcmp(argv[i], "--report-fd") == 0 && report_fd < 0) {
      char *end;
      long fd = strtol(argv[++i], &end, 10);
      if (*end || fd < 3 || fd > 1024) die("seccomp helper: --report-fd %s: want a descriptor >= 3", argv[i]);
      report_fd = (int)fd;
    } else if (strcmp(argv[i], "--verify") == 0 && !verify_path) {
      verify_path = argv[++i];
    } else if (strcmp(argv[i], "--filter") == 0 && !filter_path) {
      filter_path = argv[++i];
    } else {
      usage();
    }
  }
  if (!filter_path || i + 1 >= argc) usage();
  // First: nothing else may start in a sandbox whose mounts are not the planned ones.
  if (verify_path) {
    verify_load(verify_path);
    verify_mounts(0);
  }
  if (!landlock && nwritable > 0)
    die("seccomp helper: --writable and --no-landlock exclude each other");
  if (report_fd >= 0 && !protect_path) die("seccomp helper: --report-fd needs --protect");
  char **cmd = argv + i + 1;
  // Kept: the pty's two descriptors, the exposed ports' listeners and the supervisor's report
  // descriptor (which init keeps; the command never holds it), ascending.
  int *keep = calloc((size_t)nrelays + 3, sizeof *keep);
  if (!keep) die_errno("calloc");
  int nkeep = 0;
  if (use_pty) keep[nkeep++] = pty.channel, keep[nkeep++] = pty.parent_stat;
  for (int r = 0; r < nrelays; r++)
    if (relays[r].kind == RELAY_TO_SANDBOX) keep[nkeep++] = relays[r].listen_fd;
  if (report_fd >= 0) keep[nkeep++] = report_fd;
  sort_fds(keep, nkeep);
  for (int k = 1; k < nkeep; k++)
    if (keep[k] == keep[k - 1]) die("seccomp helper: descriptor %d given twice", keep[k]);
  close_inherited_fds(keep, nkeep);
  free(keep);
  if (report_fd >= 0 && fcntl(report_fd, F_SETFD, FD_CLOEXEC) != 0)
    die("seccomp helper: --report-fd %d: %s", report_fd, strerror(errno));
  if (protect_path) supervisor_load_rules(protect_path);
  // Landlock's directories, opened now (verified, and while CAP_DAC_READ_SEARCH lets the walk
  // pass directories the user cannot search); init makes its rules of them.
  int *writable_fds = calloc(nwritable + 1, sizeof *writable_fds);
  if (!writable_fds) die_errno("calloc");
  for (int w = 0; landlock && w < nwritable; w++) writable_fds[w] = open_writable(writable[w]);

  struct sock_fprog prog;
  read_filter(filter_path, &prog);

  if (nrelays > 0) start_relays(relays, nrelays);

  if (use_pty) {
    pty_create(&pty, &set);
    pty_start_relay(&pty); // outside the nested PID namespace, so the command cannot see it
  }

  // CLONE_NEWPID applies to the next child, which becomes PID 1 of the nested namespace.
  if (unshare(CLONE_NEWPID) != 0)
    die("seccomp helper: cannot create a PID namespace: %s (run under bwrap --unshare-user "
        "--cap-add CAP_SYS_ADMIN)",
        strerror(errno));
  pid_t init = fork();
  if (init < 0) die_errno("fork");
  if (init == 0)
    _exit(run_init(cmd, &prog, landlock ? writable : NULL, writable_fds, nwritable, use_pty ? &pty : NULL,
                   protect_path != NULL, report_fd, &set));
  if (use_pty) pty_started(&pty, init);
  for (int w = 0; landlock && w < nwritable; w++) close(writable_fds[w]);
  if (report_fd >= 0) close(report_fd);
  drop_capabilities();
  int status = forward_until_exit(init, 0, &set);
  if (use_pty) pty_finish(&pty, &set);
  return status;
}
