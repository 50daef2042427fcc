// Shared declarations of the srt-seccomp helper (see main.c for what it does). One file per
// mechanism: main.c (arguments, signals), caps.c, relays.c, init.c (nested PID/mount namespace,
// the command), landlock.c, filter.c.
#ifndef SRT_HELPER_H
#define SRT_HELPER_H

#define _GNU_SOURCE
#include <errno.h>
#include <linux/filter.h>
#include <signal.h>
#include <string.h>
#include <sys/types.h>

#define EXIT_SETUP 125

// Print `srt: MESSAGE` in one write (messages of several processes never interleave) and exit 125.
__attribute__((noreturn, format(printf, 1, 2))) void die(const char *fmt, ...);
#define die_errno(what) die("seccomp helper: %s: %s", (what), strerror(errno))

// caps.c
void drop_bounding_set(void);
void drop_capabilities(void);

// main.c: signal plumbing shared by the outer helper and init.
void unblock_signals(void);
int status_code(int status);
int forward_until_exit(pid_t child, int to_group, const sigset_t *set);

// relays.c
struct relay {
  unsigned port;
  const char *socket_path;
  pid_t pid;
};
void parse_relay(const char *spec, struct relay *r);
void start_relays(struct relay *relays, int n);

// filter.c
void read_filter(const char *path, struct sock_fprog *prog);
void install_filter(const struct sock_fprog *prog);

// landlock.c: the command may write only beneath these n absolute paths (and a few devices);
// socket files only after landlock_allow_socket_files().
void restrict_writes(const char *const *writable, int nwritable);
void landlock_allow_socket_files(void);

// init.c: PID 1 of the nested PID namespace; writable NULL leaves Landlock out.
int run_init(char **cmd, const struct sock_fprog *prog, const char *const *writable, int nwritable,
             const sigset_t *set);

#endif
