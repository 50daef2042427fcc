// Network relays (SPEC §4, §6 "Local services"): the listeners are bound here before the
// command starts, and one relay process moves the bytes with splice(2) in an epoll loop.
//
//   --relay ADDR:PORT:SOCKET  listen on ADDR:PORT inside the sandbox (127.0.0.1 or [::1]); each
//                             connection is passed to the Unix socket SOCKET of srt's proxy
//                             outside: its HTTP (3128) and SOCKS (1080) proxies, and every
//                             forwarded host loopback port, which the proxy's gate decides.
//   --expose FD:PORT          FD is a socket listening on the HOST's loopback (bound outside by
//                             `srt-init --host-listen`, below); each connection is relayed to
//                             the sandbox's 127.0.0.1:PORT, or [::1]:PORT when that refuses.
//
// The relay process is forked from the outer helper before the command's nested PID namespace
// exists, so the command can neither see nor signal it; it holds no capabilities and is not
// dumpable. It never parses what it relays. Memory is bounded: at most MAX_CONNS connections,
// each with two pipes (one per direction, at most a pipe's capacity in flight); past the cap it
// stops accepting until a connection ends. A peer that hangs up frees its connection at once.

#include "helper.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define MAX_CONNS 1024
#define FDS_PER_CONN 6 /* two sockets, two pipes */
#define LISTEN_BACKLOG 4096 /* the kernel caps it at net.core.somaxconn */
#define ROUNDS_PER_EVENT 8  /* splice rounds per wakeup before other connections get a turn */
#define RELAY_PIPE_SIZE (64 * 1024) /* per direction: the bytes in flight in the relay */

pid_t relay_pid = 0;

// ---- addresses

// `127.0.0.1` / `[::1]` followed by `:PORT`; the rest of spec after the port is returned.
const char *parse_addr_port(const char *spec, struct sockaddr_storage *ss, socklen_t *len,
                                   unsigned *port_out) {
  char host[64];
  const char *p = spec;
  const char *end;
  int v6 = spec[0] == '[';
  if (v6) {
    end = strchr(spec, ']');
    if (!end || end[1] != ':') return NULL;
    p = spec + 1;
  } else {
    end = strchr(spec, ':');
    if (!end) return NULL;
  }
  size_t n = (size_t)(end - p);
  if (n == 0 || n >= sizeof host) return NULL;
  memcpy(host, p, n);
  host[n] = '\0';
  const char *port_text = v6 ? end + 2 : end + 1;
  char *after;
  errno = 0;
  unsigned long port = strtoul(port_text, &after, 10);
  if (errno || after == port_text || port < 1 || port > 65535 || port_text[0] == '0') return NULL;
  memset(ss, 0, sizeof *ss);
  if (v6) {
    struct sockaddr_in6 *a = (struct sockaddr_in6 *)ss;
    a->sin6_family = AF_INET6;
    a->sin6_port = htons((uint16_t)port);
    if (inet_pton(AF_INET6, host, &a->sin6_addr) != 1) return NULL;
    *len = sizeof *a;
  } else {
    struct sockaddr_in *a = (struct sockaddr_in *)ss;
    a->sin_family = AF_INET;
    a->sin_port = htons((uint16_t)port);
    if (inet_pton(AF_INET, host, &a->sin_addr) != 1) return NULL;
    *len = sizeof *a;
  }
  *port_out = (unsigned)port;
  return after;
}

static void format_addr(const struct sockaddr_storage *ss, char *out, size_t size) {
  char host[INET6_ADDRSTRLEN] = "?";
  unsigned port;
  if (ss->ss_family == AF_INET6) {
    const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)ss;
    inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof host);
    port = ntohs(a->sin6_port);
    snprintf(out, size, "[%s]:%u", host, port);
  } else {
    const struct sockaddr_in *a = (const struct sockaddr_in *)ss;
    inet_ntop(AF_INET, &a->sin_addr, host, sizeof host);
    port = ntohs(a->sin_port);
    snprintf(out, size, "%s:%u", host, port);
  }
}

