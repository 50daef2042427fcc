/* Drives the supervisor's pure matcher (init/rules.c) and the read gate's (init/readgate.c, with
 * init/glob.c) for test/unit/init-rules.test.ts: `rules-check RULES < QUERIES`, RULES a rules
 * file as srt writes it.
 * One query per line, one answer (0 or 1) per line:
 *   p EP PATH   protected_path(PATH, exists E, partial P)
 *   w EP PATH   the same, answering the rule: its kind and what it names (`N.vscode`), or 0
 *   h P PATH    gate_hidden(PATH, partial P, no stat)
 *   v FROM\tTO  gate_moves(FROM, TO)
 *   m LEAF      is_marker(LEAF)
 *   g PATH      mark_made(lstat(PATH)): the run made this (answers 1 when it exists)
 *   f PATH      forget_made(lstat(PATH)): it is gone (answers 1 when it exists) */
#include "../../../init/supervisor.h"

#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
  if (argc != 2) die("usage: rules-check RULES < QUERIES");
  supervisor_load_rules(argv[1]);
  char line[LONG_PATH];
  while (fgets(line, sizeof line, stdin)) {
    line[strcspn(line, "\n")] = '\0';
    int answer;
    struct stat st;
    struct verdict v;
    switch (line[0]) {
    case 'p': answer = protected_path(line + 5, line[2] == '1', line[3] == '1', NULL); break;
    case 'w':
      if (protected_path(line + 5, line[2] == '1', line[3] == '1', &v)) printf("%c%s\n", v.kind, v.what);
      else printf("0\n");
      continue;
    case 'h': answer = gate_hidden(line + 4, line[2] == '1', NULL); break;
    case 'v': {
      char *to = strchr(line + 2, '\t');
      if (!to) die("rules-check: bad query %s", line);
      *to++ = '\0';
      answer = gate_moves(line + 2, to);
      break;
    }
    case 'm': answer = is_marker(line + 2); break;
    case 'g':
      answer = lstat(line + 2, &st) == 0;
      if (answer) mark_made(&st);
      break;
    case 'f':
      answer = lstat(line + 2, &st) == 0;
      if (answer) forget_made(&st);
      break;
    default: die("rules-check: bad query %s", line);
    }
    printf("%d\n", answer);
  }
  return 0;
}
