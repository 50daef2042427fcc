/* The read gate's glob matcher (init/glob.c) for the tests. Input on stdin, NUL-terminated
 * fields, one query each: `m` GLOB PATH prints glob_match_prefix (the length of the shortest
 * matching prefix that ends a component, 0 for none); `x` GLOB FROM TO prints glob_may_expose.
 * One line per query; a glob that does not compile prints `invalid`. */
#include "../../../init/helper.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

void die(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  exit(2);
}

int main(void) {
  size_t cap = 1 << 16, len = 0, got;
  char *buf = malloc(cap);
  while ((got = fread(buf + len, 1, cap - len, stdin)) > 0) {
    len += got;
    if (len == cap) buf = realloc(buf, cap *= 2);
  }
  for (size_t at = 0; at < len;) {
    const char *f[4];
    int nf = buf[at] == 'x' ? 4 : 3;
    for (int i = 0; i < nf; i++) {
      if (at >= len) die("a query is cut short\n");
      f[i] = buf + at;
      at += strlen(buf + at) + 1;
    }
    struct glob *g = glob_compile(f[1]);
    if (!g) puts("invalid");
    else if (f[0][0] == 'm') printf("%zu\n", glob_match_prefix(g, f[2]));
    else printf("%d\n", glob_may_expose(g, f[2], f[3]));
  }
  return 0;
}
