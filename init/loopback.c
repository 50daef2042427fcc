// Refused loopback connections, for the refusal report (SPEC §6 local services): a TCP connect()
// of the command to a loopback address on a port nothing listens on inside the sandbox (no
// forwarded port, no server of its own) fails with ECONNREFUSED, and srt says which port and what
// would forward it. The supervisor is sent every connect(); it reads the address (a copy: what the
// kernel then connects to may differ, which only matters to a report) and, for a loopback one,
// whether the socket is TCP (a UDP connect() to a resolver on 127.0.0.53 is no refusal) and
// whether a TCP listener could take it (sock_diag, the listening sockets of this network
// namespace); then it lets the call continue unchanged, whatever it found.

#include "supervisor.h"

#include <arpa/inet.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

// Distinct (address, port) pairs counted; connections to others are counted together (`Y`).
#define MAX_LOOPBACK 256

static struct refused_port {
  unsigned char addr[16]; // IPv4 in the first 4 bytes (v4 set), else IPv6
  int v4;
  unsigned port;
  unsigned long count;
} refused[MAX_LOOPBACK];
static int nrefused;
static unsigned long refused_unlisted;
// Ports a connect found a listener on: the command serves them itself, so connects refused
// there before its server was up (a wait-until-up loop) are no missing forward.
static unsigned char served[65536 / 8];

// The address a connect() names, when it is a loopback one: 127.0.0.0/8 (also IPv4-mapped in
// IPv6) or ::1. 1 when it is, with *v4, addr (4 or 16 bytes) and port filled in.
static int loopback_target(const unsigned char *sa, size_t len, int *v4, unsigned char *addr, unsigned *port) {
  sa_family_t family;
  if (len < sizeof family) return 0;
  memcpy(&family, sa, sizeof family);
  if (family == AF_INET && len >= sizeof(struct sockaddr_in)) {
    struct sockaddr_in in;
    memcpy(&in, sa, sizeof in);
    memcpy(addr, &in.sin_addr, 4);
    *v4 = 1;
    *port = ntohs(in.sin_port);
    return addr[0] == 127 && *port != 0;
  }
  if (family == AF_INET6 && len >= sizeof(struct sockaddr_in6)) {
    struct sockaddr_in6 in6;
    memcpy(&in6, sa, sizeof in6);
    *port = ntohs(in6.sin6_port);
    if (*port == 0) return 0;
    if (IN6_IS_ADDR_V4MAPPED(&in6.sin6_addr)) {
      memcpy(addr, in6.sin6_addr.s6_addr + 12, 4);
      *v4 = 1;
      return addr[0] == 127;
    }
    memcpy(addr, in6.sin6_addr.s6_addr, 16);
    *v4 = 0;
    return IN6_IS_ADDR_LOOPBACK(&in6.sin6_addr);
  }
  return 0;
}

// Could a TCP listener of this namespace take a connection to addr:port? Listeners of `family`
// on that port are listed by the kernel; one bound to the address itself or to the wildcard takes
// it (an IPv6 wildcard takes IPv4 too unless it is IPv6-only, which the list does not say: such a
// refusal goes unreported). 1 yes, 0 no, -1 the kernel could not say.
static int listener_in(int family, int v4, const unsigned char *addr, unsigned port) {
  static int nl = -1;
  static __u32 seq;
  if (nl < 0 && (nl = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG)) < 0) return -1;
  struct {
    struct nlmsghdr h;
    struct inet_diag_req_v2 r;
  } req = {
      .h = {.nlmsg_len = sizeof req, .nlmsg_type = SOCK_DIAG_BY_FAMILY, .nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP, .nlmsg_seq = ++seq},
      .r = {.sdiag_family = (__u8)family, .sdiag_protocol = IPPROTO_TCP, .idiag_states = 1u << TCP_LISTEN,
            .id = {.idiag_sport = htons((uint16_t)port)}},
  };
  struct sockaddr_nl kernel = {.nl_family = AF_NETLINK};
  if (sendto(nl, &req, sizeof req, 0, (struct sockaddr *)&kernel, sizeof kernel) != (ssize_t)sizeof req) return -1;
  static const unsigned char mapped_prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  static const unsigned char zero[16];
  int found = 0;
  for (;;) {
    static char buf[16384];
    ssize_t n = recv(nl, buf, sizeof buf, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return -1;
    for (struct nlmsghdr *h = (struct nlmsghdr *)buf; NLMSG_OK(h, (size_t)n); h = NLMSG_NEXT(h, n)) {
      if (h->nlmsg_seq != seq) continue; // what is left of an answer given up on
      if (h->nlmsg_type == NLMSG_DONE) return found;
      if (h->nlmsg_type == NLMSG_ERROR) return -1;
      if (h->nlmsg_type != SOCK_DIAG_BY_FAMILY || h->nlmsg_len < NLMSG_LENGTH(sizeof(struct inet_diag_msg))) continue;
      const struct inet_diag_msg *m = NLMSG_DATA(h);
      if (ntohs(m->id.idiag_sport) != port) continue;
      const unsigned char *src = (const unsigned char *)m->id.idiag_src;
      if (m->idiag_family == AF_INET)
        found |= v4 && (memcmp(src, zero, 4) == 0 || memcmp(src, addr, 4) == 0);
      else
        found |= memcmp(src, zero, 16) == 0 ||
                 (v4 ? memcmp(src, mapped_prefix, 12) == 0 && memcmp(src + 12, addr, 4) == 0 : memcmp(src, addr, 16) == 0);
    }
  }
}

