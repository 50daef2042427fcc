// Landlock is defence in depth under the mounts: a read-only bind does not stop opening a FIFO
// or a device for writing (a write channel to whatever reads it on the host), nor reopening a
// descriptor through /proc/self/fd, which lands on the host's own mount. So the command may
// write only beneath the --writable paths (the ones bwrap binds read-write), a few /dev
// entries, /proc, and its own stdio files. Connecting to a socket file is not Landlock's
// business here (the seccomp filter refuses AF_UNIX unless allowed). Without Landlock
// in the kernel (or ABI 1, which cannot allow renames across directories) the helper goes on
// without it and says so (one `srt: warning:` line); --no-landlock turns it off (a nested sandbox
// needs mount(2), which Landlock denies; srt warns then). `--landlock-abi` prints what this kernel
// offers, for srt doctor.

#include "helper.h"

#include <fcntl.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

// Landlock user API (linux/landlock.h), spelled out so that older kernel headers build too.
#ifndef SYS_landlock_create_ruleset
#define SYS_landlock_create_ruleset 444
#endif
#ifndef SYS_landlock_add_rule
#define SYS_landlock_add_rule 445
#endif
#ifndef SYS_landlock_restrict_self
#define SYS_landlock_restrict_self 446
#endif
#define LL_CREATE_RULESET_VERSION (1U << 0)
#define LL_RULE_PATH_BENEATH 1
#define LL_WRITE_FILE (1ULL << 1)
#define LL_REMOVE_DIR (1ULL << 4)
#define LL_REMOVE_FILE (1ULL << 5)
#define LL_MAKE_CHAR (1ULL << 6)
#define LL_MAKE_DIR (1ULL << 7)
#define LL_MAKE_REG (1ULL << 8)
#define LL_MAKE_SOCK (1ULL << 9)
#define LL_MAKE_FIFO (1ULL << 10)
#define LL_MAKE_BLOCK (1ULL << 11)
#define LL_MAKE_SYM (1ULL << 12)
#define LL_REFER (1ULL << 13)    /* ABI 2 */
#define LL_TRUNCATE (1ULL << 14) /* ABI 3 */
// Only writing is handled: reads and execution are the mounts' business. IOCTL_DEV (ABI 5)
// stays unhandled: a terminal needs its ioctls.
#define LL_WRITE_RIGHTS                                                                           \
  (LL_WRITE_FILE | LL_REMOVE_DIR | LL_REMOVE_FILE | LL_MAKE_CHAR | LL_MAKE_DIR | LL_MAKE_REG |    \
   LL_MAKE_SOCK | LL_MAKE_FIFO | LL_MAKE_BLOCK | LL_MAKE_SYM | LL_REFER)
// The rights that apply to a file itself (a rule on a non-directory may hold only these).
#define LL_FILE_RIGHTS (LL_WRITE_FILE | LL_TRUNCATE)

struct ll_ruleset_attr {
  uint64_t handled_access_fs;
};
struct ll_path_beneath_attr {
  uint64_t allowed_access;
  int32_t parent_fd;
} __attribute__((packed));

// Writable beyond the --writable paths. /dev: the sinks, the controlling terminal, new ptys
// (/dev/ptmx → pts/ptmx) and POSIX shared memory; nothing else of bwrap's /dev. /proc: the
// command's own files (oom_score_adj, uid_map of a nested namespace, ...); /proc/sys and the
// other dangerous entries are read-only mounts.
static const char *const always_writable[] = {"/dev/null", "/dev/zero", "/dev/full", "/dev/tty",
                                              "/dev/pts",  "/dev/shm",  "/proc"};

// Allow `handled` beneath the file or directory open at fd (only the file rights on a file).
static void allow_beneath(int ruleset, int fd, uint64_t handled, const char *what) {
  struct stat st;
  if (fstat(fd, &st) != 0) die("srt-init: %s: %s", what, strerror(errno));
  struct ll_path_beneath_attr rule = {
      S_ISDIR(st.st_mode) ? handled : handled & LL_FILE_RIGHTS, fd};
  if (syscall(SYS_landlock_add_rule, ruleset, LL_RULE_PATH_BENEATH, &rule, 0) != 0)
    die("srt-init: landlock rule for %s: %s", what, strerror(errno));
}

