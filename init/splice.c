// `srt-init --splice PARENTPID`, outside the sandbox: one opaque tunnel that srt's proxy hands
// over once it has carried a few MB, so its bytes stop passing through node's one thread.
// Only a tunnel with nothing left to inspect comes here: its host allowed, its ClientHello (if
// any) checked, not terminated, no stage watching its bytes (src/proxy/splicer.ts decides).
//
// Descriptors: 3 the client's socket (the relay's Unix connection), 4 the upstream socket,
// 0 a pipe carrying what node had already read but not yet passed on: a header of two 32-bit
// little-endian lengths (client→upstream, upstream→client), those bytes, then EOF. They go out
// before anything this process moves. Then splice(2) through one pipe per direction; a
// half-close (EOF on one side) is passed on as shutdown(SHUT_WR), and it exits once both
// directions are done, or at the first error on either side (a reset, a closed peer): closing
// its descriptors closes the tunnel. It runs as srt's user with no_new_privs, dies with srt
// (PR_SET_PDEATHSIG), and srt kills it when the run ends. Exit status: 0, or 1 on an error.

#include "helper.h"

#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <unistd.h>

#define SPLICE_CLIENT 3
#define SPLICE_UPSTREAM 4
#define SPLICE_PIPE_SIZE (1024 * 1024) /* per direction: bytes in flight */
#define SPLICE_MAX_PENDING (4 * 1024 * 1024) /* node holds at most a read or two per side */

struct flow {
  int from, to;
  int pipe[2];
  size_t pending, capacity;
  char *early; // the bytes node had read; they go first
  size_t early_len, early_off;
  int full, eof, done;
};

static int read_all(int fd, void *buf, size_t len) {
  size_t got = 0;
  while (got < len) {
    ssize_t n = read(fd, (char *)buf + got, len - got);
    if (n > 0) got += (size_t)n;
    else if (n < 0 && errno == EINTR) continue;
    else return -1;
  }
  return 0;
}

static int read_early(struct flow *f, uint32_t len) {
  if (len > SPLICE_MAX_PENDING) return -1;
  f->early_len = len;
  if (len == 0) return 0;
  f->early = malloc(len);
  return f->early ? read_all(0, f->early, len) : -1;
}

// Move what can move now; -1: the tunnel must end.
static int step(struct flow *f) {
  while (f->early_off < f->early_len) {
    ssize_t n = write(f->to, f->early + f->early_off, f->early_len - f->early_off);
    if (n > 0) f->early_off += (size_t)n;
    else if (n < 0 && errno == EINTR) continue;
    else if (n < 0 && errno == EAGAIN) break;
    else return -1;
  }
  int ready = f->early_off == f->early_len; // the pipe's bytes may follow now
  if (!f->eof && !f->full && f->pending < f->capacity) {
    ssize_t n = splice(f->from, NULL, f->pipe[1], NULL, f->capacity - f->pending, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
    if (n > 0) f->pending += (size_t)n;
    else if (n == 0) f->eof = 1;
    else if (errno == EAGAIN) f->full = f->pending > 0; // an empty pipe has room: the source had nothing
    else if (errno != EINTR) return -1;
  }
  while (ready && f->pending > 0) {
    ssize_t n = splice(f->pipe[0], NULL, f->to, NULL, f->pending, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
    if (n > 0) {
      f->pending -= (size_t)n;
      f->full = 0;
    } else if (n < 0 && errno == EINTR) continue;
    else if (n < 0 && errno == EAGAIN) break;
    else return -1;
  }
  if (ready && f->eof && f->pending == 0 && !f->done) {
    shutdown(f->to, SHUT_WR);
    f->done = 1;
  }
  return 0;
}

int splice_tunnel(int argc, char **argv) {
  if (argc != 1) die("srt-init: usage: srt-init --splice PARENTPID");
  char *end;
  long parent = strtol(argv[0], &end, 10);
  if (*end || parent <= 1) die("srt-init: --splice: bad parent pid %s", argv[0]);
  // Die with srt; if srt is already gone, the tunnel goes with it.
  if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != (pid_t)parent) return 1;
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return 1;
  signal(SIGPIPE, SIG_IGN); // a closed peer is an EPIPE from write/splice, not a signal
  int keep[] = {SPLICE_CLIENT, SPLICE_UPSTREAM};
  close_inherited_fds(keep, 2);

  struct flow up = {.from = SPLICE_CLIENT, .to = SPLICE_UPSTREAM};
  struct flow down = {.from = SPLICE_UPSTREAM, .to = SPLICE_CLIENT};
  unsigned char head[8];
  if (read_all(0, head, sizeof head) != 0) return 1;
  uint32_t lens[2];
  for (int i = 0; i < 2; i++)
    lens[i] = (uint32_t)head[4 * i] | (uint32_t)head[4 * i + 1] << 8 | (uint32_t)head[4 * i + 2] << 16 | (uint32_t)head[4 * i + 3] << 24;
  if (read_early(&up, lens[0]) != 0 || read_early(&down, lens[1]) != 0) return 1;
  char extra;
  if (read(0, &extra, 1) != 0) return 1; // exactly what the header announced
  close(0);

  struct flow *flows[2] = {&up, &down};
  for (int i = 0; i < 2; i++) {
    struct flow *f = flows[i];
    if (pipe2(f->pipe, O_NONBLOCK | O_CLOEXEC) != 0) return 1;
    fcntl(f->pipe[1], F_SETPIPE_SZ, SPLICE_PIPE_SIZE); // may be refused: then the default
    int size = fcntl(f->pipe[1], F_GETPIPE_SZ);
    f->capacity = size > 0 ? (size_t)size : 4096;
  }
  for (;;) {
    for (int i = 0; i < 2; i++)
      if (step(flows[i]) != 0) return 1;
    if (up.done && down.done) return 0;
    // Poll the client (index 0) and the upstream (1) for what the two flows wait on. A side
    // asked for nothing is left out: a hung-up socket would report POLLHUP again and again.
    struct pollfd p[2] = {{.fd = SPLICE_CLIENT}, {.fd = SPLICE_UPSTREAM}};
    for (int i = 0; i < 2; i++) {
      struct flow *f = flows[i];
      int src = f->from == SPLICE_CLIENT ? 0 : 1;
      if (!f->eof && !f->full && f->pending < f->capacity) p[src].events |= POLLIN;
      if (f->early_off < f->early_len || f->pending > 0) p[1 - src].events |= POLLOUT;
    }
    for (int i = 0; i < 2; i++)
      if (!p[i].events) p[i].fd = -1;
    if (p[0].fd < 0 && p[1].fd < 0) return 1; // nothing can move: a pipe full of slots, no reader
    if (poll(p, 2, -1) < 0 && errno != EINTR) return 1;
    for (int i = 0; i < 2; i++)
      if (p[i].revents & (POLLERR | POLLNVAL)) return 1;
  }
}
