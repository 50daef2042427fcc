// The command's own terminal (--pty CHANNEL:PARENTSTAT:STDIO), for runs where any of srt's stdio
// is a terminal: no descriptor of the user's terminal ever enters the sandbox.
//
// srt, outside, owns the user's terminal: it relays output over CHANNEL, a stream socket, and,
// when stdin is the terminal (STDIO has 0), puts it in raw mode and relays keystrokes. Inside,
// this file:
//  - creates a pseudo-terminal in the sandbox's own devpts (bwrap --dev), with srt's window size
//    and terminal modes (`stty -g` of the user's terminal), before anything else runs;
//  - forks the relay, a process outside the nested PID namespace (the command can neither see
//    nor signal it), which holds the master and copies bytes between it and CHANNEL;
//  - with input: makes init the session leader with the pty as controlling terminal, and the
//    command a process group of that session in the foreground: the inner line discipline turns
//    Ctrl-C, Ctrl-Z and Ctrl-\ into signals for the inner foreground job, and since init (same
//    session, another group) is the command's parent, the command's group is not orphaned, so
//    Ctrl-Z really stops a non-interactive command;
//  - output only (stdin is not the terminal): the pty is no one's controlling terminal (as before
//    without a terminal, /dev/tty cannot be opened, so a password prompt fails instead of
//    waiting for keys that never come), the command's descriptors on it are write-only, and
//    output processing is off (-opost): the bytes reach the user's terminal as the command wrote
//    them, and its own processing applies once, as if the command wrote to it directly. A resize
//    sends SIGWINCH to the command's process group (no terminal session would);
//  - reports every stop of the command (init sees it with WUNTRACED) to srt, which then gives
//    the terminal back to the user's shell and stops itself, as sudo does with use_pty;
//  - freezes the whole sandbox (freeze.c) while srt is stopped, or in the background with input,
//    and continues it when srt is continued. srt asks for it when it sees the change itself; a
//    SIGSTOP, which srt cannot catch, the relay notices by reading srt's /proc/PID/stat
//    (PARENTSTAT, an open descriptor) every WATCH_MS.
//
// CHANNEL frames, both ways: TYPE (1 byte), LENGTH (4 bytes, little-endian), LENGTH bytes.
//   srt → helper: 'S' setup "ROWS COLS [STTY-G]" (first frame, exactly once), 'D' input,
//                 'W' window size (rows, cols: 2 bytes each, little-endian), 'F' freeze,
//                 'C' continue (srt runs again).
//   helper → srt: 'D' output, 'T' the command stopped (1 byte: the signal).
// src/platform/terminal.ts is the other end.

#include "helper.h"

#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#ifndef TIOCGPTPEER
#define TIOCGPTPEER _IO('T', 0x41)
#endif

#define FRAME_HEADER 5
#define FRAME_MAX 65536 /* largest payload either side sends */
#define WATCH_MS 200
#define SETUP_MAX 1024

// init → relay reports; the outer helper sends the first one, init's PID in the relay's namespace.
struct report {
  char type; // 'P' init's pid, 'S' the command stopped by signal `value`
  int value;
};

static int parse_fd(const char *s, char **end) {
  errno = 0;
  long v = strtol(s, end, 10);
  if (errno || *end == s || v < 3 || v > 1 << 20) return -1;
  return (int)v;
}

void parse_pty(const char *spec, struct pty *p) {
  char *end;
  memset(p, 0, sizeof *p);
  p->master = p->slave = p->report[0] = p->report[1] = -1;
  p->channel = parse_fd(spec, &end);
  if (p->channel < 0 || *end != ':') goto bad;
  p->parent_stat = parse_fd(end + 1, &end);
  if (p->parent_stat < 0 || *end != ':' || p->parent_stat == p->channel) goto bad;
  for (const char *c = end + 1; *c; c++) {
    if (*c < '0' || *c > '2') goto bad;
    p->stdio |= 1 << (*c - '0');
  }
  if (!p->stdio) goto bad;
  // Kept open across the helper's start (main.c closes every other inherited descriptor), but
  // never passed on to what it executes (socat, the command).
  int passed[] = {p->channel, p->parent_stat};
  for (size_t i = 0; i < 2; i++)
    if (fcntl(passed[i], F_SETFD, FD_CLOEXEC) != 0)
      die("srt-init: --pty: descriptor %d is not open", passed[i]);
  return;
bad:
  die("srt-init: --pty %s: want CHANNELFD:STATFD:STDIO (e.g. 4:5:012)", spec);
}

