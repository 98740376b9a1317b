/*===- ThreadCheck.c - One session of a compiled model on many threads ----===*
 *
 * kiln-thread-check MODEL.kiln [WORKERS [RUNS [THREADS]]]
 *
 * The runtime's claim (docs/runtime.md): one session may run on several
 * threads at once. This checks it on a kiln-compiled artifact: random
 * inputs (a fixed generator: floats in [-1, 1), integers in [0, 10), bools
 * 0/1), one run on the calling thread as the reference, then WORKERS
 * threads (default 8) each running RUNS times (default 1000) on the same
 * session, each into its own output buffers, every output compared byte for
 * byte with the reference. THREADS is the session's OpenMP thread count
 * (default 1). Prints the mismatches and a summary; exit 1 on any, 2 on an
 * error. Built against the runtime's C API only.
 *
 *===----------------------------------------------------------------------===*/
#include "kiln/artifact_format.h"
#include "kiln/runtime.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct Run {
  kiln_session *session;
  kiln_tensor *inputs;
  size_t numInputs, numOutputs;
  kiln_tensor_info *outputInfo;
  void **reference;
  size_t *outputBytes;
  long runs;
  long mismatches, errors;
};

static size_t elementsOf(const kiln_tensor_info *info) {
  size_t n = 1;
  for (int32_t d = 0; d < info->rank; ++d)
    n *= (size_t)info->dims[d];
  return n;
}