static void allow_path(int ruleset, const char *path, uint64_t handled, int must_exist) {
  int fd = open(path, O_PATH | O_CLOEXEC);
  if (fd < 0) {
    if (!must_exist && errno == ENOENT) return;
    die("srt-init: writable path %s: %s", path, strerror(errno));
  }
  allow_beneath(ruleset, fd, handled, path);
  close(fd);
}

static int socket_files = 0;

void landlock_allow_socket_files(void) { socket_files = 1; }

// Open a --writable path for restrict_writes, in the outer helper: as the mount check verified it
// (no symlink on the way, the planned bind) when there is a plan, so a path swapped since cannot
// widen the rule. The rule goes on the directory itself (Landlock follows inodes), in whatever
// mount namespace it is used later.
int open_writable(const char *path) {
  if (!verify_loaded()) {
    int fd = open(path, O_PATH | O_CLOEXEC);
    if (fd < 0) die("srt-init: writable path %s: %s", path, strerror(errno));
    return fd;
  }
  int fd = verified_open(path);
  if (fd < 0) die("srt-init: writable path %s is not a planned read-write mount", path);
  return fd;
}

long landlock_abi(void) {
  long abi = syscall(SYS_landlock_create_ruleset, NULL, 0, LL_CREATE_RULESET_VERSION);
  if (abi < 0 && (errno == ENOSYS || errno == EOPNOTSUPP)) return errno == ENOSYS ? 0 : -1;
  if (abi < 0) die_errno("landlock_create_ruleset");
  return abi;
}

// Runs in init, after it mounted /proc and before it forks the command (and starts the
// supervisor): both inherit this one domain. writable: the --writable paths, open (open_writable).
// Without a usable Landlock the run goes on, with one warning.
void restrict_writes(const char *const *paths, const int *writable, int nwritable) {
  long abi = landlock_abi();
  if (abi < 2) {
    // ABI 1 refuses every rename/link across directories, even inside cwd.
    warn("Landlock is %s: writes are confined by the mounts alone, which do not stop the command "
         "from opening a host FIFO or device on a read-only path for writing; srt doctor shows it",
         abi == 0 ? "not in this kernel (srt uses it from Linux 5.19)"
         : abi < 0 ? "built into this kernel but not enabled (add landlock to the lsm= boot parameter)"
                   : "too old in this kernel (ABI 1; srt needs ABI 2, Linux 5.19)");
    return;
  }
  uint64_t handled = LL_WRITE_RIGHTS | (abi >= 3 ? LL_TRUNCATE : 0);
  struct ll_ruleset_attr attr = {handled};
  int ruleset = syscall(SYS_landlock_create_ruleset, &attr, sizeof attr, 0);
  if (ruleset < 0) die_errno("landlock_create_ruleset");
  // Without socket access a socket inode has no use (connect() is refused), only a leftover in
  // the work tree: bind() of a socketpair's socket to a path is refused too.
  uint64_t granted = socket_files ? handled : handled & ~LL_MAKE_SOCK;
  for (int i = 0; i < nwritable; i++) {
    allow_beneath(ruleset, writable[i], granted, paths[i]);
    close(writable[i]);
  }
  for (size_t i = 0; i < sizeof always_writable / sizeof always_writable[0]; i++)
    allow_path(ruleset, always_writable[i], granted, 0);
  // Stdio open for writing may be a host file or terminal: reopening it (/dev/stdout,
  // /proc/self/fd/2) gives nothing the descriptor does not. Pipes and sockets are outside
  // Landlock's reach anyway (EBADFD).
  for (int fd = 0; fd <= 2; fd++) {
    int flags = fcntl(fd, F_GETFL);
    if (flags < 0 || (flags & O_PATH) || (flags & O_ACCMODE) == O_RDONLY) continue;
    struct ll_path_beneath_attr rule = {handled & LL_FILE_RIGHTS, fd};
    if (syscall(SYS_landlock_add_rule, ruleset, LL_RULE_PATH_BENEATH, &rule, 0) != 0 &&
        errno != EBADFD)
      die("srt-init: landlock rule for fd %d: %s", fd, strerror(errno));
  }
  if (syscall(SYS_landlock_restrict_self, ruleset, 0) != 0) die_errno("landlock_restrict_self");
  close(ruleset);
}
