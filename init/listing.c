// `--list-protected DEPTH [-f NAME]... [-s SUFFIX]... [-d DIRNAME]... [--cache]`: the
// protected-path search of one writable root (the current directory), outside the sandbox, for
// srt (src/platform/search.ts). One walk lists what ripgrep and find listed in two: every regular
// file to DEPTH levels whose name is a NAME or ends with a SUFFIX, or that lies below a directory
// named DIRNAME (`f` + path), every symlink (`l` + path: srt picks the protected ones) and every
// directory it cannot open that the command could get into (`u` + path: see shut), each path
// relative and NUL-terminated. No symlink is followed.
// Reading entries straight from getdents costs a fifth of the CPU time of ripgrep and find
// together, and the search is on every command's way.
//
// With --cache, the last walk's record comes in on stdin (srt's own file under ~/.srt, or
// nothing) and this walk's record goes out on descriptor 3; `C` on stdout says it was written
// whole, `K` that it is byte for byte the one that came in, and nothing was written (the walk
// of an unchanged tree rewrites no record). The record holds each directory's names with the (device, inode, ctime) it had just
// before they were read. A directory whose stamp is unchanged is not read again: its listing is
// the recorded one. Every create, unlink or rename in a directory moves its ctime to the clock's
// now, and no unprivileged process can set a ctime back (utimes sets it to now too), so an
// unchanged stamp means unchanged names, provided no change fell in the clock tick of the stamp:
// a directory changed less than TRUST_MARGIN before this walk began is read again next time,
// as git does with its index's racy entries. Only the names are kept, never what srt reads from
// them (contents, symlinks' targets); a directory on another device than the root, or a root on
// a file system not known to keep ctimes locally, is read every time.

#include "helper.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/magic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#define MAX_DEPTH 12
#define TRUST_MARGIN_S 2
#define MAX_CACHE (1 << 29)
#define CACHE_MAGIC "srt-tree 1"

struct wanted {
  const char **names, **suffixes, **dirs;
  int nnames, nsuffixes, ndirs;
  int depth;
};

// A directory of the last walk's record: its stamp and its items in the order listed.
struct item;
struct node {
  uint64_t dev, ino;
  int64_t sec;
  uint32_t nsec;
  int trusted;
  int leaf; // no subdirectory items: checked with one stat, never opened
  struct item *items;
  size_t nitems;
  struct item **subs; // the `s` items, sorted by name
  size_t nsubs;
};

struct item {
  char kind; // f, l: listed; u: a subdirectory it could not open; s: one it walked (child)
  uint16_t len;
  const char *name;
  struct node *child;
};

static FILE *cache; // the record being written, or NULL
static int cache_failed;
// The last walk's record (valid) and how much of it the record being written repeats so far;
// same is NULL once they differ (the repeated part is then written out first).
static const unsigned char *last, *same, *last_end;
static int local_fs;
static dev_t root_dev;
static time_t trust_before; // ctimes from this second on are too recent to trust

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

// FNV-1a over a record's bytes before its end: a record damaged on disk is not trusted.
static uint64_t digest(uint64_t h, const void *p, size_t n) {
  for (const unsigned char *c = p; n--; c++) h = (h ^ *c) * 0x100000001b3ULL;
  return h;
}
#define DIGEST_SEED 0xcbf29ce484222325ULL
static uint64_t written = DIGEST_SEED;

// The record being written no longer repeats the last one: the part it repeated is written out.
static void diverge(void) {
  size_t k = (size_t)(same - last);
  same = NULL;
  if (fwrite(last, 1, k, cache) != k) cache_failed = 1;
}

static void put(const void *p, size_t n) {
  if (!cache) return;
  written = digest(written, p, n);
  if (same) {
    if ((size_t)(last_end - same) >= n && memcmp(same, p, n) == 0) {
      same += n;
      return;
    }
    diverge();
  }
  if (fwrite(p, 1, n, cache) != n) cache_failed = 1;
}

static void put_item(char kind, const char *name, size_t n) {
  uint16_t len = (uint16_t)n;
  put(&kind, 1);
  put(&len, sizeof len);
  put(name, n);
}

static int trusted_now(const struct stat *st) {
  return local_fs && st->st_dev == root_dev && st->st_ctim.tv_sec < trust_before;
}