static int parse_fd(const char *text, const char **rest) {
  char *end;
  errno = 0;
  long fd = strtol(text, &end, 10);
  if (errno || end == text || fd < 3 || fd > 1 << 20) return -1;
  *rest = end;
  return (int)fd;
}

void parse_relay(const char *spec, struct relay *r) {
  memset(r, 0, sizeof *r);
  r->listen_fd = -1;
  const char *rest = parse_addr_port(spec, &r->listen, &r->listen_len, &r->port);
  if (!rest || *rest != ':' || rest[1] != '/')
    die("srt-init: --relay %s: want ADDR:PORT:SOCKETPATH (ADDR 127.0.0.1 or [::1], an "
        "absolute socket path)",
        spec);
  const char *path = rest + 1;
  if (strlen(path) >= sizeof r->target.sun_path)
    die("srt-init: --relay %s: socket path longer than %zu bytes", spec,
        sizeof r->target.sun_path - 1);
  r->kind = RELAY_TO_UNIX;
  r->target.sun_family = AF_UNIX;
  strcpy(r->target.sun_path, path);
  format_addr(&r->listen, r->label, sizeof r->label);
}

void parse_expose(const char *spec, struct relay *r) {
  memset(r, 0, sizeof *r);
  const char *rest;
  int fd = parse_fd(spec, &rest);
  char *end;
  unsigned long port = 0;
  if (fd >= 0 && *rest == ':') {
    errno = 0;
    port = strtoul(rest + 1, &end, 10);
    if (errno || end == rest + 1 || *end || rest[1] == '0' || port > 65535) port = 0;
  }
  if (port == 0) die("srt-init: --expose %s: want FD:PORT", spec);
  int listening = 0;
  socklen_t len = sizeof listening;
  if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) != 0 || !listening)
    die("srt-init: --expose %s: descriptor %d is not a listening socket", spec, fd);
  r->kind = RELAY_TO_SANDBOX;
  r->listen_fd = fd;
  r->port = (unsigned)port;
  snprintf(r->label, sizeof r->label, "sandbox port %u", r->port);
}

// ---- listeners

static int set_nonblocking(int fd) {
  int flags = fcntl(fd, F_GETFL);
  return flags < 0 ? -1 : fcntl(fd, F_SETFL, flags | O_NONBLOCK);
}

// A listening socket on `ss`, or -1 with errno set.
static int listen_on(const struct sockaddr_storage *ss, socklen_t len, int flags) {
  int fd = socket(ss->ss_family, SOCK_STREAM | flags, 0);
  if (fd < 0) return -1;
  int one = 1;
  // SO_REUSEADDR: a port whose last connections are still in TIME_WAIT can be bound again at
  // once; a port another socket LISTENs on still fails with EADDRINUSE.
  if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
      (ss->ss_family == AF_INET6 &&
       setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one) != 0) ||
      bind(fd, (const struct sockaddr *)ss, len) != 0 || listen(fd, LISTEN_BACKLOG) != 0) {
    int err = errno;
    close(fd);
    errno = err;
    return -1;
  }
  return fd;
}

