/*===- runtime.h - The Kiln runtime's C API --------------------------------===*
 *
 * Loads a model artifact (model.kiln, docs/artifact.md) written by
 * kiln-compile and runs it. The runtime links no MLIR or LLVM; it maps the
 * artifact, checks it (magic, version, size, content hash, target
 * architecture and CPU features), loads the code section as a shared object
 * and calls its kiln_entry.
 *
 * Errors: every function that can fail returns a kiln_status; on failure
 * kiln_last_error() gives a message for the calling thread (valid until that
 * thread's next failing call). Nothing in this API aborts the process on bad
 * input: damaged artifacts, missing symbols and wrong tensors are errors.
 *
 * Thread-safety: a kiln_model and a kiln_session may be used from several
 * threads at once; in particular kiln_session_run may run one session on
 * several threads concurrently (each call passes its own buffers; the
 * session's counters are atomics). kiln_model_free / kiln_session_free must
 * not race with other calls on the same object.
 *
 * See docs/runtime.md.
 *
 *===----------------------------------------------------------------------===*/
#ifndef KILN_RUNTIME_H
#define KILN_RUNTIME_H

#include "kiln/artifact_format.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum kiln_status {
  KILN_OK = 0,
  KILN_ERROR_INVALID_ARGUMENT = 1, /* a NULL pointer, an index out of range */
  KILN_ERROR_IO = 2,               /* cannot open, read or map a file */
  KILN_ERROR_NOT_ARTIFACT = 3,     /* wrong magic */
  KILN_ERROR_VERSION = 4,          /* a format version this runtime lacks */
  KILN_ERROR_TRUNCATED = 5,        /* file shorter than a size it names */
  KILN_ERROR_CORRUPTED = 6,        /* content hash mismatch */
  KILN_ERROR_BAD_HEADER = 7,       /* header JSON invalid or inconsistent */
  KILN_ERROR_UNSUPPORTED_TARGET = 8, /* other arch/kind, missing CPU feature */
  KILN_ERROR_CODE = 9,       /* code section: dlopen, symbol, ABI version */
  KILN_ERROR_TENSOR_MISMATCH = 10, /* run: count, dtype, shape, alignment */
  KILN_ERROR_OUT_OF_MEMORY = 11,
  KILN_ERROR_DEVICE = 12 /* no CUDA driver/device, or a device call failed */
} kiln_status;

/* A short name of a status ("KILN_ERROR_CORRUPTED", ...). */
const char *kiln_status_string(kiln_status status);

/* The calling thread's message of its last failed call ("" if none). */
const char *kiln_last_error(void);

typedef struct kiln_model kiln_model;
typedef struct kiln_session kiln_session;

/* ---- Models -------------------------------------------------------------*/

/* Loads and checks the artifact at `path`. On success *model is set; free it
 * with kiln_model_free (sessions keep the model alive: it may be freed
 * before them). */
kiln_status kiln_model_load(const char *path, kiln_model **model);
void kiln_model_free(kiln_model *model);

typedef struct kiln_tensor_info {
  const char *name;    /* valid while the model lives */
  int32_t dtype;       /* kiln_dtype: ONNX TensorProto.DataType code */
  int32_t rank;
  const int64_t *dims; /* rank entries, valid while the model lives; -1 for
                          a symbolic dim (kiln_model_*_dim_name) */
} kiln_tensor_info;

size_t kiln_model_num_inputs(const kiln_model *model);
size_t kiln_model_num_outputs(const kiln_model *model);
size_t kiln_model_num_weights(const kiln_model *model);
kiln_status kiln_model_input_info(const kiln_model *model, size_t index,
                                  kiln_tensor_info *info);
kiln_status kiln_model_output_info(const kiln_model *model, size_t index,
                                   kiln_tensor_info *info);
/* Symbolic dims (docs/artifact.md, "Symbolic dims"): the name of dim
 * `axis` of an input (one of the artifact's symbols, e.g. "batch") or the
 * expression of an output's (e.g. "batch * seq"); NULL for a static dim, a
 * bad index or axis. Valid while the model lives. A model with symbolic
 * dims runs at any shape consistent with them: kiln_session_run binds each
 * symbol from the inputs and computes the outputs' shapes. */
