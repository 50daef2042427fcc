// srt-init: the first process inside srt's bubblewrap sandbox.
//
//   srt-init [--relay ADDR:PORT:SOCKETPATH]... [--expose FD:PORT]... [--writable PATH]...
//               [--socket-files] [--no-landlock] [--pty CHANNELFD:STATFD:STDIO]
//               [--protect RULES [--report-fd N]] [--verify PLAN] [--go-fd N] --max-procs N
//               --filter FILE -- CMD ARGS...
//   srt-init --host-listen FD:ADDR:PORT... -- BWRAP ARGS...   (outside, see relays.c)
//   srt-init --connect PROXYADDR:PORT HOST PORT               (ssh ProxyCommand, connect.c)
//   srt-init --splice PARENTPID                               (outside: one tunnel, splice.c)
//   srt-init --landlock-abi                                   (for srt doctor, landlock.c)
//   srt-init --list-protected DEPTH [-f NAME]... [-s SUFFIX]... [-d DIRNAME]... [--cache]
//                                                   (outside: the protected-path search, listing.c)
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
//     against RULES, and reports refusals on descriptor N; with --go-fd, init forks the command
//     only once srt writes one byte on descriptor N (srt's proxy listens by then; srt starts it
//     while bwrap and this helper set the sandbox up): end of file instead means srt failed or
//     is gone, and init exits 125 without running anything;
//  3. forwards signals (outer → init → the command's process group), reaps, and exits with the command's status
//     (128+N when killed by signal N). When the outer process exits, the kernel kills everything
//     left in the sandbox, the relay included.
// Its own failures exit 125 with a `srt: ` message; exec failures 127 (not found) / 126.
//
// This file: arguments and the outer process; each mechanism has its own file (helper.h lists
// them).

#include "helper.h"

#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define MAX_RELAYS 256

static void usage(void) {
  die("srt-init: usage: srt-init [--relay ADDR:PORT:SOCKETPATH]... [--expose FD:PORT]... "
      "[--writable PATH]... [--socket-files] [--no-landlock] [--pty CHANNELFD:STATFD:STDIO] "
      "[--protect RULES [--report-fd N]] [--verify PLAN] [--go-fd N] --max-procs N "
      "--filter FILE -- CMD ARGS...");
}