// Bind every --relay listener inside the sandbox (the --expose ones arrive bound). An IPv6
// listener is skipped when the sandbox has no IPv6 loopback: no client inside could use it.
static void bind_listeners(struct relay *relays, int n) {
  for (int i = 0; i < n; i++) {
    struct relay *r = &relays[i];
    if (r->kind != RELAY_TO_UNIX) continue;
    r->listen_fd = listen_on(&r->listen, r->listen_len, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (r->listen_fd >= 0) continue;
    if (r->listen.ss_family == AF_INET6 && (errno == EAFNOSUPPORT || errno == EADDRNOTAVAIL))
      continue;
    if (errno == EACCES)
      die("cannot listen on %s inside the sandbox: ports below 1024 need bwrap --cap-add "
          "CAP_NET_BIND_SERVICE",
          r->label);
    die("cannot listen on %s inside the sandbox: %s", r->label, strerror(errno));
  }
}

// `srt-init --host-listen FD:ADDR:PORT... -- PROGRAM ARGS...`: run OUTSIDE the sandbox by
// srt. Binds each ADDR:PORT on the host (exit 125 with a clear message when one is taken), puts
// the socket on descriptor FD without close-on-exec, and execs PROGRAM (bwrap), which passes the
// descriptors to the helper's --expose.
int host_listen_exec(int argc, char **argv) {
  int i = 0;
  for (; i < argc && strcmp(argv[i], "--") != 0; i++) {
    if (strcmp(argv[i], "--host-listen") != 0 || i + 1 >= argc)
      die("srt-init: usage: srt-init --host-listen FD:ADDR:PORT... -- PROGRAM ARGS...");
    const char *spec = argv[++i], *rest;
    struct sockaddr_storage ss;
    socklen_t len;
    unsigned port;
    int want = parse_fd(spec, &rest);
    if (want < 0 || *rest != ':' || !(rest = parse_addr_port(rest + 1, &ss, &len, &port)) || *rest)
      die("srt-init: --host-listen %s: want FD:ADDR:PORT", spec);
    if (fcntl(want, F_GETFD) != -1)
      die("srt-init: --host-listen %s: descriptor %d is already open", spec, want);
    char label[80];
    format_addr(&ss, label, sizeof label);
    int fd = listen_on(&ss, len, SOCK_CLOEXEC);
    if (fd < 0 && errno == EADDRINUSE)
      die("network.exposePorts: the host's %s is already in use (another srt run or another "
          "program listens there); free it or expose a different port",
          label);
    if (fd < 0) die("network.exposePorts: cannot listen on the host's %s: %s", label, strerror(errno));
    // Without close-on-exec on `want`, bwrap inherits it. (dup2 onto itself would keep the flag.)
    if (fd == want) {
      if (fcntl(fd, F_SETFD, 0) != 0) die_errno("fcntl");
    } else {
      if (dup2(fd, want) != want) die_errno("dup2");
      close(fd);
    }
  }
  if (i + 1 >= argc || argv[i + 1][0] != '/')
    die("srt-init: --host-listen: want -- /ABSOLUTE/PROGRAM ARGS...");
  execv(argv[i + 1], argv + i + 1);
  die("cannot run %s: %s", argv[i + 1], strerror(errno));
}

// ---- the relay loop

enum item_kind { ITEM_LISTENER, ITEM_SIDE }; // first member of what epoll's data points to

struct listener {
  enum item_kind kind;
  struct relay *relay;
};

struct conn;
struct side {
  enum item_kind kind;
  int fd;
  unsigned events; // registered epoll interest
  int registered;
  int hup;         // the peer is gone entirely: only what it sent before is still read
  struct conn *conn;
};

// One direction: bytes read from one side wait in the pipe until the other side takes them.
struct dir {
  int pipe[2];
  size_t pending, capacity;
  // The pipe takes no more for now: a splice into it failed with EAGAIN although it held data
  // (its slots can fill with small segments before its bytes do). Cleared once some drains.
  int full;
  int eof;  // the source sent its last byte
  int done; // ... and the destination has everything, then a FIN
};

struct conn {
  struct side a, b;  // a: the accepted client; b: where it is relayed to
  struct dir ab, ba; // a→b and b→a
  struct relay *relay;
  int connecting;    // b: a TCP connect into the sandbox in progress
  int tried_ipv6;
  int closed;
  struct conn *next_dead;
};

static int epfd = -1;
static int nconns, max_conns;
static struct listener *listeners;
static int nlisteners;
static int accepting = 1;
static struct conn *dead; // closed in this epoll batch, freed after it

static void ep(int op, int fd, unsigned events, void *item) {
  struct epoll_event ev = {.events = events, .data.ptr = item};
  if (epoll_ctl(epfd, op, fd, &ev) != 0) die_errno("relay: epoll_ctl");
}

static void set_accepting(int on) {
  if (accepting == on) return;
  accepting = on;
  for (int i = 0; i < nlisteners; i++)
    ep(EPOLL_CTL_MOD, listeners[i].relay->listen_fd, on ? EPOLLIN : 0, &listeners[i]);
}

static void close_conn(struct conn *c) {
  if (c->closed) return;
  c->closed = 1;
  // Closing a descriptor also takes it out of the epoll set.
  if (c->a.fd >= 0) close(c->a.fd);
  if (c->b.fd >= 0) close(c->b.fd);
  for (int i = 0; i < 2; i++) {
    if (c->ab.pipe[i] >= 0) close(c->ab.pipe[i]);
    if (c->ba.pipe[i] >= 0) close(c->ba.pipe[i]);
  }
  c->next_dead = dead;
  dead = c;
  nconns--;
  set_accepting(1);
}

// Keep a side's epoll interest at `events`. A side whose peer hung up is reported by epoll
// whatever it is asked for, so it stays in the set only while there is room to read it.
static void watch(struct side *s, unsigned events) {
  if (s->hup && !(events & EPOLLIN)) {
    if (s->registered) ep(EPOLL_CTL_DEL, s->fd, 0, NULL);
    s->registered = 0;
    return;
  }
  if (!s->registered) {
    ep(EPOLL_CTL_ADD, s->fd, events, s);
    s->registered = 1;
  } else if (s->events != events) {
    ep(EPOLL_CTL_MOD, s->fd, events, s);
  }
  s->events = events;
}

static void update(struct conn *c) {
  if (c->connecting) {
    watch(&c->a, 0);
    watch(&c->b, EPOLLOUT);
    return;
  }
  unsigned ea = 0, eb = 0;
  if (!c->ab.eof && !c->ab.full && c->ab.pending < c->ab.capacity) ea |= EPOLLIN;
  if (!c->ba.eof && !c->ba.full && c->ba.pending < c->ba.capacity) eb |= EPOLLIN;
  if (c->ab.pending) eb |= EPOLLOUT;
  if (c->ba.pending) ea |= EPOLLOUT;
  watch(&c->a, ea);
  watch(&c->b, eb);
}

// Move what `from` has through d's pipe on to `to`. -1: the connection must end.
static int move(struct dir *d, int from, int to) {
  for (int round = 0; round < ROUNDS_PER_EVENT; round++) {
    int more = 0; // a full read: the source may hold more right now
    if (!d->eof && !d->full && d->pending < d->capacity) {
      size_t room = d->capacity - d->pending;
      ssize_t n = splice(from, NULL, d->pipe[1], NULL, room, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
      if (n > 0) {
        d->pending += (size_t)n;
        more = (size_t)n == room;
      } else if (n == 0) {
        d->eof = 1;
      } else if (errno == EAGAIN) {
        d->full = d->pending > 0; // an empty pipe has room: then the source had nothing
      } else if (errno != EINTR) {
        return -1;
      }
    }
    while (d->pending > 0) {
      ssize_t n = splice(d->pipe[0], NULL, to, NULL, d->pending, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
      if (n > 0) {
        d->pending -= (size_t)n;
        d->full = 0;
      } else if (n < 0 && errno == EINTR) continue;
      else if (n < 0 && errno == EAGAIN) break;
      else return -1; // EPIPE, ECONNRESET: the destination is gone
    }
    if (d->eof && d->pending == 0 && !d->done) {
      // Pass the half-close on; the other direction keeps flowing.
      shutdown(to, SHUT_WR);
      d->done = 1;
    }
    // A short read drained the source (epoll reports what comes later): no EAGAIN probe.
    if (!more || d->pending > 0) return 0;
  }
  return 0;
}

static int tcp_nodelay(int fd) {
  int one = 1;
  return setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

// Start b's connect to the sandbox's loopback (127.0.0.1, or ::1 on the retry); -1 on failure.
static int connect_sandbox(struct conn *c, int family) {
  struct sockaddr_storage ss;
  socklen_t len;
  memset(&ss, 0, sizeof ss);
  if (family == AF_INET6) {
    struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
    a->sin6_family = AF_INET6;
    a->sin6_port = htons((uint16_t)c->relay->port);
    a->sin6_addr = in6addr_loopback;
    len = sizeof *a;
  } else {
    struct sockaddr_in *a = (struct sockaddr_in *)&ss;
    a->sin_family = AF_INET;
    a->sin_port = htons((uint16_t)c->relay->port);
    a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    len = sizeof *a;
  }
  int fd = socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  tcp_nodelay(fd);
  c->b.fd = fd;
  c->b.registered = 0;
  if (connect(fd, (struct sockaddr *)&ss, len) == 0) {
    c->connecting = 0;
    return 0;
  }
  if (errno == EINPROGRESS) {
    c->connecting = 1;
    return 0;
  }
  return -1;
}

// b's connect into the sandbox finished (or failed: then try ::1 once).
static void finish_connect(struct conn *c) {
  int err = 0;
  socklen_t len = sizeof err;
  if (getsockopt(c->b.fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
  if (err == EINPROGRESS || err == EALREADY) return;
  if (err != 0 && !c->tried_ipv6) {
    c->tried_ipv6 = 1;
    close(c->b.fd);
    c->b.fd = -1;
    if (connect_sandbox(c, AF_INET6) != 0) {
      close_conn(c);
      return;
    }
  } else if (err != 0) {
    close_conn(c);
    return;
  } else {
    c->connecting = 0;
  }
  update(c);
}

static void start_conn(struct relay *r, int client) {
  struct conn *c = calloc(1, sizeof *c);
  if (!c) {
    close(client);
    return;
  }
  nconns++;
  c->relay = r;
  c->a = (struct side){.kind = ITEM_SIDE, .fd = client, .conn = c};
  c->b = (struct side){.kind = ITEM_SIDE, .fd = -1, .conn = c};
  c->ab.pipe[0] = c->ab.pipe[1] = c->ba.pipe[0] = c->ba.pipe[1] = -1;
  if (pipe2(c->ab.pipe, O_NONBLOCK | O_CLOEXEC) != 0 ||
      pipe2(c->ba.pipe, O_NONBLOCK | O_CLOEXEC) != 0) {
    close_conn(c);
    return;
  }
  for (struct dir *d = &c->ab; d; d = d == &c->ab ? &c->ba : NULL) {
    fcntl(d->pipe[1], F_SETPIPE_SZ, RELAY_PIPE_SIZE); // may be refused: then the default
    int size = fcntl(d->pipe[1], F_GETPIPE_SZ);
    d->capacity = size > 0 ? (size_t)size : 4096;
  }
  int ok;
  tcp_nodelay(client);
  if (r->kind == RELAY_TO_UNIX) {
    // A Unix connect completes at once or fails (EAGAIN: the proxy's backlog is full;
    // ECONNREFUSED/ENOENT: the proxy is gone): the client is then closed.
    c->b.fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    ok = c->b.fd >= 0 &&
         connect(c->b.fd, (struct sockaddr *)&r->target, sizeof r->target) == 0;
  } else {
    ok = connect_sandbox(c, AF_INET) == 0;
    if (!ok && errno == ECONNREFUSED) {
      close(c->b.fd);
      c->b.fd = -1;
      c->tried_ipv6 = 1;
      ok = connect_sandbox(c, AF_INET6) == 0;
    }
  }
  if (!ok) {
    close_conn(c);
    return;
  }
  update(c);
}

static void on_listener(struct listener *l) {
  while (nconns < max_conns) {
    int fd = accept4(l->relay->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd >= 0) {
      start_conn(l->relay, fd);
      continue;
    }
    if (errno == EINTR || errno == ECONNABORTED) continue;
    // Out of descriptors or memory: wait until a connection ends (with none open, retry).
    if (errno != EAGAIN && nconns > 0) set_accepting(0);
    return;
  }
  set_accepting(0);
}

static void on_side(struct side *s, unsigned events) {
  struct conn *c = s->conn;
  if (c->closed) return;
  if (c->connecting) {
    if (s == &c->b) finish_connect(c);
    else if (events & EPOLLERR) close_conn(c);
    return;
  }
  if (events & EPOLLERR) {
    close_conn(c);
    return;
  }
  struct side *other = s == &c->a ? &c->b : &c->a;
  struct dir *from_s = s == &c->a ? &c->ab : &c->ba;
  struct dir *to_s = s == &c->a ? &c->ba : &c->ab;
  if ((events & (EPOLLIN | EPOLLHUP)) && move(from_s, s->fd, other->fd) != 0) {
    close_conn(c);
    return;
  }
  if (events & EPOLLHUP) {
    // Nothing can reach s any more: drop what was on its way and stop reading for it.
    s->hup = 1;
    to_s->eof = to_s->done = 1;
    to_s->pending = 0;
  } else if ((events & EPOLLOUT) && move(to_s, other->fd, s->fd) != 0) {
    close_conn(c);
    return;
  }
  if (c->ab.done && c->ba.done) close_conn(c);
  else update(c);
}

static void relay_loop(struct relay *relays, int n) {
  epfd = epoll_create1(EPOLL_CLOEXEC);
  if (epfd < 0) die_errno("relay: epoll_create1");
  listeners = calloc((size_t)n, sizeof *listeners);
  if (!listeners) die_errno("relay: calloc");
  for (int i = 0; i < n; i++) {
    if (relays[i].listen_fd < 0) continue;
    if (set_nonblocking(relays[i].listen_fd) != 0) die_errno("relay: O_NONBLOCK");
    listeners[nlisteners] = (struct listener){.kind = ITEM_LISTENER, .relay = &relays[i]};
    ep(EPOLL_CTL_ADD, relays[i].listen_fd, EPOLLIN, &listeners[nlisteners]);
    nlisteners++;
  }
  // Every connection holds FDS_PER_CONN descriptors: raise the soft limit to the hard one and
  // cap the connections by what fits.
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
    getrlimit(RLIMIT_NOFILE, &rl);
  }
  long fit = ((long)rl.rlim_cur - 16 - nlisteners) / FDS_PER_CONN;
  max_conns = fit < MAX_CONNS ? (int)fit : MAX_CONNS;
  if (max_conns < 1) die("relay: RLIMIT_NOFILE (%ld) leaves no room for connections", (long)rl.rlim_cur);

  struct epoll_event events[64];
  for (;;) {
    int ready = epoll_wait(epfd, events, 64, -1);
    if (ready < 0) {
      if (errno == EINTR) continue;
      die_errno("relay: epoll_wait");
    }
    for (int i = 0; i < ready; i++) {
      enum item_kind *kind = events[i].data.ptr;
      if (*kind == ITEM_LISTENER) on_listener((struct listener *)kind);
      else on_side((struct side *)kind, events[i].events);
    }
    while (dead) {
      struct conn *c = dead;
      dead = c->next_dead;
      free(c);
    }
  }
}

void start_relays(struct relay *relays, int n) {
  bind_listeners(relays, n);
  pid_t pid = fork();
  if (pid < 0) die_errno("fork");
  if (pid > 0) {
    // The relay process owns the listeners now; nothing started later inherits them.
    for (int i = 0; i < n; i++)
      if (relays[i].listen_fd >= 0) close(relays[i].listen_fd);
    relay_pid = pid;
    return;
  }
  drop_capabilities();
  // Only its listeners: not the descriptors the outer helper keeps for others (the pty's).
  int *keep = calloc((size_t)n + 1, sizeof *keep);
  if (!keep) die_errno("calloc");
  int nkeep = 0;
  for (int i = 0; i < n; i++)
    if (relays[i].listen_fd >= 0) keep[nkeep++] = relays[i].listen_fd;
  sort_fds(keep, nkeep);
  close_inherited_fds(keep, nkeep);
  free(keep);
  if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0) die_errno("PR_SET_PDEATHSIG");
  if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) die_errno("PR_SET_DUMPABLE");
  // A peer that is gone makes splice fail with EPIPE instead of killing the relay.
  if (signal(SIGPIPE, SIG_IGN) == SIG_ERR) die_errno("signal(SIGPIPE)");
  // It never reads the terminal; stderr stays for its own errors.
  int null = open("/dev/null", O_RDWR | O_CLOEXEC);
  if (null < 0 || dup2(null, STDIN_FILENO) < 0 || dup2(null, STDOUT_FILENO) < 0)
    die_errno("/dev/null");
  close(null);
  relay_loop(relays, n);
}