static void put_node(const struct stat *st) {
  uint64_t dev = st->st_dev, ino = st->st_ino;
  int64_t sec = st->st_ctim.tv_sec;
  uint32_t nsec = (uint32_t)st->st_ctim.tv_nsec;
  unsigned char trusted = (unsigned char)trusted_now(st);
  put("D", 1);
  put(&dev, sizeof dev);
  put(&ino, sizeof ino);
  put(&sec, sizeof sec);
  put(&nsec, sizeof nsec);
  put(&trusted, 1);
}

// The recorded listing still holds: same directory, ctime unmoved, trusted when recorded and now.
static int unchanged(const struct node *o, const struct stat *st) {
  return o && o->trusted && trusted_now(st) && o->dev == (uint64_t)st->st_dev && o->ino == (uint64_t)st->st_ino &&
         o->sec == (int64_t)st->st_ctim.tv_sec && o->nsec == (uint32_t)st->st_ctim.tv_nsec;
}

static int by_name(const void *a, const void *b) {
  const struct item *x = *(struct item *const *)a, *y = *(struct item *const *)b;
  int c = memcmp(x->name, y->name, x->len < y->len ? x->len : y->len);
  return c ? c : (int)x->len - (int)y->len;
}

static const struct node *recorded_sub(const struct node *o, const char *name) {
  if (!o || !o->nsubs) return NULL;
  struct item key = {.len = (uint16_t)strlen(name), .name = name}, *k = &key;
  struct item **hit = bsearch(&k, o->subs, o->nsubs, sizeof *o->subs, by_name);
  return hit ? (*hit)->child : NULL;
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

static void visit(const struct wanted *w, int fd, const struct stat *st, char *path, size_t len, int depth, int inside,
                  const struct node *old);

// The subdirectory `name` of the directory open as dirfd, its path filling path[0..len).
static void subdir(const struct wanted *w, int dirfd, const char *name, char *path, size_t len, int depth, int inside,
                   const struct node *old) {
  struct stat st;
  if (old && old->leaf && fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode) && unchanged(old, &st)) {
    put_item('s', name, strlen(name));
    visit(w, -1, &st, path, len, depth, inside, old);
    return;
  }
  int sub = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (sub >= 0) {
    if (fstat(sub, &st) != 0) die("srt-init: --list-protected: %s: %s", path, strerror(errno));
    put_item('s', name, strlen(name));
    visit(w, sub, &st, path, len, depth, inside, old);
  } else if (errno == EACCES || errno == EPERM) {
    put_item('u', name, strlen(name)); // judged again on every walk: its mode is its own
    shut(dirfd, name, path, len);
  }
  // Removed or replaced meanwhile: skipped. Any other failure leaves the listing incomplete,
  // which must stop the run.
  else if (errno != ENOENT && errno != ENOTDIR && errno != ELOOP)
    die("srt-init: --list-protected: %s: %s", path, strerror(errno));
}

// Appends `name` to the path of its directory (path[0..len)); returns the new length.
static size_t extend(char *path, size_t len, const char *name, size_t n) {
  size_t at = len ? len + 1 : 0;
  if (len) path[len] = '/';
  memcpy(path + at, name, n);
  path[at + n] = '\0';
  return at + n;
}