static void read_full(int fd, void *buf, size_t len, const char *what) {
  for (size_t done = 0; done < len;) {
    ssize_t n = read(fd, (char *)buf + done, len - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) die("srt-init: reading %s: %s", what, strerror(errno));
    if (n == 0) die("srt-init: srt closed the terminal channel before %s", what);
    done += n;
  }
}

static uint32_t le32(const unsigned char *b) {
  return b[0] | b[1] << 8 | b[2] << 16 | (uint32_t)b[3] << 24;
}

// "iflag:oflag:cflag:lflag:cc0:...:cc31" as GNU stty -g prints it (hex).
static void apply_stty(int fd, const char *s) {
  struct termios t;
  if (tcgetattr(fd, &t) != 0) die_errno("tcgetattr");
  unsigned long v[4 + NCCS];
  size_t n = 0;
  for (const char *c = s; n < sizeof v / sizeof v[0]; n++) {
    char *end;
    errno = 0;
    v[n] = strtoul(c, &end, 16);
    if (errno || end == c) break;
    c = end;
    if (*c != ':') { n++; break; }
    c++;
  }
  if (n != 4 + NCCS) die("srt-init: terminal modes '%s' are not `stty -g` output", s);
  t.c_iflag = v[0];
  t.c_oflag = v[1];
  t.c_cflag = v[2];
  t.c_lflag = v[3];
  for (int i = 0; i < NCCS; i++) t.c_cc[i] = v[4 + i];
  if (tcsetattr(fd, TCSANOW, &t) != 0) die_errno("tcsetattr");
}

static void set_winsize(int master, unsigned rows, unsigned cols) {
  struct winsize ws = {.ws_row = rows, .ws_col = cols};
  // The kernel sends SIGWINCH to the terminal's foreground group when the size changes.
  if (ioctl(master, TIOCSWINSZ, &ws) != 0) die_errno("TIOCSWINSZ");
}

// The setup frame: srt writes it as soon as it spawns the sandbox.
static void read_setup(struct pty *p) {
  unsigned char head[FRAME_HEADER];
  read_full(p->channel, head, sizeof head, "the terminal setup");
  uint32_t len = le32(head + 1);
  if (head[0] != 'S' || len >= SETUP_MAX) die("srt-init: bad terminal setup frame");
  char setup[SETUP_MAX];
  read_full(p->channel, setup, len, "the terminal setup");
  setup[len] = '\0';
  unsigned rows, cols;
  int used = 0;
  if (sscanf(setup, "%u %u%n", &rows, &cols, &used) != 2 || rows > 0xffff || cols > 0xffff)
    die("srt-init: bad terminal setup '%s'", setup);
  set_winsize(p->master, rows, cols);
  const char *modes = setup + used;
  while (*modes == ' ') modes++;
  if (*modes) apply_stty(p->slave, modes);
}