const char *kiln_model_input_dim_name(const kiln_model *model, size_t index,
                                      int32_t axis);
const char *kiln_model_output_dim_name(const kiln_model *model, size_t index,
                                       int32_t axis);
/* The input whose buffer output `index` is written in (the artifact's
 * "aliases", docs/artifact.md: a static KV cache updated in place), or -1
 * (also for a bad index). kiln_session_run then takes as that output either
 * the input's own buffer (updated in place, nothing copied) or NULL (it
 * allocates the output as a copy of the input, which stays as it was); any
 * other buffer is an error. */
int64_t kiln_model_output_alias(const kiln_model *model, size_t index);
/* The artifact's header JSON (valid while the model lives). */
const char *kiln_model_metadata_json(const kiln_model *model);
/* The content hash recorded in (and verified against) the artifact. */
uint64_t kiln_model_content_hash(const kiln_model *model);
/* A tensor-parallel shard (kiln-compile --tensor-parallel=N): the group's
 * size and this artifact's rank; 1 and 0 for any other artifact. Such an
 * artifact runs only in a process that is that rank of an MPI world of that
 * size (docs/cluster.md). */
void kiln_model_tensor_parallel(const kiln_model *model, int64_t *ranks,
                                int64_t *rank);

/* ---- Sessions -----------------------------------------------------------*/

typedef struct kiln_session_options {
  int32_t num_threads; /* 0: the hardware concurrency */
  /* NULL: the artifact's target; "cpu" (cpu artifacts); "cuda" or "cuda:N"
   * (cuda artifacts; N is the device index, default 0). */
  const char *device;
  /* CUDA sessions: capture the first run into a CUDA graph and replay it
   * (nonzero, the default), or launch every kernel each run (0). Profiled
   * runs are never captured. */
  int32_t cuda_graphs;
} kiln_session_options;

/* Fills the defaults (num_threads 0, device NULL, cuda_graphs 1). Always
 * call it before setting fields: later versions add fields at the end. */
void kiln_session_options_init(kiln_session_options *options);

/* options may be NULL (the defaults). */
kiln_status kiln_session_create(kiln_model *model,
                                const kiln_session_options *options,
                                kiln_session **session);
void kiln_session_free(kiln_session *session);

/* A dense row-major tensor. For inputs every field is given. For outputs
 * either everything is given (the caller's buffer; it is checked against the
 * model's shape for this run's inputs), or data is NULL: then
 * kiln_session_run allocates the buffer (64-byte aligned) and fills dtype,
 * rank and dims (the run's shape, stored with the buffer: valid until
 * kiln_tensor_release); release it with kiln_tensor_release. */
typedef struct kiln_tensor {
  void *data;
  int32_t dtype;
  int32_t rank;
  const int64_t *dims;
} kiln_tensor;

/* Runs the model once. Checks the number of inputs and outputs and the
 * dtype, shape and alignment (of the element size) of every tensor against
 * the model, naming the tensor and the expected and given values when they
 * differ. With symbolic dims, each symbol takes its value from the first
 * input dim naming it and every other use must agree ("input 'mask' dim 1
 * is 7 but 'seq' is 5 (from input 'ids' dim 1)"); a symbol may be 0 (an
 * empty KV cache before the prompt); the outputs' shapes are computed from
 * the symbols.
 * Safe to call concurrently on one session (see above). */
kiln_status kiln_session_run(kiln_session *session, const kiln_tensor *inputs,
                             size_t num_inputs, kiln_tensor *outputs,
                             size_t num_outputs);

/* Frees an output buffer that kiln_session_run allocated and sets
 * tensor->data to NULL. May be called after the session or model is freed.
 * Must not be called on caller-provided buffers. */
void kiln_tensor_release(kiln_tensor *tensor);

/* Byte counts come from the allocator the runtime gives the model's code
 * (the intermediate tensors) plus the outputs the runtime allocates. An
 * allocation counts toward the session running on the allocating thread; the
 * code's OpenMP worker threads have no session, so their allocations only
 * count toward the process-wide numbers. */
