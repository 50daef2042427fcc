// `srt-init --connect PROXYADDR:PORT HOST PORT`: the ProxyCommand srt puts in
// GIT_SSH_COMMAND. It opens an HTTP CONNECT tunnel to HOST:PORT through the proxy at
// PROXYADDR:PORT (srt's relay inside the sandbox, 127.0.0.1:3128) and then copies stdin into it
// and it to stdout. It runs as the command does (inside the sandbox, under the filter) and has
// no privilege of its own; the proxy decides whether the tunnel opens.

#include "helper.h"

#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define MAX_RESPONSE_HEAD 16384

static int write_all(int fd, const char *p, size_t n) {
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return -1;
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

static int valid_host(const char *h) {
  size_t n = strlen(h);
  if (n == 0 || n > 255) return 0;
  for (; *h; h++)
    if (!strchr("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789.-_:", *h)) return 0;
  return 1;
}

int proxy_connect(int argc, char **argv) {
  struct sockaddr_storage ss;
  socklen_t len;
  unsigned proxy_port;
  const char *rest = argc == 3 ? parse_addr_port(argv[0], &ss, &len, &proxy_port) : NULL;
  char *end;
  errno = 0;
  unsigned long port = argc == 3 ? strtoul(argv[2], &end, 10) : 0;
  if (!rest || *rest || !valid_host(argv[1]) || errno || *end || port < 1 || port > 65535)
    die("srt-init: usage: srt-init --connect PROXYADDR:PORT HOST PORT");
  char authority[300];
  snprintf(authority, sizeof authority, strchr(argv[1], ':') ? "[%s]:%lu" : "%s:%lu", argv[1], port);

  int sock = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (sock < 0 || connect(sock, (struct sockaddr *)&ss, len) != 0)
    die("cannot reach the proxy at %s: %s", argv[0], strerror(errno));
  char request[700];
  int n = snprintf(request, sizeof request, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", authority, authority);
  if (write_all(sock, request, (size_t)n) != 0) die("proxy %s: %s", argv[0], strerror(errno));

  // The response head, then whatever followed it in the same read.
  char head[MAX_RESPONSE_HEAD + 1];
  size_t got = 0;
  char *body = NULL;
  while (!body) {
    if (got == MAX_RESPONSE_HEAD) die("proxy %s: oversized CONNECT response", argv[0]);
    ssize_t r = read(sock, head + got, MAX_RESPONSE_HEAD - got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) die("proxy %s closed the connection before answering CONNECT %s", argv[0], authority);
    got += (size_t)r;
    head[got] = '\0';
    char *blank = strstr(head, "\r\n\r\n");
    if (blank) body = blank + 4;
  }
  if (strncmp(head, "HTTP/1.", 7) != 0 || strncmp(head + 8, " 200", 4) != 0) {
    char *eol = strstr(head, "\r\n");
    int shown = (int)(eol - head) > 9 ? (int)(eol - head) - 9 : 0;
    fprintf(stderr, "srt: CONNECT %s refused by the proxy: %.*s\n", authority, shown, head + 9);
    return 1;
  }
  if (write_all(STDOUT_FILENO, body, got - (size_t)(body - head)) != 0) return 1;

  // Copy both ways until the tunnel closes; stdin's end is passed on as a half-close.
  char buf[65536];
  struct pollfd fds[2] = {{.fd = STDIN_FILENO, .events = POLLIN}, {.fd = sock, .events = POLLIN}};
  for (;;) {
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      die_errno("poll");
    }
    for (int i = 0; i < 2; i++) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      ssize_t r = read(fds[i].fd, buf, sizeof buf);
      if (r < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      if (i == 1 && r <= 0) return r < 0; // the tunnel ended
      if (r <= 0) {
        shutdown(sock, SHUT_WR);
        fds[0].fd = -1;
        continue;
      }
      if (write_all(i == 0 ? sock : STDOUT_FILENO, buf, (size_t)r) != 0) return i == 0;
    }
  }
}