void pty_create(struct pty *p, sigset_t *set) {
  // Freeze/continue requests reach init as these signals (see pty_forward_until_exit).
  sigaddset(set, PTY_SIG_FREEZE);
  sigaddset(set, PTY_SIG_THAW);
  if (sigprocmask(SIG_BLOCK, set, NULL) != 0) die_errno("sigprocmask");
  p->master = open("/dev/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC | O_NONBLOCK);
  if (p->master < 0)
    die("srt-init: cannot create the command's terminal (/dev/ptmx): %s", strerror(errno));
  int unlock = 0;
  if (ioctl(p->master, TIOCSPTLCK, &unlock) != 0) die_errno("TIOCSPTLCK");
  int input = p->stdio & 1;
  p->slave = ioctl(p->master, TIOCGPTPEER, (input ? O_RDWR : O_WRONLY) | O_NOCTTY | O_CLOEXEC);
  if (p->slave < 0) die("srt-init: cannot open the terminal's slave side: %s", strerror(errno));
  read_setup(p);
  if (!input) {
    struct termios t;
    if (tcgetattr(p->slave, &t) != 0) die_errno("tcgetattr");
    t.c_oflag &= ~OPOST;
    if (tcsetattr(p->slave, TCSANOW, &t) != 0) die_errno("tcsetattr");
    // Nothing is ever typed into it: a program that reopens it to read keys (`cat f | less`
    // opens its stderr's /dev/pts/N) is refused at once instead of waiting for ever. Not a
    // barrier (the command owns the node and may chmod it back), just a quick, clear answer.
    if (fchmod(p->slave, 0200) != 0) die_errno("fchmod terminal");
  }
  if (pipe2(p->report, O_CLOEXEC) != 0) die_errno("pipe2");
  // init never blocks on a report (a full pipe would mean the relay is gone anyway).
  if (fcntl(p->report[1], F_SETFL, O_NONBLOCK) != 0) die_errno("fcntl");
}

// ---------------------------------------------------------------------------------------------
// The relay: master ↔ channel, reports → 'T' frames, freeze/continue → init.

struct relay_state {
  struct pty *p;
  pid_t init;
  int frozen;
  int stopped_sig; // a stop to announce once the output before it is out
  int master_open, report_open, watch;
  int in_blocked; // the 'D' frame at the start of `in` waits for the master (POLLOUT)
  long next_watch; // when to look at srt's state next (ms, monotonic)
  unsigned char in[FRAME_HEADER + FRAME_MAX]; // from srt
  size_t in_len, in_done;                     // in_done: bytes of the current 'D' frame written
  unsigned char out[FRAME_HEADER + FRAME_MAX + 2 * FRAME_HEADER + 1]; // to srt
  size_t out_len, out_off;
};

static void request(struct relay_state *r, int freeze) {
  if (freeze && r->frozen) return;
  r->frozen = freeze;
  if (r->init > 0 && kill(r->init, freeze ? PTY_SIG_FREEZE : PTY_SIG_THAW) != 0 && errno != ESRCH)
    die_errno("kill init");
}

static void put_frame(struct relay_state *r, char type, const void *data, uint32_t len) {
  unsigned char *h = r->out + r->out_len;
  h[0] = type;
  h[1] = len;
  h[2] = len >> 8;
  h[3] = len >> 16;
  h[4] = len >> 24;
  memcpy(h + FRAME_HEADER, data, len);
  r->out_len += FRAME_HEADER + len;
}

// Read what the master has into one 'D' frame. Returns 1 when the master is drained for now.
static int fill_from_master(struct relay_state *r) {
  size_t got = 0;
  unsigned char *data = r->out + FRAME_HEADER;
  int drained = 0;
  while (got < FRAME_MAX) {
    ssize_t n = read(r->p->master, data + got, FRAME_MAX - got);
    if (n > 0) { got += n; continue; }
    if (n < 0 && errno == EINTR) continue;
    drained = 1;
    // EIO: every slave descriptor is closed (init and the whole namespace are gone).
    if (n == 0 || errno == EIO) r->master_open = 0;
    else if (errno != EAGAIN) die_errno("read terminal");
    break;
  }
  if (got) {
    r->out[0] = 'D';
    r->out[1] = got;
    r->out[2] = got >> 8;
    r->out[3] = got >> 16;
    r->out[4] = got >> 24;
    r->out_len = FRAME_HEADER + got;
  }
  return drained;
}

// Act on complete frames from srt; stops at a 'D' frame the master cannot take yet.
static void handle_input(struct relay_state *r) {
  r->in_blocked = 0;
  for (;;) {
    if (r->in_len < FRAME_HEADER) return;
    uint32_t len = le32(r->in + 1);
    if (len > FRAME_MAX) die("srt-init: terminal frame of %u bytes", len);
    if (r->in_len < FRAME_HEADER + len) return;
    unsigned char type = r->in[0], *data = r->in + FRAME_HEADER;
    if (type == 'D') {
      while (r->in_done < len) {
        ssize_t n = write(r->p->master, data + r->in_done, len - r->in_done);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && errno == EAGAIN) {
          r->in_blocked = 1; // the line discipline is full
          return;
        }
        if (n < 0 && errno == EIO) { r->in_done = len; break; } // nobody left to read it
        if (n < 0) die_errno("write terminal");
        r->in_done += n;
      }
    } else if (type == 'W' && len == 4) {
      set_winsize(r->p->master, data[0] | data[1] << 8, data[2] | data[3] << 8);
      // No session has the pty as its terminal: init passes SIGWINCH on to the command's group.
      if (!(r->p->stdio & 1) && r->init > 0 && kill(r->init, SIGWINCH) != 0 && errno != ESRCH)
        die_errno("kill init");
    } else if (type == 'F' && len == 0) {
      request(r, 1);
    } else if (type == 'C' && len == 0) {
      request(r, 0);
    } else {
      die("srt-init: unexpected terminal frame '%c' (%u bytes)", type, len);
    }
    r->in_done = 0;
    memmove(r->in, r->in + FRAME_HEADER + len, r->in_len - FRAME_HEADER - len);
    r->in_len -= FRAME_HEADER + len;
  }
}