typedef struct kiln_session_stats {
  uint64_t num_runs;             /* completed kiln_session_run calls */
  uint64_t last_run_ns;          /* wall time of the last completed run */
  uint64_t total_run_ns;         /* sum over all runs */
  uint64_t peak_bytes;           /* the session's peak live bytes */
  uint64_t current_bytes;        /* the session's live bytes now */
  uint64_t process_peak_bytes;   /* all sessions and threads together */
  uint64_t process_current_bytes;
  /* CUDA sessions (0 for CPU ones): device memory held by the session, its
   * weights, input/output buffers and library workspace included, and the
   * peak of the intermediates from its memory pool. */
  uint64_t device_peak_bytes;
  uint64_t device_current_bytes;
  uint64_t device_pool_peak_bytes;
} kiln_session_stats;

kiln_status kiln_session_get_stats(const kiln_session *session,
                                   kiln_session_stats *stats);

/* The device a session runs on: "cpu", or "cuda:N <name> (sm_XY)". Valid
 * while the session lives. */
const char *kiln_session_device(const kiln_session *session);

/* CUDA sessions: whether runs replay a CUDA graph, e.g. "on (1 capture, 41
 * replays)", "off: turned off by the session options", "off: capture
 * failed: ..." ("" for CPU sessions). Valid until the thread's next call. */
const char *kiln_session_cuda_graphs(const kiln_session *session);

/* The CUDA devices of this machine, one line each ("cuda:0 NVIDIA H200
 * (sm_90, 143771 MiB)\n"); *text is valid until the calling thread's next
 * call. Fails with KILN_ERROR_DEVICE and "no CUDA device: <reason>" (no
 * libcuda, cuInit failed, zero devices) or where the runtime was built
 * without CUDA support. */
kiln_status kiln_list_cuda_devices(const char **text);

/* The number of threads the session's runs use. */
int32_t kiln_session_num_threads(const kiln_session *session);
/* The model a session runs. */
const kiln_model *kiln_session_model(const kiln_session *session);

/* ---- Kernel profiling ---------------------------------------------------*
 *
 * Models compiled with the profiling hooks (kiln-compile's default) carry a
 * kernel table: one entry per kernel of the code (a GEMM, a fused
 * elementwise loop nest, a copy...), with the ONNX nodes it computes. A
 * session with profiling on times every kernel launch of its runs (on the
 * thread that calls kiln_session_run: the kernels' own OpenMP threads are
 * inside the launch) and keeps per-kernel aggregates and a timeline.
 * Profiling costs a clock read per kernel launch while on, a call and a
 * not-taken branch while off. Turn it on or off between runs. See
 * docs/runtime.md, "Kernel profiling". */

typedef struct kiln_kernel_info {
  const char *name;     /* e.g. "matmul_0", "add+relu_2" */
  const char *category; /* gemm, attention, quantize, reduction,
                           elementwise, copy or other */
  size_t num_onnx_nodes;
  const char *const *onnx_nodes; /* the ONNX node names it computes */
} kiln_kernel_info;             /* strings valid while the model lives */

/* 0 for a model compiled without the hooks. */
size_t kiln_model_num_kernels(const kiln_model *model);
kiln_status kiln_model_kernel_info(const kiln_model *model, size_t kernel,
                                   kiln_kernel_info *info);

/* Turns profiling on (enabled != 0) or off. Turning it on keeps what was
 * recorded before; kiln_session_reset_profile clears it. On a model without
 * the hooks it succeeds and records only whole runs. */
kiln_status kiln_session_set_profiling(kiln_session *session, int enabled);
kiln_status kiln_session_reset_profile(kiln_session *session);

typedef struct kiln_kernel_stats {
  uint64_t launches;
  uint64_t total_ns;
  uint64_t min_ns; /* 0 when never launched */
  uint64_t max_ns;
} kiln_kernel_stats;

kiln_status kiln_session_kernel_stats(const kiln_session *session,
                                      size_t kernel, kiln_kernel_stats *stats);

