/*
 * TEST TOOL, not systemd: applies what systemd 252 applies for a unit's
 * SystemCallFilter= (an allow-list; any other call kills the process, or
 * fails with EPERM), and the seccomp form of MemoryDenyWriteExecute=yes
 * (mmap with PROT_WRITE|PROT_EXEC, and mprotect/pkey_mprotect adding
 * PROT_EXEC, fail with EPERM), and RestrictAddressFamilies= (socket() for
 * any other family fails with EAFNOSUPPORT), then executes the command.
 *
 * Usage: seccomp-run ALLOWLIST kill|eperm mdwe|nomdwe FAMILIES|- COMMAND [ARG...]
 * ALLOWLIST holds one system call name a line; FAMILIES is a comma-separated
 * list of address family numbers (1 AF_UNIX, 2 AF_INET, 10 AF_INET6). Links against libseccomp.so.2
 * (a dependency of systemd itself) without its headers.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <unistd.h>

typedef void *scmp_filter_ctx;
struct scmp_arg_cmp { unsigned int arg; int op; uint64_t datum_a; uint64_t datum_b; };
extern scmp_filter_ctx seccomp_init(uint32_t def_action);
extern int seccomp_rule_add(scmp_filter_ctx ctx, uint32_t action, int syscall, unsigned int arg_cnt, ...);
extern int seccomp_syscall_resolve_name(const char *name);
extern int seccomp_load(scmp_filter_ctx ctx);

#define ACT_ALLOW 0x7fff0000U
#define ACT_KILL_PROCESS 0x80000000U
#define ACT_ERRNO(x) (0x00050000U | ((x) & 0xffff))
#define CMP_EQ 4
#define CMP_GT 6
#define CMP_MASKED_EQ 7
/* Above every family Linux defines (AF_MAX is 46 in 6.x). */
#define FAMILY_LIMIT 64

int main(int argc, char **argv) {
  if (argc < 6) {
    fprintf(stderr, "usage: seccomp-run ALLOWLIST kill|eperm mdwe|nomdwe FAMILIES|- COMMAND [ARG...]\n");
    return 2;
  }
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) { perror("no_new_privs"); return 3; }
  /* MemoryDenyWriteExecute first: loading a filter is itself a system call the allow-list may refuse. */
  if (strcmp(argv[3], "mdwe") == 0) {
    scmp_filter_ctx mdwe = seccomp_init(ACT_ALLOW);
    struct scmp_arg_cmp write_exec = {2, CMP_MASKED_EQ, PROT_WRITE | PROT_EXEC, PROT_WRITE | PROT_EXEC};
    struct scmp_arg_cmp exec = {2, CMP_MASKED_EQ, PROT_EXEC, PROT_EXEC};
    if (seccomp_rule_add(mdwe, ACT_ERRNO(EPERM), seccomp_syscall_resolve_name("mmap"), 1, write_exec) != 0 ||
        seccomp_rule_add(mdwe, ACT_ERRNO(EPERM), seccomp_syscall_resolve_name("mprotect"), 1, exec) != 0 ||
        seccomp_rule_add(mdwe, ACT_ERRNO(EPERM), seccomp_syscall_resolve_name("pkey_mprotect"), 1, exec) != 0 ||
        seccomp_load(mdwe) != 0) {
      fprintf(stderr, "seccomp-run: cannot load the MemoryDenyWriteExecute filter\n");
      return 3;
    }
  }
  /* RestrictAddressFamilies=, as systemd builds it: every family not listed, and every one above, refused. */
  if (strcmp(argv[4], "-") != 0) {
    int allowed_family[FAMILY_LIMIT] = {0};
    char families[256];
    snprintf(families, sizeof families, "%s", argv[4]);
    for (char *item = strtok(families, ","); item != NULL; item = strtok(NULL, ",")) {
      int family = atoi(item);
      if (family > 0 && family < FAMILY_LIMIT) allowed_family[family] = 1;
    }
    scmp_filter_ctx af = seccomp_init(ACT_ALLOW);
    int socket_nr = seccomp_syscall_resolve_name("socket");
    struct scmp_arg_cmp above = {0, CMP_GT, FAMILY_LIMIT - 1, 0};
    int failed = seccomp_rule_add(af, ACT_ERRNO(EAFNOSUPPORT), socket_nr, 1, above);
    for (int family = 0; family < FAMILY_LIMIT; family++) {
      if (allowed_family[family]) continue;
      struct scmp_arg_cmp is = {0, CMP_EQ, (uint64_t)family, 0};
      failed |= seccomp_rule_add(af, ACT_ERRNO(EAFNOSUPPORT), socket_nr, 1, is);
    }
    if (failed != 0 || seccomp_load(af) != 0) {
      fprintf(stderr, "seccomp-run: cannot load the address family filter\n");
      return 3;
    }
  }
  scmp_filter_ctx filter = seccomp_init(strcmp(argv[2], "kill") == 0 ? ACT_KILL_PROCESS : ACT_ERRNO(EPERM));
  FILE *list = fopen(argv[1], "r");
  if (list == NULL) { perror(argv[1]); return 3; }
  char line[128];
  int allowed = 0;
  while (fgets(line, sizeof line, list) != NULL) {
    line[strcspn(line, "\n")] = '\0';
    int nr = seccomp_syscall_resolve_name(line);
    if (nr >= 0 && seccomp_rule_add(filter, ACT_ALLOW, nr, 0) == 0) allowed++;
  }
  fclose(list);
  if (seccomp_load(filter) != 0) { fprintf(stderr, "seccomp-run: cannot load the allow-list\n"); return 3; }
  fprintf(stderr, "seccomp-run: %d system calls allowed, others %s, %s, families %s\n", allowed, argv[2], argv[3],
          argv[4]);
  execv(argv[5], argv + 5);
  perror("execv");
  return 127;
}
