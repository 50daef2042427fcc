// Signal plumbing of the outer helper and init: forwarded signals are blocked and taken with
// sigwaitinfo, then passed on to the command; children are reaped.

#include "helper.h"

#include <signal.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

// Signals passed on to the command. SIGCHLD is handled here; SIGKILL/SIGSTOP cannot be caught.
static const int forwarded_signals[] = {
    SIGHUP, SIGINT,  SIGQUIT, SIGUSR1, SIGUSR2, SIGALRM, SIGTERM,
    SIGCONT, SIGTSTP, SIGTTIN, SIGTTOU, SIGWINCH,
};

void block_signals(sigset_t *set) {
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
