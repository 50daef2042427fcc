// Shared declarations of srt-init, the sandbox's first process (see main.c for what it does).
// One file per mechanism: main.c (arguments, the outer process), util.c (messages, record files,
// descriptors), listing.c (the protected-path search, outside), signals.c, verify.c (mount
// check), caps.c, relays.c, connect.c, splice.c, init.c (nested PID/mount namespace, the command), pty.c
// (the command's terminal), freeze.c (stopping the sandbox while srt is stopped), limits.c,
// landlock.c, filter.c, readgate.c (with glob.c), and the protected-path supervisor:
// supervisor.c (notification loop), rules.c, resolve.c, emulate.c, loopback.c (refused loopback
// connections, for the report).
#ifndef SRT_HELPER_H
#define SRT_HELPER_H

#define _GNU_SOURCE
#include <errno.h>
#include <linux/filter.h>
#include <signal.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/un.h>

#define EXIT_SETUP 125

// util.c. Print `srt: MESSAGE` in one write (messages of several processes never interleave) and exit 125.
__attribute__((noreturn, format(printf, 1, 2))) void die(const char *fmt, ...);
#define die_errno(what) die("srt-init: %s: %s", (what), strerror(errno))
// A file of NUL-terminated records (srt's mount plan, supervisor rules): read whole, at most max
// bytes, the last record terminated; dies otherwise. *len is its length, buf[*len] a NUL.
char *read_records(const char *path, const char *what, size_t max, size_t *len);
// Print `srt: warning: MESSAGE` in one write and go on.
__attribute__((format(printf, 1, 2))) void warn(const char *fmt, ...);
// Close every descriptor from 3 up but `keep` (ascending: sort_fds).
void close_inherited_fds(const int *keep, int nkeep);
void sort_fds(int *fds, int n);

// caps.c
void drop_bounding_set(void);
void drop_capabilities(void);

// signals.c: signal plumbing shared by the outer helper and init. block_signals blocks the
// forwarded signals and SIGCHLD (taken with sigwaitinfo) and fills `set` with them.
void block_signals(sigset_t *set);
void unblock_signals(void);
int status_code(int status);
int forward_until_exit(pid_t child, int to_group, const sigset_t *set);

// relays.c: listeners bound before the command starts, one splice(2) relay process for all.
enum relay_kind {
  RELAY_TO_UNIX,    // --relay: a listener inside → a Unix socket of srt's proxy outside
  RELAY_TO_SANDBOX, // --expose: a listener on the host → the sandbox's loopback
};
struct relay {
  enum relay_kind kind;
  int listen_fd;
  unsigned port;                  // the listener's (RELAY_TO_UNIX) or the sandbox port (TO_SANDBOX)
  struct sockaddr_storage listen; // RELAY_TO_UNIX: where to listen
  socklen_t listen_len;
  struct sockaddr_un target;      // RELAY_TO_UNIX: where to connect
  char label[80];                 // for messages
};
extern pid_t relay_pid; // the relay process, once started
// `127.0.0.1:PORT` or `[::1]:PORT` at the start of spec → address; returns the rest, NULL if invalid.
const char *parse_addr_port(const char *spec, struct sockaddr_storage *ss, socklen_t *len,
                            unsigned *port);
void parse_relay(const char *spec, struct relay *r);
void parse_expose(const char *spec, struct relay *r);
void start_relays(struct relay *relays, int n);
// `--host-listen FD:ADDR:PORT... -- PROGRAM ARGS`: outside the sandbox, bind, then exec PROGRAM.
__attribute__((noreturn)) int host_listen_exec(int argc, char **argv);

// connect.c: `--connect PROXYADDR:PORT HOST PORT`, an HTTP CONNECT client for ssh's ProxyCommand.
int proxy_connect(int argc, char **argv);

// listing.c: `--list-protected DEPTH ...`, the protected-path search of the current directory.
int list_protected(int argc, char **argv);

// splice.c: `--splice PARENTPID`, outside the sandbox: one opaque tunnel handed over by the proxy.
int splice_tunnel(int argc, char **argv);