int main(int argc, char **argv) {
  if (argc == 2 && strcmp(argv[1], "--version") == 0) {
    printf("srt-init 2\n");
    return 0;
  }
  if (argc == 2 && strcmp(argv[1], "--landlock-abi") == 0) {
    printf("%ld\n", landlock_abi());
    return 0;
  }
  if (argc > 1 && strcmp(argv[1], "--connect") == 0) return proxy_connect(argc - 2, argv + 2);
  if (argc > 1 && strcmp(argv[1], "--list-protected") == 0) return list_protected(argc - 2, argv + 2);
  if (argc > 1 && strcmp(argv[1], "--splice") == 0) return splice_tunnel(argc - 2, argv + 2);
  if (argc > 1 && strcmp(argv[1], "--host-listen") == 0) host_listen_exec(argc - 1, argv + 1);
  sigset_t set;
  block_signals(&set); // first: a signal arriving during setup is queued, then forwarded
  drop_bounding_set();

  struct relay relays[MAX_RELAYS];
  struct pty pty;
  int use_pty = 0;
  int nrelays = 0;
  const char *filter_path = NULL, *protect_path = NULL, *verify_path = NULL;
  int report_fd = -1, go_fd = -1;
  long max_procs = -1;
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
      if (nrelays == MAX_RELAYS) die("srt-init: more than %d relays", MAX_RELAYS);
      struct relay *r = &relays[nrelays];
      if (argv[i][2] == 'r') parse_relay(argv[++i], r);
      else parse_expose(argv[++i], r);
      // Several host listeners may lead to one sandbox port (127.0.0.1 and ::1, or two host
      // ports): only a listener, or a descriptor, given twice is a mistake.
      for (int k = 0; k < nrelays; k++) {
        if (r->kind == RELAY_TO_UNIX && relays[k].kind == RELAY_TO_UNIX && strcmp(relays[k].label, r->label) == 0)
          die("srt-init: %s: %s given twice", argv[i - 1], r->label);
        if (r->kind == RELAY_TO_SANDBOX && relays[k].listen_fd == r->listen_fd)
          die("srt-init: --expose: descriptor %d given twice", r->listen_fd);
      }
      nrelays++;
    } else if (strcmp(argv[i], "--writable") == 0) {
      if (argv[i + 1][0] != '/') die("srt-init: --writable %s: not absolute", argv[i + 1]);
      writable[nwritable++] = argv[++i];
    } else if (strcmp(argv[i], "--pty") == 0 && !use_pty) {
      parse_pty(argv[++i], &pty);
      use_pty = 1;
    } else if (strcmp(argv[i], "--protect") == 0 && !protect_path) {
      protect_path = argv[++i];
    } else if (strcmp(argv[i], "--report-fd") == 0 && report_fd < 0) {
      char *end;
      long fd = strtol(argv[++i], &end, 10);
      if (*end || fd < 3 || fd > 1024) die("srt-init: --report-fd %s: want a descriptor >= 3", argv[i]);
      report_fd = (int)fd;
    } else if (strcmp(argv[i], "--go-fd") == 0 && go_fd < 0) {
      char *end;
      long fd = strtol(argv[++i], &end, 10);
      if (*end || fd < 3 || fd > 1024) die("srt-init: --go-fd %s: want a descriptor >= 3", argv[i]);
      go_fd = (int)fd;
    } else if (strcmp(argv[i], "--max-procs") == 0 && max_procs < 0) {
      char *end;
      max_procs = strtol(argv[++i], &end, 10);
      if (*end || max_procs < 1) die("srt-init: --max-procs %s: want a number >= 1", argv[i]);
    } else if (strcmp(argv[i], "--verify") == 0 && !verify_path) {
      verify_path = argv[++i];
    } else if (strcmp(argv[i], "--filter") == 0 && !filter_path) {
      filter_path = argv[++i];
    } else {
      usage();
    }
  }
  if (!filter_path || i + 1 >= argc) usage();
  // Required: without it the sandbox could take every PID of the host (limits.c).
  if (max_procs < 0) die("srt-init: --max-procs is required");
  limit_processes_to((rlim_t)max_procs);
  // First: nothing else may start in a sandbox whose mounts are not the planned ones.
  if (verify_path) {
    verify_load(verify_path);
    verify_mounts(0);
  }
  if (!landlock && nwritable > 0)
    die("srt-init: --writable and --no-landlock exclude each other");
  if (report_fd >= 0 && !protect_path) die("srt-init: --report-fd needs --protect");
  char **cmd = argv + i + 1;
  // Kept: the pty's two descriptors, the exposed ports' listeners and the supervisor's report
  // descriptor and the go descriptor (which init keeps; the command never holds them), ascending.
  int *keep = calloc((size_t)nrelays + 4, sizeof *keep);
  if (!keep) die_errno("calloc");
  int nkeep = 0;
  if (use_pty) keep[nkeep++] = pty.channel, keep[nkeep++] = pty.parent_stat;
  for (int r = 0; r < nrelays; r++)
    if (relays[r].kind == RELAY_TO_SANDBOX) keep[nkeep++] = relays[r].listen_fd;
  if (report_fd >= 0) keep[nkeep++] = report_fd;
  if (go_fd >= 0) keep[nkeep++] = go_fd;
  sort_fds(keep, nkeep);
  for (int k = 1; k < nkeep; k++)
    if (keep[k] == keep[k - 1]) die("srt-init: descriptor %d given twice", keep[k]);
  close_inherited_fds(keep, nkeep);
  free(keep);
  if (report_fd >= 0 && fcntl(report_fd, F_SETFD, FD_CLOEXEC) != 0)
    die("srt-init: --report-fd %d: %s", report_fd, strerror(errno));
  if (go_fd >= 0 && fcntl(go_fd, F_SETFD, FD_CLOEXEC) != 0)
    die("srt-init: --go-fd %d: %s", go_fd, strerror(errno));
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
    die("srt-init: cannot create a PID namespace: %s (run under bwrap --unshare-user "
        "--cap-add CAP_SYS_ADMIN)",
        strerror(errno));
  pid_t init = fork();
  if (init < 0) die_errno("fork");
  if (init == 0)
    _exit(run_init(cmd, &prog, landlock ? writable : NULL, writable_fds, nwritable, use_pty ? &pty : NULL,
                   protect_path != NULL, report_fd, go_fd, &set));
  if (use_pty) pty_started(&pty, init);
  for (int w = 0; landlock && w < nwritable; w++) close(writable_fds[w]);
  if (report_fd >= 0) close(report_fd);
  if (go_fd >= 0) close(go_fd);
  drop_capabilities();
  int status = forward_until_exit(init, 0, &set);
  if (use_pty) pty_finish(&pty, &set);
  return status;
}