// Lists the directory open as fd (or, unchanged since the record `old`, its recorded items; fd
// is then -1 for a leaf), whose path (relative, empty for the root) fills path[0..len), and
// whose stamp st was taken before it is read. `inside`: a directory on the way is a DIRNAME.
// Takes fd.
static void visit(const struct wanted *w, int fd, const struct stat *st, char *path, size_t len, int depth, int inside,
                  const struct node *old) {
  put_node(st);
  if (unchanged(old, st)) {
    for (size_t i = 0; i < old->nitems; i++) {
      const struct item *it = &old->items[i];
      char name[NAME_MAX + 1];
      memcpy(name, it->name, it->len);
      name[it->len] = '\0';
      size_t n = extend(path, len, name, it->len);
      if (it->kind == 'f' || it->kind == 'l') {
        emit(it->kind, path, n);
        put_item(it->kind, name, it->len);
      } else if (depth < w->depth) subdir(w, fd, name, path, n, depth + 1, inside || among(name, w->dirs, w->ndirs), it->child);
    }
    if (fd >= 0) close(fd);
  } else {
    DIR *d = fdopendir(fd);
    if (!d) die("srt-init: --list-protected: %s: %s", len ? path : ".", strerror(errno));
    struct dirent *e;
    for (errno = 0; (e = readdir(d)); errno = 0) {
      const char *name = e->d_name;
      if (name[0] == '.' && (name[1] == '\0' || (name[1] == '.' && name[2] == '\0'))) continue;
      size_t n = strlen(name);
      size_t at = extend(path, len, name, n);
      unsigned char type = e->d_type;
      if (type == DT_UNKNOWN) {
        struct stat est;
        if (fstatat(dirfd(d), name, &est, AT_SYMLINK_NOFOLLOW) != 0) {
          if (errno != ENOENT) die("srt-init: --list-protected: %s: %s", path, strerror(errno));
          continue; // removed meanwhile
        }
        type = S_ISDIR(est.st_mode) ? DT_DIR : S_ISLNK(est.st_mode) ? DT_LNK : S_ISREG(est.st_mode) ? DT_REG : DT_UNKNOWN;
      }
      if (type == DT_LNK || (type == DT_REG && (inside || file_wanted(w, name)))) {
        char kind = type == DT_LNK ? 'l' : 'f';
        emit(kind, path, at);
        put_item(kind, name, n);
      } else if (type == DT_DIR && depth < w->depth)
        subdir(w, dirfd(d), name, path, at, depth + 1, inside || among(name, w->dirs, w->ndirs), recorded_sub(old, name));
    }
    if (errno) die("srt-init: --list-protected: reading %s: %s", len ? path : ".", strerror(errno));
    closedir(d);
  }
  put("x", 1);
  path[len] = '\0';
}

// The last walk's record, checked whole before any of it is used: a record cut short, of
// another format, walk or root, failing its digest or malformed in any way is dropped (the tree
// is read anew).
struct reader {
  const unsigned char *p, *end;
};

static int take(struct reader *r, void *out, size_t n) {
  if ((size_t)(r->end - r->p) < n) return 0;
  memcpy(out, r->p, n);
  r->p += n;
  return 1;
}

static struct node *parse_node(struct reader *r, int level) {
  char tag;
  if (level > MAX_DEPTH + 1 || !take(r, &tag, 1) || tag != 'D') return NULL;
  struct node *o = calloc(1, sizeof *o);
  if (!o) die_errno("calloc");
  unsigned char trusted;
  if (!take(r, &o->dev, sizeof o->dev) || !take(r, &o->ino, sizeof o->ino) || !take(r, &o->sec, sizeof o->sec) ||
      !take(r, &o->nsec, sizeof o->nsec) || !take(r, &trusted, 1) || trusted > 1)
    return NULL;
  o->trusted = trusted;
  o->leaf = 1;
  size_t cap = 0;
  for (;;) {
    char kind;
    if (!take(r, &kind, 1)) return NULL;
    if (kind == 'x') break;
    struct item it = {.kind = kind};
    if ((kind != 'f' && kind != 'l' && kind != 'u' && kind != 's') || !take(r, &it.len, sizeof it.len) || it.len == 0 ||
        it.len > NAME_MAX || (size_t)(r->end - r->p) < it.len)
      return NULL;
    it.name = (const char *)r->p;
    r->p += it.len;
    if (memchr(it.name, '/', it.len) || memchr(it.name, '\0', it.len) || (it.name[0] == '.' && (it.len == 1 || (it.len == 2 && it.name[1] == '.'))))
      return NULL;
    if (kind == 's' && !(it.child = parse_node(r, level + 1))) return NULL;
    if (kind == 's' || kind == 'u') o->leaf = 0;
    if (o->nitems == cap) {
      cap = cap ? 2 * cap : 8;
      o->items = realloc(o->items, cap * sizeof *o->items);
      if (!o->items) die_errno("realloc");
    }
    o->items[o->nitems++] = it;
    if (kind == 's') o->nsubs++;
  }
  if (o->nsubs) {
    o->subs = malloc(o->nsubs * sizeof *o->subs);
    if (!o->subs) die_errno("malloc");
    for (size_t i = 0, k = 0; i < o->nitems; i++)
      if (o->items[i].kind == 's') o->subs[k++] = &o->items[i];
    qsort(o->subs, o->nsubs, sizeof *o->subs, by_name);
  }
  return o;
}

