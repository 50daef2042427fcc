// `--list-protected DEPTH [-f NAME]... [-s SUFFIX]... [-d DIRNAME]...`: the protected-path
// search of one writable root (the current directory), outside the sandbox, for srt
// (src/platform/search.ts). One walk lists what ripgrep and find listed in two: every regular
// file to DEPTH levels whose name is a NAME or ends with a SUFFIX, or that lies below a directory
// named DIRNAME (`f` + path), every symlink (`l` + path: srt picks the protected ones) and every
// directory it cannot open that the command could get into (`u` + path: see shut), each path
// relative and NUL-terminated. No symlink is followed.
// Reading entries straight from getdents costs a fifth of the CPU time of ripgrep and find
// together, and the search is on every command's way.

#include "helper.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_DEPTH 12

struct wanted {
  const char **names, **suffixes, **dirs;
  int nnames, nsuffixes, ndirs;
  int depth;
};

static int among(const char *name, const char **list, int n) {
  for (int i = 0; i < n; i++)
    if (strcmp(name, list[i]) == 0) return 1;
  return 0;
}

static int file_wanted(const struct wanted *w, const char *name) {
  if (among(name, w->names, w->nnames)) return 1;
  size_t len = strlen(name);
  for (int i = 0; i < w->nsuffixes; i++) {
    size_t s = strlen(w->suffixes[i]);
    if (len >= s && strcmp(name + len - s, w->suffixes[i]) == 0) return 1;
  }
  return 0;
}

static void emit(char kind, const char *path, size_t len) {
  putchar(kind);
  fwrite(path, 1, len + 1, stdout); // with its NUL
}

// A directory the walk may not open is skipped only if the command, the same user, can get into
// it no more than the walk. One that is the user's own (the command may chmod it open, then write
// what the listing missed: a hook's target) or that may be passed through (mode 711: the command
// reaches what lies inside by name) is listed (`u`): srt keeps it read-only whole.
static void shut(int dirfd, const char *name, const char *path, size_t len) {
  struct stat st;
  if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
    if (errno == ENOENT) return; // removed meanwhile
    die("srt-init: --list-protected: %s: %s", path, strerror(errno));
  }
  if (S_ISDIR(st.st_mode) && (st.st_uid == geteuid() || faccessat(dirfd, name, X_OK, AT_EACCESS) == 0)) emit('u', path, len);
}

// Lists the directory open as fd, whose path (relative, empty for the root) fills path[0..len).
// `inside`: a directory on the way is a DIRNAME. Takes fd.
static void walk(const struct wanted *w, int fd, char *path, size_t len, int depth, int inside) {
  DIR *d = fdopendir(fd);
  if (!d) {
    close(fd);
    return;
  }
  struct dirent *e;
  for (errno = 0; (e = readdir(d)); errno = 0) {
    const char *name = e->d_name;
    if (name[0] == '.' && (name[1] == '\0' || (name[1] == '.' && name[2] == '\0'))) continue;
    size_t n = strlen(name);
    size_t at = len ? len + 1 : 0;
    if (len) path[len] = '/';
    memcpy(path + at, name, n + 1);
    unsigned char type = e->d_type;
    if (type == DT_UNKNOWN) {
      struct stat st;
      if (fstatat(dirfd(d), name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
        if (errno != ENOENT) die("srt-init: --list-protected: %s: %s", path, strerror(errno));
        continue; // removed meanwhile
      }
      type = S_ISDIR(st.st_mode) ? DT_DIR : S_ISLNK(st.st_mode) ? DT_LNK : S_ISREG(st.st_mode) ? DT_REG : DT_UNKNOWN;
    }
    if (type == DT_LNK) emit('l', path, at + n);
    else if (type == DT_REG && (inside || file_wanted(w, name))) emit('f', path, at + n);
    else if (type == DT_DIR && depth < w->depth) {
      int sub = openat(dirfd(d), name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (sub >= 0) walk(w, sub, path, at + n, depth + 1, inside || among(name, w->dirs, w->ndirs));
      else if (errno == EACCES || errno == EPERM) shut(dirfd(d), name, path, at + n);
      // Removed or replaced meanwhile: skipped. Any other failure leaves the listing incomplete,
      // which must stop the run.
      else if (errno != ENOENT && errno != ENOTDIR && errno != ELOOP)
        die("srt-init: --list-protected: %s: %s", path, strerror(errno));
    }
  }
  if (errno) die("srt-init: --list-protected: reading %s: %s", len ? path : ".", strerror(errno));
  closedir(d);
  path[len] = '\0';
}

int list_protected(int argc, char **argv) {
  if (argc < 1) die("srt-init: --list-protected DEPTH [-f NAME]... [-s SUFFIX]... [-d DIRNAME]...");
  char *end;
  long depth = strtol(argv[0], &end, 10);
  if (*end || depth < 1 || depth > MAX_DEPTH) die("srt-init: --list-protected %s: want a depth from 1 to %d", argv[0], MAX_DEPTH);
  struct wanted w = {.depth = (int)depth};
  w.names = calloc(argc, sizeof *w.names);
  w.suffixes = calloc(argc, sizeof *w.suffixes);
  w.dirs = calloc(argc, sizeof *w.dirs);
  if (!w.names || !w.suffixes || !w.dirs) die_errno("calloc");
  for (int i = 1; i < argc; i += 2) {
    if (i + 1 >= argc || !argv[i + 1][0] || strchr(argv[i + 1], '/')) die("srt-init: --list-protected: %s wants a name", argv[i]);
    if (strcmp(argv[i], "-f") == 0) w.names[w.nnames++] = argv[i + 1];
    else if (strcmp(argv[i], "-s") == 0) w.suffixes[w.nsuffixes++] = argv[i + 1];
    else if (strcmp(argv[i], "-d") == 0) w.dirs[w.ndirs++] = argv[i + 1];
    else die("srt-init: --list-protected: unknown option %s", argv[i]);
  }
  static char path[(MAX_DEPTH + 1) * (NAME_MAX + 1)];
  static char out[1 << 16];
  setvbuf(stdout, out, _IOFBF, sizeof out);
  int fd = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) die_errno("--list-protected: open .");
  walk(&w, fd, path, 0, 1, 0);
  if (fflush(stdout) != 0 || ferror(stdout)) die_errno("--list-protected: write");
  return 0;
}