static void handle_reports(struct relay_state *r) {
  struct report rep;
  for (;;) {
    ssize_t n = read(r->p->report[0], &rep, sizeof rep);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return;
    if (n <= 0) { r->report_open = 0; return; }
    if (n != sizeof rep) die("srt-init: short report from init");
    if (rep.type == 'P') r->init = rep.value;
    else if (rep.type == 'S') r->stopped_sig = rep.value;
  }
}

// Is srt stopped? (state T: stopped, t: traced) Its stat line: "PID (COMM) STATE ...".
static int parent_stopped(struct relay_state *r) {
  char buf[512];
  ssize_t n = pread(r->p->parent_stat, buf, sizeof buf - 1, 0);
  if (n <= 0) { r->watch = 0; return 0; } // srt is gone: bwrap's --die-with-parent ends us
  buf[n] = '\0';
  char *paren = strrchr(buf, ')');
  return paren && paren[1] == ' ' && (paren[2] == 'T' || paren[2] == 't');
}

static long now_ms(void) {
  struct timespec t;
  if (clock_gettime(CLOCK_MONOTONIC, &t) != 0) die_errno("clock_gettime");
  return t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

// Every WATCH_MS while the sandbox runs: freeze it if srt is stopped. Returns poll's timeout.
static int watch_parent(struct relay_state *r) {
  if (!r->watch || r->frozen) return -1;
  long now = now_ms();
  if (now >= r->next_watch) {
    r->next_watch = now + WATCH_MS;
    if (parent_stopped(r)) {
      request(r, 1);
      return -1;
    }
  }
  return (int)(r->next_watch - now);
}

static int relay_loop(struct pty *p) {
  static struct relay_state r;
  r.p = p;
  r.master_open = r.report_open = r.watch = 1;
  if (fcntl(p->channel, F_SETFL, O_NONBLOCK) != 0 || fcntl(p->report[0], F_SETFL, O_NONBLOCK) != 0)
    die_errno("fcntl");
  for (;;) {
    if (r.out_off == r.out_len) {
      r.out_len = r.out_off = 0;
      // Output first, then the stop that followed it, so srt never suspends before showing it.
      int drained = r.master_open ? fill_from_master(&r) : 1;
      if (drained && r.stopped_sig) {
        unsigned char sig = r.stopped_sig;
        put_frame(&r, 'T', &sig, 1);
        r.stopped_sig = 0;
      }
      if (r.out_len == 0 && !r.master_open) return 0; // all output delivered
    }
    int pending_in = r.in_blocked;
    struct pollfd fds[3] = {
        {p->channel, (pending_in ? 0 : POLLIN) | (r.out_off < r.out_len ? POLLOUT : 0), 0},
        {r.master_open ? p->master : -1,
         (r.out_off < r.out_len ? 0 : POLLIN) | (pending_in ? POLLOUT : 0), 0},
        {r.report_open ? p->report[0] : -1, POLLIN, 0},
    };
    int n = poll(fds, 3, watch_parent(&r));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) die_errno("poll");
    if (fds[2].revents) handle_reports(&r);
    if (fds[0].revents & POLLOUT) {
      ssize_t w = write(p->channel, r.out + r.out_off, r.out_len - r.out_off);
      if (w < 0 && errno != EAGAIN && errno != EINTR) return 0; // srt is gone
      if (w > 0) r.out_off += w;
    }
    if (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) {
      ssize_t got = read(p->channel, r.in + r.in_len, sizeof r.in - r.in_len);
      if (got == 0 || (got < 0 && errno != EAGAIN && errno != EINTR)) return 0; // srt hung up
      if (got > 0) r.in_len += got;
    }
    handle_input(&r);
  }
}

void pty_start_relay(struct pty *p) {
  p->relay = fork();
  if (p->relay < 0) die_errno("fork");
  if (p->relay > 0) return;
  // Only the relay's ends: the slave must close with the namespace for the master to see EOF.
  close(p->slave);
  close(p->report[1]);
  drop_capabilities();
  _exit(relay_loop(p));
}