typedef struct kiln_profile_summary {
  uint64_t runs;           /* profiled runs */
  uint64_t run_ns;         /* their wall time, summed */
  uint64_t kernel_ns;      /* the kernels' time within them, summed */
  uint64_t num_events;     /* events kept (kiln_session_profile_events) */
  uint64_t dropped_events; /* events over the cap (2^20), not kept */
} kiln_profile_summary;

kiln_status kiln_session_profile_summary(const kiln_session *session,
                                         kiln_profile_summary *summary);

/* One interval of the timeline: a kernel launch, or (kernel == -1) a whole
 * profiled run. Times are CLOCK_MONOTONIC nanoseconds; thread is a small
 * number the runtime gives each thread that runs sessions (1, 2, ...). */
typedef struct kiln_profile_event {
  int32_t kernel;
  uint32_t thread;
  uint64_t run; /* the profiled run's index (0, 1, ...) */
  uint64_t start_ns;
  uint64_t end_ns;
} kiln_profile_event;

/* Copies events [first, first + capacity) in recording order (a run's event
 * first, then its kernels in launch order) into `events`; *count gets how
 * many were copied. */
kiln_status kiln_session_profile_events(const kiln_session *session,
                                        size_t first, size_t capacity,
                                        kiln_profile_event *events,
                                        size_t *count);


/* ---- Generation ---------------------------------------------------------*
 *
 * Autoregressive decoding with a decoder that carries state between steps
 * (docs/generation.md), in the form Hugging Face optimum exports it:
 *
 *   input_ids       int64 [batch, seq]            (required)
 *   attention_mask  int64 [batch, past + seq]     (optional; 0 = padding)
 *   position_ids    int64 [batch, seq]            (optional)
 *   past...         state inputs, each paired with the output of the same
 *                   name with "past" replaced by "present"
 *                   (past_key_values.0.key -> present.0.key, past_state.0 ->
 *                   present_state.0)
 *   logits          float32 or float16 [batch, seq, vocab]  (output)
 *
 * One model serves the prompt (prefill: the whole prompt, every state
 * input's symbolic dims other than the batch 0, a state with static dims
 * zeros) and each decode step (one token per sequence, the previous step's
 * present outputs as its past inputs: they are handed over, not copied).
 * Prompts of different lengths are left-padded with pad_id under a mask of
 * 0 (position ids count a sequence's real tokens only).
 *
 * A decoder with the input cache_position int64 [batch] has a static cache
 * (ONNX Runtime GenAI's shared buffer): its state's symbolic dims other
 * than the batch are the cache length (max_length, or prompt + new tokens
 * when 0), attention_mask is [batch, cache length] (1 for the real tokens
 * written so far), cache_position the column of the step's first token. */

typedef struct kiln_generate_options {
  int32_t max_new_tokens; /* tokens to generate per sequence (default 64) */
  const int64_t *stop_ids; /* a sequence ends after one of these */
  size_t num_stop_ids;
  float temperature; /* 0 (default): greedy (argmax, lowest index on ties) */
  int32_t top_k;     /* sampling: keep the k most likely (0: all) */
  float top_p;       /* sampling: smallest set with probability >= p (1) */
  uint64_t seed;     /* sampling's random stream */
  int64_t pad_id;    /* left padding (default 0) */
  int64_t max_length; /* prompt + new tokens may not exceed it (0: none) */
} kiln_generate_options;

/* Fills the defaults. Always call it before setting fields. */
void kiln_generate_options_init(kiln_generate_options *options);

typedef struct kiln_generation kiln_generation;

/* Generates for `batch` prompts (prompts[i] has prompt_lengths[i] >= 1
 * ids) in one static batch: a prefill over the left-padded prompts, then
 * one decode step per new token until every sequence has max_new_tokens or
 * ended at a stop id. Checks the model's signature first and names what
 * does not fit (an input that is neither a token nor a state input, a state
 * input without its output, a static batch other than `batch`, a vocab id
 * out of range...). On success *result holds the tokens and the timing;
 * free it with kiln_generation_free. */
kiln_status kiln_generate(kiln_session *session, const int64_t *const *prompts,
                          const size_t *prompt_lengths, size_t batch,
                          const kiln_generate_options *options,
                          kiln_generation **result);