// pty.c: the command's own terminal, relayed to srt over a socket (see pty.c).
#define PTY_SIG_FREEZE (SIGRTMIN)
#define PTY_SIG_THAW (SIGRTMIN + 1)
struct pty {
  int channel;     // stream socket to srt
  int parent_stat; // srt's /proc/PID/stat
  int stdio;       // bit N: the command's fd N is the terminal; without bit 0 it is output only
  int master, slave;
  int report[2];   // init → relay
  pid_t relay;
};
void parse_pty(const char *spec, struct pty *p);
// Outer helper, in this order: create the pty (adds the freeze/thaw signals to `set`), fork the
// relay (before the nested PID namespace), then after forking init hand over and close its ends;
// at the end wait until the relay has delivered the last output.
void pty_create(struct pty *p, sigset_t *set);
void pty_start_relay(struct pty *p);
void pty_started(struct pty *p, pid_t init);
void pty_finish(struct pty *p, const sigset_t *set);
// init: session leader with the pty as controlling terminal; the command: foreground group,
// stdio on the pty.
void pty_init_session(struct pty *p);
void pty_attach_command(const struct pty *p);
int pty_forward_until_exit(const struct pty *p, pid_t child, const sigset_t *set);

// freeze.c (init): stop every process of the PID namespace that is not stopped already, and
// continue exactly those.
struct freeze {
  pid_t *pids; // the processes this freeze stopped, parents first
  size_t n, cap;
};
void freeze_namespace(struct freeze *f);
void thaw_namespace(struct freeze *f);

// filter.c
void read_filter(const char *path, struct sock_fprog *prog);
// With listen, the filter's seccomp user-notification listener is returned (else -1).
int install_filter(const struct sock_fprog *prog, int listen);

// limits.c: the sandbox's share of the per-user kernel limits (init, before the command).
void limit_processes_to(rlim_t max);
void limit_per_user(void);

// landlock.c: the command may write only beneath these n absolute paths (and a few devices);
// socket files only after landlock_allow_socket_files().
int open_writable(const char *path);
void restrict_writes(const char *const *paths, const int *writable, int nwritable);
// The kernel's Landlock ABI version; 0 when it has no Landlock, -1 when it is built in but disabled.
long landlock_abi(void);
void landlock_allow_socket_files(void);

// verify.c: the sandbox's mounts checked against srt's plan (--verify FILE) before anything
// runs: all but the snapshots' in the outer helper (verify_mounts(0)), then in init's mount
// namespace once verify_fill_snapshots has completed them, all (verify_mounts(1));
// verified_open: a planned read-write bind's root, checked again, as an O_PATH descriptor (-1
// when no plan is loaded or it plans no such bind).
void verify_load(const char *path);
void verify_fill_snapshots(void);
void verify_mounts(int all);
int verify_loaded(void);
int verified_open(const char *path);

// supervisor.c: the protected-path supervisor (seccomp user notifications), a thread of init
// started once init holds its final Landlock domain and no capabilities. supervisor_socket()
// gives the end the command sends its listener on (supervisor_send_listener, after
// install_filter); supervisor_forked() once the command is forked.
void supervisor_load_rules(const char *path);
int supervisor_socket(void);
void supervisor_send_listener(int sock, int listener);
void supervisor_start(int report_fd);
void supervisor_forked(void);
// Once the command has ended: the report's last records (where new repositories ended up).
void supervisor_finish(void);

// glob.c: srt's globs (src/glob.ts) against absolute paths. glob_compile: NULL for a range
// written backwards. glob_match_prefix: the length of the shortest prefix of path ending a
// component that the glob matches (0: none). glob_reaches: could a path below dir match?
// glob_may_expose: could a path below `from` match where the same path below `to` does not
// (renaming directory from to to would uncover it)?
struct glob;
struct glob *glob_compile(const char *pattern);
size_t glob_match_prefix(const struct glob *g, const char *path);
int glob_reaches(const struct glob *g, const char *dir);
int glob_may_expose(const struct glob *g, const char *from, const char *to);

// readgate.c: read-denied paths and globs, checked by the supervisor at every open.
// gate_rule takes an `H`, `h` or `O` rules record (0: not one); gate_start records the masks in
// place (in init, before the command); gate_hidden: is the absolute path (with st: the object
// found there) denied, or with partial, does it hold a denied path (of the literal ones)?
// gate_moves: would moving the tree at from to to uncover a path a glob denies?
struct stat;
int gate_rule(char kind, char *val);
int gate_active(void);
int gate_has_globs(void);
void gate_start(void);
int gate_hidden(const char *path, int partial, const struct stat *st);
int gate_moves(const char *from, const char *to);

// init.c: PID 1 of the nested PID namespace; writable NULL leaves Landlock out, pty NULL leaves
// the command on the helper's own stdio; protect: run the supervisor (rules loaded), reporting
// on report_fd (-1: none); go_fd: the command starts only after one byte there (-1: at once).
int run_init(char **cmd, const struct sock_fprog *prog, const char *const *writable,
             const int *writable_fds, int nwritable, struct pty *pty, int protect, int report_fd,
             int go_fd, const sigset_t *set);

#endif