// Is the command's descriptor fd a TCP stream socket? Asked through a copy of it (pidfd_getfd);
// 0 when it cannot be told (then nothing is reported).
static int tcp_socket(pid_t pid, int fd) {
  int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
  if (pidfd < 0) return 0;
  int copy = (int)syscall(SYS_pidfd_getfd, pidfd, fd, 0);
  close(pidfd);
  if (copy < 0) return 0;
  int type = 0, proto = 0;
  socklen_t tl = sizeof type, pl = sizeof proto;
  int tcp = getsockopt(copy, SOL_SOCKET, SO_TYPE, &type, &tl) == 0 && type == SOCK_STREAM &&
            getsockopt(copy, SOL_SOCKET, SO_PROTOCOL, &proto, &pl) == 0 && proto == IPPROTO_TCP;
  close(copy);
  return tcp;
}

// Is connect(fd, sa, len) one to judge (a TCP socket, a loopback address)? sa: the first len
// bytes of the command's address.
int watch_connect(struct req *r, int fd, const unsigned char *sa, size_t len, struct watched *w) {
  return loopback_target(sa, len, &w->v4, w->addr, &w->port) && tcp_socket(r->pid, fd);
}

// Counted when no listener could take it.
void judge_connect(const struct watched *w) {
  int l = listener_in(w->v4 ? AF_INET : AF_INET6, w->v4, w->addr, w->port);
  if (l == 0 && w->v4) l = listener_in(AF_INET6, w->v4, w->addr, w->port);
  if (l > 0) served[w->port / 8] |= (unsigned char)(1u << (w->port % 8));
  if (l != 0) return;
  for (int i = 0; i < nrefused; i++) {
    if (refused[i].v4 == w->v4 && refused[i].port == w->port && memcmp(refused[i].addr, w->addr, w->v4 ? 4 : 16) == 0) {
      refused[i].count++;
      return;
    }
  }
  if (nrefused == MAX_LOOPBACK) {
    refused_unlisted++;
    return;
  }
  struct refused_port *p = &refused[nrefused++];
  memcpy(p->addr, w->addr, w->v4 ? 4 : 16);
  p->v4 = w->v4;
  p->port = w->port;
  p->count = 1;
}

// At the end (no connect is counted any more): `L address port count` per pair, `Y count` for the rest.
void report_loopback(int (*put)(const char *fields[], int n)) {
  for (int i = 0; i < nrefused; i++) {
    char addr[INET6_ADDRSTRLEN], port[8], count[24];
    if (served[refused[i].port / 8] & (1u << (refused[i].port % 8))) continue;
    if (!inet_ntop(refused[i].v4 ? AF_INET : AF_INET6, refused[i].addr, addr, sizeof addr)) continue;
    snprintf(port, sizeof port, "%u", refused[i].port);
    snprintf(count, sizeof count, "%lu", refused[i].count);
    put((const char *[]){"L", addr, port, count}, 4);
  }
  if (refused_unlisted) {
    char count[24];
    snprintf(count, sizeof count, "%lu", refused_unlisted);
    put((const char *[]){"Y", count}, 2);
  }
}
