// Utilities of every part of the helper: its messages (one write each, so that messages of
// several processes never interleave), reading srt's record files, and inherited descriptors.

#include "helper.h"

#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

void die(const char *fmt, ...) {
  // One write, so that messages from several processes never interleave.
  char msg[1024] = "srt: ";
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg + 5, sizeof msg - 6, fmt, ap);
  va_end(ap);
  size_t len = strlen(msg);
  msg[len] = '\n';
  if (write(STDERR_FILENO, msg, len + 1) < 0) { /* nothing left to report it to */ }
  _exit(EXIT_SETUP);
}

char *read_records(const char *path, const char *what, size_t max, size_t *len) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) die("srt-init: cannot open the %s %s: %s", what, path, strerror(errno));
  struct stat st;
  if (fstat(fd, &st) != 0) die_errno("fstat");
  if (!S_ISREG(st.st_mode) || (size_t)st.st_size > max) die("srt-init: %s: not a %s", path, what);
  char *buf = malloc(st.st_size + 1);
  if (!buf) die_errno("malloc");
  size_t done = 0;
  while (done < (size_t)st.st_size) {
    ssize_t n = read(fd, buf + done, st.st_size - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) die("srt-init: cannot read the %s %s", what, path);
    done += n;
  }
  close(fd);
  buf[done] = '\0';
  if (done > 0 && buf[done - 1] != '\0') die("srt-init: %s: unterminated record", path);
  *len = done;
  return buf;
}

void warn(const char *fmt, ...) {
  char msg[1024] = "srt: warning: ";
  size_t head = strlen(msg);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg + head, sizeof msg - head - 1, fmt, ap);
  va_end(ap);
  size_t len = strlen(msg);
  msg[len] = '\n';
  if (write(STDERR_FILENO, msg, len + 1) < 0) { /* nothing left to report it to */ }
}

void sort_fds(int *fds, int n) {
  for (int i = 1; i < n; i++)
    for (int k = i; k > 0 && fds[k - 1] > fds[k]; k--) {
      int t = fds[k];
      fds[k] = fds[k - 1];
      fds[k - 1] = t;
    }
}

// Whatever srt's caller left open without close-on-exec (a pipe, a log file, a control fd)
// would otherwise be readable or writable from inside: nothing past stderr goes in but the
// descriptors named on the command line (`keep`, ascending).
void close_inherited_fds(const int *keep, int nkeep) {
  unsigned from = 3;
  for (int k = 0; k < nkeep; k++) {
    if ((unsigned)keep[k] > from && syscall(SYS_close_range, from, (unsigned)keep[k] - 1, 0U) != 0)
      die_errno("close_range");
    from = (unsigned)keep[k] + 1;
  }
  if (syscall(SYS_close_range, from, ~0U, 0U) != 0) die_errno("close_range");
}