void pty_started(struct pty *p, pid_t init) {
  struct report rep = {'P', init};
  if (write(p->report[1], &rep, sizeof rep) != sizeof rep) die_errno("write report");
  int *fds[] = {&p->master, &p->slave, &p->channel, &p->parent_stat, &p->report[0], &p->report[1]};
  for (size_t i = 0; i < sizeof fds / sizeof fds[0]; i++) {
    close(*fds[i]);
    *fds[i] = -1;
  }
}

void pty_finish(struct pty *p, const sigset_t *set) {
  // The relay ends once the last output reached srt (which may be stopped meanwhile); a signal
  // that ends srt's runs ends the wait too. The relay dies with this process.
  for (;;) {
    pid_t pid = waitpid(p->relay, NULL, WNOHANG);
    if (pid != 0 && !(pid < 0 && errno == EINTR)) return;
    int sig = sigwaitinfo(set, NULL);
    if (sig == SIGINT || sig == SIGTERM || sig == SIGHUP || sig == SIGQUIT) return;
  }
}

// ---------------------------------------------------------------------------------------------
// init and the command.

void pty_init_session(struct pty *p) {
  close(p->master);
  close(p->channel);
  close(p->parent_stat);
  close(p->report[0]);
  if (!(p->stdio & 1)) return; // output only: no controlling terminal (see the top)
  if (setsid() < 0) die_errno("setsid");
  if (ioctl(p->slave, TIOCSCTTY, 0) != 0) die_errno("TIOCSCTTY");
}

void pty_attach_command(const struct pty *p) {
  // The foreground group of its terminal. SIGTTOU is still blocked here, so a background group
  // may do it.
  if ((p->stdio & 1) && tcsetpgrp(p->slave, getpid()) != 0) die_errno("tcsetpgrp");
  for (int fd = 0; fd <= 2; fd++)
    if ((p->stdio & 1 << fd) && dup2(p->slave, fd) < 0) die_errno("dup2");
}

static void signal_group(pid_t pgrp, int sig) {
  if (kill(-pgrp, sig) != 0 && kill(pgrp, sig) != 0 && errno != ESRCH) die_errno("kill");
}

int pty_forward_until_exit(const struct pty *p, pid_t child, const sigset_t *set) {
  if ((p->stdio & 1) && tcsetpgrp(p->slave, child) != 0 && errno != EPERM && errno != ESRCH)
    die_errno("tcsetpgrp");
  struct freeze frozen = {0};
  int freezing = 0;
  int stop_reported = 0; // srt stopped itself for the command's own stop: its `fg` continues it
  for (;;) {
    siginfo_t info;
    int sig = sigwaitinfo(set, &info);
    if (sig < 0) {
      if (errno == EINTR) continue;
      die_errno("sigwaitinfo");
    }
    if (sig == PTY_SIG_FREEZE || sig == PTY_SIG_THAW) {
      // Only kill() from outside this namespace (the relay): si_pid is 0 for such senders, and
      // sigqueue(), which lets the sender choose si_pid, cannot claim SI_USER.
      if (info.si_code != SI_USER || info.si_pid != 0) continue;
      if (sig == PTY_SIG_FREEZE && !freezing) {
        freezing = 1;
        freeze_namespace(&frozen);
      } else if (sig == PTY_SIG_THAW) {
        thaw_namespace(&frozen);
        if (stop_reported) signal_group(child, SIGCONT);
        stop_reported = 0;
        freezing = 0;
      }
      continue;
    }
    if (sig != SIGCHLD) {
      signal_group(child, sig);
      continue;
    }
    for (;;) {
      int status;
      pid_t pid = waitpid(-1, &status, WNOHANG | WUNTRACED | WCONTINUED);
      if (pid < 0 && errno == EINTR) continue;
      if (pid < 0 && errno != ECHILD) die_errno("waitpid");
      if (pid <= 0) break;
      if (pid != child || WIFCONTINUED(status)) continue;
      if (WIFSTOPPED(status)) {
        // A stop of the freeze's own is no news for srt.
        if (freezing) continue;
        struct report rep = {'S', WSTOPSIG(status)};
        if (write(p->report[1], &rep, sizeof rep) < 0 && errno != EAGAIN) die_errno("write report");
        stop_reported = 1;
        continue;
      }
      return status_code(status);
    }
  }
}
