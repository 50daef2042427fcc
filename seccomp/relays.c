// Network relays: one socat per relay, listening on 127.0.0.1:PORT inside the sandbox and
// relaying to a Unix socket of srt's proxy outside.

#include "helper.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define RELAY_WAIT_MS 5000

// socat parses its address arguments (`:` `,` `!` quotes, brackets), so only plain path
// characters are accepted rather than escaped.
static int plain_path(const char *p) {
  if (p[0] != '/') return 0;
  for (; *p; p++)
    if (!strchr("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789/._-+@=~%", *p))
      return 0;
  return 1;
}

void parse_relay(const char *spec, struct relay *r) {
  char *end;
  errno = 0;
  unsigned long port = strtoul(spec, &end, 10);
  if (errno || end == spec || *end != ':' || port < 1 || port > 65535 || spec[0] == '0')
    die("seccomp helper: --relay %s: want PORT:SOCKETPATH", spec);
  if (!plain_path(end + 1))
    die("seccomp helper: --relay %s: socket path must be absolute and use only letters, digits "
        "and /._-+@=~%%", spec);
  r->port = (unsigned)port;
  r->socket_path = end + 1;
}

// socat runs without the filter, so it is looked up only in the system directories: the
// command's PATH may start with a directory the project controls (npm puts node_modules/.bin
// first), and a `socat` there would run unfiltered.
static const char *find_socat(void) {
  static const char *const candidates[] = {"/usr/local/bin/socat", "/usr/bin/socat", "/bin/socat",
                                           "/usr/local/sbin/socat", "/usr/sbin/socat",
                                           "/sbin/socat"};
  for (size_t i = 0; i < sizeof candidates / sizeof candidates[0]; i++) {
    struct stat st;
    if (stat(candidates[i], &st) == 0 && S_ISREG(st.st_mode) && access(candidates[i], X_OK) == 0)
      return candidates[i];
  }
  die("socat not found in /usr/local/bin, /usr/bin, /bin or the sbin directories: install socat "
      "(e.g. apt-get install socat)");
  return NULL;
}

static void start_relay(const char *socat, struct relay *r) {
  char listen[64], *connect;
  snprintf(listen, sizeof listen, "TCP-LISTEN:%u,bind=127.0.0.1,fork,reuseaddr", r->port);
  if (asprintf(&connect, "UNIX-CONNECT:%s", r->socket_path) < 0) die_errno("asprintf");
  r->pid = fork();
  if (r->pid < 0) die_errno("fork");
  if (r->pid > 0) {
    free(connect);
    return;
  }
  drop_capabilities();
  unblock_signals();
  // socat never reads the terminal; stderr stays so that its errors are visible.
  int null = open("/dev/null", O_RDWR | O_CLOEXEC);
  if (null < 0 || dup2(null, STDIN_FILENO) < 0 || dup2(null, STDOUT_FILENO) < 0)
    die_errno("/dev/null");
  char *argv[] = {(char *)"socat", listen, connect, NULL};
  execv(socat, argv);
  die("cannot run %s: %s", socat, strerror(errno));
}

// Is something listening on 127.0.0.1:port in this network namespace? Read from
// /proc/net/tcp rather than by connecting, which would open a relay to the proxy.
static int listening(unsigned port) {
  FILE *f = fopen("/proc/net/tcp", "re");
  if (!f) die_errno("/proc/net/tcp");
  char line[512];
  int found = 0;
  while (!found && fgets(line, sizeof line, f)) {
    unsigned addr, lport, state;
    // "  sl  local_address rem_address   st ..." → "0: 0100007F:0C38 00000000:0000 0A"
    if (sscanf(line, " %*u: %8X:%4X %*8X:%*4X %2X", &addr, &lport, &state) == 3)
      found = addr == htonl(INADDR_LOOPBACK) && lport == port && state == 0x0A /* LISTEN */;
  }
  if (fclose(f) != 0) die_errno("fclose");
  return found;
}

static void wait_for_relays(struct relay *relays, int n) {
  struct timespec start, now, pause = {0, 1000 * 1000};
  if (clock_gettime(CLOCK_MONOTONIC, &start) != 0) die_errno("clock_gettime");
  for (;;) {
    int ready = 0;
    for (int i = 0; i < n; i++) {
      int status;
      pid_t pid = waitpid(relays[i].pid, &status, WNOHANG);
      if (pid < 0) die_errno("waitpid");
      if (pid > 0)
        die("relay for 127.0.0.1:%u (socat) exited with status %d before listening",
            relays[i].port, status_code(status));
      ready += listening(relays[i].port);
    }
    if (ready == n) return;
    if (clock_gettime(CLOCK_MONOTONIC, &now) != 0) die_errno("clock_gettime");
    long ms = (now.tv_sec - start.tv_sec) * 1000 + (now.tv_nsec - start.tv_nsec) / 1000000;
    if (ms > RELAY_WAIT_MS) die("relays did not start listening within %d ms", RELAY_WAIT_MS);
    nanosleep(&pause, NULL);
  }
}

void start_relays(struct relay *relays, int n) {
  const char *socat = find_socat();
  for (int r = 0; r < n; r++) start_relay(socat, &relays[r]);
  wait_for_relays(relays, n);
}
