/*===- CompilerCApiTest.c - The compiler's C API (kiln-c/Compiler.h) ------===//
 *
 * A C program against libkiln-compiler.so, as an embedder would write it:
 * flags, parse, run, output, diagnostics, two invocations on two threads,
 * and the artifact it writes loaded by the runtime's C API. Exits nonzero
 * with a message on the first check that fails.
 *
 *===----------------------------------------------------------------------===*/
#include "kiln-c/Compiler.h"
#include "kiln/runtime.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int failures = 0;
#define CHECK(cond, ...)                                                       \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);          \
      fprintf(stderr, __VA_ARGS__);                                            \
      fprintf(stderr, "\n");                                                   \
      ++failures;                                                              \
    }                                                                          \
  } while (0)

static char model[4096];

static int contains(const void *data, size_t size, const char *needle) {
  size_t n = strlen(needle);
  const char *p = (const char *)data;
  for (size_t i = 0; i + n <= size; ++i)
    if (memcmp(p + i, needle, n) == 0)
      return 1;
  return 0;
}

struct Job {
  kiln_compiler_session_t *session;
  const char *stage;
  void *bytes;
  size_t size;
  int status;
};

static void *compileJob(void *arg) {
  struct Job *job = (struct Job *)arg;
  kiln_compiler_invocation_t *inv = kiln_compiler_invocation_create(job->session);
  job->status = kiln_compiler_invocation_parse_file(inv, model) ||
                kiln_compiler_invocation_run(inv, job->stage);
  const void *data = NULL;
  if (!job->status &&
      !kiln_compiler_invocation_output(inv, &data, &job->size)) {
    job->bytes = malloc(job->size);
    memcpy(job->bytes, data, job->size);
  }
  kiln_compiler_invocation_destroy(inv);
  return NULL;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s <kiln source dir>\n", argv[0]);
    return 2;
  }
  snprintf(model, sizeof model,
           "%s/test/Fuzz/corpus/onnx-import/conv_with_strides_padding.onnx",
           argv[1]);

  CHECK(strlen(kiln_compiler_version()) > 0, "no version");
  size_t numFlags = kiln_compiler_flag_count();
  int sawPrecision = 0;
  for (size_t i = 0; i < numFlags; ++i)
    if (strcmp(kiln_compiler_flag_name(i), "precision") == 0)
      sawPrecision = strcmp(kiln_compiler_flag_kind(i), "value") == 0;
  CHECK(numFlags > 30 && sawPrecision, "%zu flags, precision %d", numFlags,
        sawPrecision);
  CHECK(kiln_compiler_flag_name(numFlags) == NULL, "past the end");

  kiln_compiler_session_t *session = kiln_compiler_session_create();
  const char *bad[] = {"--no-such-flag"};
  CHECK(kiln_compiler_session_set_flags(session, 1, bad) != 0, "bad flag taken");
  CHECK(strstr(kiln_compiler_session_error(session), "--no-such-flag"),
        "error: %s", kiln_compiler_session_error(session));
  const char *flags[] = {"-O3", "--cpu", "x86-64-v3"};
  CHECK(kiln_compiler_session_set_flags(session, 3, flags) == 0, "%s",
        kiln_compiler_session_error(session));

  /* The graph stage: -O3 makes the convolution channels-last. */
  kiln_compiler_invocation_t *inv = kiln_compiler_invocation_create(session);
  CHECK(kiln_compiler_invocation_parse_file(inv, model) == 0, "%s",
        kiln_compiler_invocation_diagnostics_text(inv));
  CHECK(kiln_compiler_invocation_run(inv, "graph") == 0, "%s",
        kiln_compiler_invocation_diagnostics_text(inv));
  const void *data = NULL;
  size_t size = 0;
  CHECK(kiln_compiler_invocation_output(inv, &data, &size) == 0 && size > 0,
        "no output");
  CHECK(contains(data, size, "func.func @main") && contains(data, size, "nhwc"),
        "graph IR: %.*s", (int)size, (const char *)data);
  CHECK(strstr(kiln_compiler_invocation_pipeline(inv, 0), "kiln-"),
        "pipeline: %s", kiln_compiler_invocation_pipeline(inv, 0));

  /* An unknown stage is a diagnostic, not a crash. */
  CHECK(kiln_compiler_invocation_run(inv, "bitcode") != 0, "stage taken");
  CHECK(strstr(kiln_compiler_invocation_diagnostics_text(inv), "unknown stage"),
        "%s", kiln_compiler_invocation_diagnostics_text(inv));
  kiln_compiler_invocation_destroy(inv);

  /* A missing file: an error diagnostic that names it. */
  inv = kiln_compiler_invocation_create(session);
  CHECK(kiln_compiler_invocation_parse_file(inv, "/nonexistent.onnx") != 0,
        "missing file parsed");
  kiln_compiler_diagnostic_t d;
  CHECK(kiln_compiler_invocation_diagnostic_count(inv) >= 1 &&
            kiln_compiler_invocation_diagnostic(inv, 0, &d) == 0 &&
            d.severity == KILN_COMPILER_ERROR &&
            strstr(d.text, "/nonexistent.onnx"),
        "diagnostic");
  CHECK(kiln_compiler_invocation_diagnostic(inv, 99, &d) != 0, "index 99");
  kiln_compiler_invocation_destroy(inv);

  /* Artifacts on two threads at once, each as alone. */
  struct Job alone = {session, "artifact", NULL, 0, 1};
  compileJob(&alone);
  CHECK(alone.status == 0 && alone.size > 64 &&
            memcmp(alone.bytes, "KILNART", 7) == 0,
        "artifact status %d size %zu", alone.status, alone.size);
  struct Job jobs[2] = {{session, "artifact", NULL, 0, 1},
                        {session, "artifact", NULL, 0, 1}};
  pthread_t threads[2];
  for (int i = 0; i < 2; ++i)
    pthread_create(&threads[i], NULL, compileJob, &jobs[i]);
  for (int i = 0; i < 2; ++i) {
    pthread_join(threads[i], NULL);
    CHECK(jobs[i].status == 0 && jobs[i].size == alone.size &&
              memcmp(jobs[i].bytes, alone.bytes, alone.size) == 0,
          "thread %d: artifact differs", i);
    free(jobs[i].bytes);
  }

  /* The runtime loads what the C API wrote. */
  char path[] = "/tmp/kiln-capi-XXXXXX";
  int fd = mkstemp(path);
  CHECK(fd >= 0, "mkstemp");
  if (fd >= 0) {
    CHECK(write(fd, alone.bytes, alone.size) == (ssize_t)alone.size, "write");
    close(fd);
    kiln_model *m = NULL;
    CHECK(kiln_model_load(path, &m) == KILN_OK, "load: %s", kiln_last_error());
    if (m) {
      kiln_tensor_info info;
      CHECK(kiln_model_num_inputs(m) == 2 &&
                kiln_model_input_info(m, 0, &info) == KILN_OK &&
                info.rank == 4,
            "inputs");
      kiln_model_free(m);
    }
    unlink(path);
  }
  free(alone.bytes);
  kiln_compiler_session_destroy(session);
  if (failures) {
    fprintf(stderr, "%d checks failed\n", failures);
    return 1;
  }
  printf("PASS: kiln-c/Compiler.h\n");
  return 0;
}