// The record's header: the walk it is of (every argument) and the root's device and inode.
static void put_header(int argc, char **argv, const struct stat *root) {
  uint64_t dev = root->st_dev, ino = root->st_ino;
  put(CACHE_MAGIC, sizeof CACHE_MAGIC);
  for (int i = 0; i < argc; i++) put(argv[i], strlen(argv[i]) + 1);
  put("", 1);
  put(&dev, sizeof dev);
  put(&ino, sizeof ino);
}

static struct node *read_record(int argc, char **argv, const struct stat *root) {
  size_t cap = 1 << 16, len = 0;
  unsigned char *buf = malloc(cap);
  if (!buf) die_errno("malloc");
  for (;;) {
    if (len == cap) {
      if (cap >= MAX_CACHE) return NULL;
      cap *= 2;
      buf = realloc(buf, cap);
      if (!buf) die_errno("realloc");
    }
    ssize_t n = read(0, buf + len, cap - len);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return NULL;
    if (n == 0) break;
    len += (size_t)n;
  }
  struct reader r = {buf, buf + len};
  if (len < sizeof CACHE_MAGIC || memcmp(buf, CACHE_MAGIC, sizeof CACHE_MAGIC) != 0) return NULL;
  r.p += sizeof CACHE_MAGIC;
  for (int i = 0; i < argc; i++) {
    size_t n = strlen(argv[i]) + 1;
    if ((size_t)(r.end - r.p) < n || memcmp(r.p, argv[i], n) != 0) return NULL;
    r.p += n;
  }
  char sep;
  uint64_t dev, ino;
  if (!take(&r, &sep, 1) || sep || !take(&r, &dev, sizeof dev) || !take(&r, &ino, sizeof ino) || dev != (uint64_t)root->st_dev ||
      ino != (uint64_t)root->st_ino)
    return NULL;
  struct node *top = parse_node(&r, 0);
  char tail;
  if (!top || !take(&r, &tail, 1) || tail != 'E') return NULL;
  uint64_t sum, body = digest(DIGEST_SEED, buf, (size_t)(r.p - buf));
  if (!take(&r, &sum, sizeof sum) || sum != body || r.p != r.end) return NULL;
  last = same = buf;
  last_end = r.end;
  return top;
}

// File systems whose directories' ctimes this machine's kernel sets on every change of their names
// (no remote or FUSE server reporting its own). Not overlayfs: a directory in both layers shows
// the upper one's ctime, and names written into the lower one directly appear without moving it.
static int keeps_ctime(int fd) {
  struct statfs fs;
  if (fstatfs(fd, &fs) != 0) return 0;
  switch ((unsigned long)fs.f_type) {
  case EXT4_SUPER_MAGIC: case XFS_SUPER_MAGIC: case BTRFS_SUPER_MAGIC: case TMPFS_MAGIC: case F2FS_SUPER_MAGIC:
  case 0x2fc12fc1 /* zfs */: case 0xca451a4e /* bcachefs */: return 1;
  default: return 0;
  }
}

int list_protected(int argc, char **argv) {
  if (argc < 1) die("srt-init: --list-protected DEPTH [-f NAME]... [-s SUFFIX]... [-d DIRNAME]... [--cache]");
  int cached = strcmp(argv[argc - 1], "--cache") == 0;
  if (cached) argc--;
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
  struct timespec now;
  if (clock_gettime(CLOCK_REALTIME, &now) != 0) die_errno("clock_gettime");
  trust_before = now.tv_sec - TRUST_MARGIN_S;
  static char cache_buf[1 << 16];
  if (cached && (cache = fdopen(3, "w"))) setvbuf(cache, cache_buf, _IOFBF, sizeof cache_buf);
  int fd = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) die_errno("--list-protected: open .");
  struct stat root;
  if (fstat(fd, &root) != 0) die_errno("--list-protected: stat .");
  root_dev = root.st_dev;
  local_fs = keeps_ctime(fd);
  const struct node *old = cached ? read_record(argc, argv, &root) : NULL;
  put_header(argc, argv, &root);
  visit(&w, fd, &root, path, 0, 1, 0, old);
  if (cache) {
    put("E", 1);
    uint64_t sum = written;
    put(&sum, sizeof sum);
    if (same && same == last_end) emit('K', "", 0);
    else {
      if (same) diverge();
      if (fflush(cache) == 0 && !cache_failed && !ferror(cache)) emit('C', "", 0);
    }
  }
  if (fflush(stdout) != 0 || ferror(stdout)) die_errno("--list-protected: write");
  return 0;
}