static uint64_t nextRandom(uint64_t *state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static void fillRandom(void *data, const kiln_tensor_info *info,
                       uint64_t seed) {
  size_t n = elementsOf(info), size = kiln_dtype_size(info->dtype);
  for (size_t i = 0; i < n; ++i) {
    uint64_t r = nextRandom(&seed);
    char *p = (char *)data + i * size;
    if (info->dtype == KILN_DTYPE_FLOAT32) {
      float v = (float)((double)(r >> 11) / 9007199254740992.0 * 2.0 - 1.0);
      memcpy(p, &v, 4);
    } else if (info->dtype == KILN_DTYPE_FLOAT64) {
      double v = (double)(r >> 11) / 9007199254740992.0 * 2.0 - 1.0;
      memcpy(p, &v, 8);
    } else if (info->dtype == KILN_DTYPE_BOOL) {
      *p = (char)(r & 1);
    } else if (info->dtype == KILN_DTYPE_FLOAT16 ||
               info->dtype == KILN_DTYPE_BFLOAT16) {
      /* Small normal values of either type: exponent bits near one. */
      uint16_t v = info->dtype == KILN_DTYPE_FLOAT16
                       ? (uint16_t)(0x3800 | (r & 0x3ff) | ((r >> 16) & 0x8000))
                       : (uint16_t)(0x3f00 | (r & 0x7f) | ((r >> 16) & 0x8000));
      memcpy(p, &v, 2);
    } else {
      memset(p, 0, size);
      *p = (char)(r % 10); /* little-endian integers in [0, 10) */
    }
  }
}

static int runOnce(struct Run *run, void **outputs) {
  kiln_tensor out[64];
  for (size_t i = 0; i < run->numOutputs; ++i) {
    out[i].data = outputs[i];
    out[i].dtype = run->outputInfo[i].dtype;
    out[i].rank = run->outputInfo[i].rank;
    out[i].dims = run->outputInfo[i].dims;
  }
  return kiln_session_run(run->session, run->inputs, run->numInputs, out,
                          run->numOutputs) == KILN_OK;
}

static void *worker(void *arg) {
  struct Run *run = (struct Run *)arg;
  void *outputs[64];
  for (size_t i = 0; i < run->numOutputs; ++i)
    outputs[i] = aligned_alloc(64, (run->outputBytes[i] + 63) / 64 * 64);
  for (long r = 0; r < run->runs; ++r) {
    for (size_t i = 0; i < run->numOutputs; ++i)
      memset(outputs[i], 0xA5, run->outputBytes[i]);
    if (!runOnce(run, outputs)) {
      if (run->errors++ < 3)
        fprintf(stderr, "run failed: %s\n", kiln_last_error());
      continue;
    }
    for (size_t i = 0; i < run->numOutputs; ++i)
      if (memcmp(outputs[i], run->reference[i], run->outputBytes[i]) != 0)
        ++run->mismatches;
  }
  for (size_t i = 0; i < run->numOutputs; ++i)
    free(outputs[i]);
  return NULL;
}

int main(int argc, char **argv) {
  if (argc < 2 || argc > 5) {
    fprintf(stderr, "usage: kiln-thread-check MODEL.kiln [WORKERS [RUNS "
                    "[THREADS]]]\n");
    return 2;
  }
  int workers = argc > 2 ? atoi(argv[2]) : 8;
  long runs = argc > 3 ? atol(argv[3]) : 1000;
  int threads = argc > 4 ? atoi(argv[4]) : 1;
  kiln_model *model = NULL;
  kiln_session *session = NULL;
  if (kiln_model_load(argv[1], &model) != KILN_OK) {
    fprintf(stderr, "error: %s\n", kiln_last_error());
    return 2;
  }
  kiln_session_options options;
  kiln_session_options_init(&options);
  options.num_threads = threads;
  if (kiln_session_create(model, &options, &session) != KILN_OK) {
    fprintf(stderr, "error: %s\n", kiln_last_error());
    return 2;
  }
  struct Run base;
  memset(&base, 0, sizeof(base));
  base.session = session;
  base.numInputs = kiln_model_num_inputs(model);
  base.numOutputs = kiln_model_num_outputs(model);
  if (base.numInputs > 64 || base.numOutputs > 64) {
    fprintf(stderr, "error: more than 64 inputs or outputs\n");
    return 2;
  }
  base.inputs = calloc(base.numInputs, sizeof(kiln_tensor));
  for (size_t i = 0; i < base.numInputs; ++i) {
    kiln_tensor_info info;
    kiln_model_input_info(model, i, &info);
    size_t bytes = elementsOf(&info) * kiln_dtype_size(info.dtype);
    base.inputs[i].data = aligned_alloc(64, (bytes + 63) / 64 * 64 + 64);
    fillRandom(base.inputs[i].data, &info, 1000 + i);
    base.inputs[i].dtype = info.dtype;
    base.inputs[i].rank = info.rank;
    base.inputs[i].dims = info.dims;
  }
  base.outputInfo = calloc(base.numOutputs, sizeof(kiln_tensor_info));
  base.outputBytes = calloc(base.numOutputs, sizeof(size_t));
  base.reference = calloc(base.numOutputs, sizeof(void *));
  for (size_t i = 0; i < base.numOutputs; ++i) {
    kiln_model_output_info(model, i, &base.outputInfo[i]);
    base.outputBytes[i] =
        elementsOf(&base.outputInfo[i]) * kiln_dtype_size(base.outputInfo[i].dtype);
    base.reference[i] =
        aligned_alloc(64, (base.outputBytes[i] + 63) / 64 * 64 + 64);
  }
  if (!runOnce(&base, base.reference)) {
    fprintf(stderr, "error: the reference run failed: %s\n", kiln_last_error());
    return 2;
  }
  struct Run *all = calloc((size_t)workers, sizeof(struct Run));
  pthread_t *ids = calloc((size_t)workers, sizeof(pthread_t));
  for (int w = 0; w < workers; ++w) {
    all[w] = base;
    all[w].runs = runs;
    pthread_create(&ids[w], NULL, worker, &all[w]);
  }
  long mismatches = 0, errors = 0;
  for (int w = 0; w < workers; ++w) {
    pthread_join(ids[w], NULL);
    mismatches += all[w].mismatches;
    errors += all[w].errors;
  }
  printf("%d threads x %ld runs of one session (%d OpenMP threads each): "
         "%ld runs differ from the first run, %ld failed\n",
         workers, runs, threads, mismatches, errors);
  for (size_t i = 0; i < base.numInputs; ++i)
    free(base.inputs[i].data);
  for (size_t i = 0; i < base.numOutputs; ++i)
    free(base.reference[i]);
  free(base.inputs);
  free(base.outputInfo);
  free(base.outputBytes);
  free(base.reference);
  free(all);
  free(ids);
  kiln_session_free(session);
  kiln_model_free(model);
  return mismatches || errors ? 1 : 0;
}