void kiln_generation_free(kiln_generation *generation);

/* The new tokens of sequence i (a stop id that ended it included). */
size_t kiln_generation_num_tokens(const kiln_generation *g, size_t sequence);
const int64_t *kiln_generation_tokens(const kiln_generation *g,
                                      size_t sequence);
/* Steps run (the prefill is step 0) and the CLOCK_MONOTONIC time in ns,
 * from the call's start, at which each step's tokens were chosen: step 0's
 * is the time to first token. */
size_t kiln_generation_num_steps(const kiln_generation *g);
const uint64_t *kiln_generation_step_ns(const kiln_generation *g);
/* Bytes of the model's state (KV cache or recurrent state) after the last
 * step, and the most it held at once. */
uint64_t kiln_generation_state_bytes(const kiln_generation *g);
uint64_t kiln_generation_peak_state_bytes(const kiln_generation *g);
/* Bytes of state each step copied: the past carried into a new present
 * buffer (a cache grown by Concat copies it all, every step), 0 for a state
 * the model writes in place in its input's buffer (kiln_model_output_alias:
 * the loop then keeps one buffer per state for the whole generation).
 * num_steps entries; copied_bytes is the most of any decode step. */
const uint64_t *kiln_generation_step_copied_bytes(const kiln_generation *g);
uint64_t kiln_generation_copied_bytes(const kiln_generation *g);
/* The prompt length after padding and the vocab size. */
size_t kiln_generation_prompt_length(const kiln_generation *g);
size_t kiln_generation_vocab(const kiln_generation *g);

/* ---- Serving: in-flight batching ----------------------------------------*
 *
 * Requests that arrive over time share the decoder's batch: between decode
 * steps the scheduler admits the requests that have arrived (their prefill
 * runs together, left-padded, from an empty state) into the running batch,
 * up to max_batch sequences and max_tokens tokens per step (a prefill's
 * padded prompt tokens plus one per decoding sequence), and retires the
 * sequences that are done, each at its own max_new_tokens or stop id.
 * Merging left-pads the KV caches to a common length under a mask of 0
 * (the model needs an attention_mask input for that to be exact); a
 * recurrent state (no growing axis) is stacked. Greedy decoding: each
 * request gets the ids it would get alone. The batch must be dynamic. */

typedef struct kiln_request {
  const int64_t *prompt;
  size_t prompt_length;   /* >= 1 */
  int32_t max_new_tokens; /* >= 1 */
  double arrival_ms;      /* from the call's start (0: at once) */
} kiln_request;

typedef struct kiln_serve_options {
  int32_t max_batch;  /* sequences decoded together (default 8) */
  int64_t max_tokens; /* tokens per step (default 4096) */
  const int64_t *stop_ids;
  size_t num_stop_ids;
  int64_t pad_id;
} kiln_serve_options;

void kiln_serve_options_init(kiln_serve_options *options);

typedef struct kiln_serving kiln_serving;

/* Serves `count` requests until every one is done; waits (sleeps) for
 * arrivals in the future. Free the result with kiln_serving_free. */
kiln_status kiln_serve(kiln_session *session, const kiln_request *requests,
                       size_t count, const kiln_serve_options *options,
                       kiln_serving **result);
void kiln_serving_free(kiln_serving *serving);
/* Request i's new tokens and the time (ms from the start) each was chosen:
 * token_ms[0] - arrival_ms is its time to first token. */
size_t kiln_serving_num_tokens(const kiln_serving *s, size_t request);
const int64_t *kiln_serving_tokens(const kiln_serving *s, size_t request);
const double *kiln_serving_token_ms(const kiln_serving *s, size_t request);
/* The decode steps run and the sequences each decoded. */
size_t kiln_serving_num_steps(const kiln_serving *s);
const int32_t *kiln_serving_step_batch(const kiln_serving *s);
/* From the start to the last token. */
double kiln_serving_elapsed_ms(const kiln_serving *s);

#ifdef __cplusplus
}
#endif

#endif /* KILN_RUNTIME_H */
