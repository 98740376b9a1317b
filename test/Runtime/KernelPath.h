/*===- KernelPath.h - Forcing one code path of an ABI kernel in a test ----===*
 *
 * A kernel test names the path it checks on its command line (e.g.
 * `kiln-test-qgemm vnni`). kilnTestForcePath caps $KILN_ISA at that path's
 * instruction set (runtime/abi/kiln_abi_isa.h) before the first kernel call;
 * after the run, kilnTestReportPath compares the path the kernel really took
 * with the one asked for. The cap only lowers the choice, so a difference
 * means the CPU (or the OS) lacks the path: the test prints SKIP and exits
 * with KILN_TEST_SKIP, which ctest reports as skipped (SKIP_RETURN_CODE),
 * never as passed.
 *
 *===----------------------------------------------------------------------===*/
#ifndef KILN_TEST_KERNEL_PATH_H
#define KILN_TEST_KERNEL_PATH_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KILN_TEST_SKIP 77

struct KilnTestPath {
  const char *name; /* as the test's argument and its report say */
  const char *isa;  /* the $KILN_ISA cap that allows it and nothing above */
};

/* The path named by argv[1] among `paths`; exits 2 on a bad argument. */
static const struct KilnTestPath *
kilnTestForcePath(int argc, char **argv, const struct KilnTestPath *paths,
                  int count) {
  for (int i = 0; argc == 2 && i < count; ++i)
    if (!strcmp(argv[1], paths[i].name)) {
      setenv("KILN_ISA", paths[i].isa, 1);
      unsetenv("KILN_NO_AMX");
      unsetenv("KILN_QGEMM_PORTABLE");
      return &paths[i];
    }
  fprintf(stderr, "usage: %s PATH, PATH one of:", argv[0]);
  for (int i = 0; i < count; ++i)
    fprintf(stderr, " %s", paths[i].name);
  fprintf(stderr, "\n");
  exit(2);
}

/* The exit status: SKIP when the kernel took `ran` rather than the path
 * asked for, else pass/fail from the mismatch count. */
static int kilnTestReportPath(const char *kernel,
                              const struct KilnTestPath *asked,
                              const char *ran, int mismatches) {
  if (strcmp(asked->name, ran) != 0) {
    printf("SKIP %s %s: this CPU or OS does not offer it (the kernel took "
           "the %s path)\n",
           kernel, asked->name, ran);
    return KILN_TEST_SKIP;
  }
  printf("%s %s path: %d mismatches\n", kernel, ran, mismatches);
  return mismatches != 0;
}

#endif /* KILN_TEST_KERNEL_PATH_H */
