/*===- CApiExample.c - The runtime's C API from C ------------------------===*
 *
 * kiln-c-api-example MODEL.kiln: loads the test model (TestModel.c), prints
 * its tensors, runs it with runtime-allocated outputs and prints them, then
 * shows a wrong-shape error. Compiled as C99 with -pedantic, it keeps
 * runtime.h and artifact_format.h valid C (runtime-c-api.test).
 *
 *===----------------------------------------------------------------------===*/
#include "kiln/runtime.h"

#include <stdio.h>

static void printInfo(const char *what, const kiln_tensor_info *info) {
  printf("%s %s %s [", what, info->name, kiln_dtype_name(info->dtype));
  for (int32_t d = 0; d < info->rank; ++d)
    printf(d ? ", %lld" : "%lld", (long long)info->dims[d]);
  printf("]\n");
}

int main(int argc, char **argv) {
  kiln_model *model = NULL;
  kiln_session *session = NULL;
  if (argc != 2) {
    fprintf(stderr, "usage: kiln-c-api-example MODEL.kiln\n");
    return 2;
  }
  if (kiln_model_load(argv[1], &model) != KILN_OK) {
    fprintf(stderr, "error: %s\n", kiln_last_error());
    return 2;
  }
  for (size_t i = 0; i < kiln_model_num_inputs(model); ++i) {
    kiln_tensor_info info;
    kiln_model_input_info(model, i, &info);
    printInfo("input", &info);
  }
  for (size_t i = 0; i < kiln_model_num_outputs(model); ++i) {
    kiln_tensor_info info;
    kiln_model_output_info(model, i, &info);
    printInfo("output", &info);
  }
  kiln_session_options options;
  kiln_session_options_init(&options);
  options.num_threads = 1;
  if (kiln_session_create(model, &options, &session) != KILN_OK) {
    fprintf(stderr, "error: %s\n", kiln_last_error());
    return 2;
  }
  float x[32];
  int32_t s[8];
  for (int i = 0; i < 32; ++i)
    x[i] = (float)i * 0.5f;
  for (int j = 0; j < 8; ++j)
    s[j] = j;
  const int64_t xDims[] = {4, 8}, sDims[] = {8};
  kiln_tensor inputs[2] = {{x, KILN_DTYPE_FLOAT32, 2, xDims},
                           {s, KILN_DTYPE_INT32, 1, sDims}};
  kiln_tensor outputs[2] = {{NULL, 0, 0, NULL}, {NULL, 0, 0, NULL}};
  if (kiln_session_run(session, inputs, 2, outputs, 2) != KILN_OK) {
    fprintf(stderr, "error: %s\n", kiln_last_error());
    return 2;
  }
  const float *y = (const float *)outputs[0].data;
  printf("y[0..3] = %g %g %g %g\n", y[0], y[1], y[2], y[3]);
  printf("z = %lld\n", (long long)*(const int64_t *)outputs[1].data);
  kiln_tensor_release(&outputs[0]);
  kiln_tensor_release(&outputs[1]);

  const int64_t wrong[] = {8, 4};
  inputs[0].dims = wrong;
  kiln_status st = kiln_session_run(session, inputs, 2, outputs, 2);
  printf("%s: %s\n", kiln_status_string(st), kiln_last_error());

  kiln_session_stats stats;
  kiln_session_get_stats(session, &stats);
  printf("runs %llu, current bytes %llu\n", (unsigned long long)stats.num_runs,
         (unsigned long long)stats.current_bytes);
  kiln_session_free(session);
  kiln_model_free(model);
  return 0;
}
