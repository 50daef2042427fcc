/* A POSIX ERE engine for the tests: regcomp(REG_EXTENDED | REG_NOSUB) and regexec from the C
 * library, exactly the POSIX interface (no REG_NEWLINE: a newline is an ordinary character, as in
 * a path). Input on stdin, NUL-separated records: the number of regexes N, N regexes, then the
 * subjects. Output: one line per regex, one '1' or '0' per subject. Exit 2 with the failing
 * regex's index and regerror's message when one does not compile. The locale comes from the
 * environment (LC_ALL=C.UTF-8: characters; LC_ALL=C: bytes). */
#include <locale.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(void) {
  setlocale(LC_ALL, "");
  size_t cap = 1 << 16, len = 0, got;
  char *buf = malloc(cap);
  while ((got = fread(buf + len, 1, cap - len, stdin)) > 0) {
    len += got;
    if (len == cap) buf = realloc(buf, cap *= 2);
  }
  if (len == 0 || buf[len - 1] != '\0') buf[len++] = '\0';
  size_t at = 0;
  long n = strtol(buf, NULL, 10);
  at += strlen(buf) + 1;
  regex_t *res = calloc(n > 0 ? n : 1, sizeof *res);
  for (long k = 0; k < n; k++) {
    if (at >= len) { fprintf(stderr, "missing regex %ld\n", k); return 2; }
    int rc = regcomp(&res[k], buf + at, REG_EXTENDED | REG_NOSUB);
    if (rc != 0) {
      char msg[256];
      regerror(rc, &res[k], msg, sizeof msg);
      fprintf(stderr, "%ld %s\n", k, msg);
      return 2;
    }
    at += strlen(buf + at) + 1;
  }
  for (long k = 0; k < n; k++) {
    for (size_t i = at; i < len; i += strlen(buf + i) + 1) putchar(regexec(&res[k], buf + i, 0, NULL, 0) == 0 ? '1' : '0');
    putchar('\n');
  }
  return 0;
}
