// Freezing the whole sandbox while srt is stopped (SPEC §4 Terminal), without cgroups: init
// stops every process of its PID namespace with SIGSTOP, and later continues exactly the ones it
// stopped, so a job the user stopped inside (`kill -STOP %1`, Ctrl-Z of an inner shell's job)
// stays stopped, and a process that left the command's process group or session (setsid) is
// frozen like the rest.
//
// Order matters for shells inside: a shell that saw its foreground job stop would report
// "Stopped" and take the terminal back. So parents are stopped before their children, and a
// parent is seen stopped (/proc/PID/stat) before its children are signalled: a stop takes effect
// only once the target runs, and a waiting shell woken by its own SIGSTOP could otherwise still
// collect its child's stop first. Continuing goes the other way, children first; SIGCONT takes
// effect when it is sent, so nothing needs waiting for.

#include "helper.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define FREEZE_ROUNDS 64    // rescans for processes forked while the freeze was under way
#define FREEZE_WAIT_MS 1000 // the longest a freeze waits for parents to stop, in all

struct proc {
  pid_t pid, ppid;
  char state;
  int depth;
};

static long monotonic_ms(void) {
  struct timespec t;
  if (clock_gettime(CLOCK_MONOTONIC, &t) != 0) die_errno("clock_gettime");
  return t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

// The state letter of `pid` (and its parent), 0 when it is gone. "PID (COMM) S PPID ...".
static char proc_state(pid_t pid, pid_t *ppid) {
  char path[32], buf[256];
  snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return 0;
  buf[n] = '\0';
  char *paren = strrchr(buf, ')');
  if (!paren || paren[1] != ' ' || !paren[2] || paren[3] != ' ') return 0;
  if (ppid) *ppid = (pid_t)strtol(paren + 4, NULL, 10);
  return paren[2];
}

static int is_stopped(char state) { return state == 'T' || state == 't'; }
static int is_dead(char state) { return !state || state == 'Z' || state == 'X' || state == 'x'; }

static int by_depth(const void *a, const void *b) {
  const struct proc *x = a, *y = b;
  if (x->depth != y->depth) return x->depth - y->depth;
  return (x->pid > y->pid) - (x->pid < y->pid);
}

// Every live process of the namespace but init (this process), parents before children.
static size_t scan(struct proc **procs, size_t *cap) {
  DIR *d = opendir("/proc");
  if (!d) die_errno("opendir /proc");
  size_t n = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    char *end;
    long pid = strtol(e->d_name, &end, 10);
    if (*end || end == e->d_name || pid <= 1) continue;
    pid_t ppid = 0;
    char state = proc_state((pid_t)pid, &ppid);
    if (is_dead(state)) continue;
    if (n == *cap) {
      *cap = *cap ? *cap * 2 : 64;
      *procs = realloc(*procs, *cap * sizeof **procs);
      if (!*procs) die_errno("realloc");
    }
    (*procs)[n++] = (struct proc){(pid_t)pid, ppid, state, 0};
  }
  closedir(d);
  struct proc *p = *procs;
  for (size_t i = 0; i < n; i++) {
    pid_t up = p[i].ppid;
    for (size_t steps = 0; up > 1 && steps < n; steps++) {
      size_t k = 0;
      while (k < n && p[k].pid != up) k++;
      if (k == n) break;
      p[i].depth++;
      up = p[k].ppid;
    }
  }
  qsort(p, n, sizeof *p, by_depth);
  return n;
}

static int holds(const struct freeze *f, pid_t pid) {
  for (size_t i = 0; i < f->n; i++)
    if (f->pids[i] == pid) return 1;
  return 0;
}

static void wait_stopped(pid_t pid, long deadline) {
  const struct timespec tick = {0, 100 * 1000};
  while (monotonic_ms() < deadline) {
    char state = proc_state(pid, NULL);
    if (is_stopped(state) || is_dead(state)) return;
    nanosleep(&tick, NULL);
  }
}

void freeze_namespace(struct freeze *f) {
  static struct proc *procs;
  static size_t cap;
  long deadline = monotonic_ms() + FREEZE_WAIT_MS;
  for (int round = 0; round < FREEZE_ROUNDS; round++) {
    size_t n = scan(&procs, &cap);
    int acted = 0;
    for (size_t i = 0; i < n; i++) {
      // Already stopped and not by us: the user's own stop, left as it is.
      if (holds(f, procs[i].pid) || is_stopped(procs[i].state)) continue;
      if (kill(procs[i].pid, SIGSTOP) != 0) {
        if (errno == ESRCH) continue;
        die_errno("kill(SIGSTOP)");
      }
      if (f->n == f->cap) {
        f->cap = f->cap ? f->cap * 2 : 64;
        f->pids = realloc(f->pids, f->cap * sizeof *f->pids);
        if (!f->pids) die_errno("realloc");
      }
      f->pids[f->n++] = procs[i].pid;
      acted = 1;
      for (size_t k = i + 1; k < n; k++)
        if (procs[k].ppid == procs[i].pid) {
          wait_stopped(procs[i].pid, deadline);
          break;
        }
    }
    // Nothing was running any more: no process is left that could have forked a new one.
    if (!acted) return;
  }
}

void thaw_namespace(struct freeze *f) {
  while (f->n > 0) {
    pid_t pid = f->pids[--f->n];
    if (kill(pid, SIGCONT) != 0 && errno != ESRCH) die_errno("kill(SIGCONT)");
  }
}
