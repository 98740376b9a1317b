/*===- kiln-c/Compiler.h - Kiln's compiler as a C library ---------*- C -*-===//
 *
 * The compiler's embedding API, in the shape of IREE's
 * (iree/compiler/embedding_api.h): a session holds the options, set from
 * kiln-compile's flags; an invocation compiles one source with them to a
 * stage and hands out the output bytes and the diagnostics. Implemented by
 * libkiln-compiler.so over kiln::Invocation (include/kiln/Driver). The
 * runtime's C API (kiln/runtime.h) loads and runs what it writes.
 *
 *   kiln_compiler_session_t *s = kiln_compiler_session_create();
 *   const char *flags[] = {"-O3", "--precision=fp16"};
 *   if (kiln_compiler_session_set_flags(s, 2, flags) != 0)
 *     puts(kiln_compiler_session_error(s));
 *   kiln_compiler_invocation_t *inv = kiln_compiler_invocation_create(s);
 *   if (kiln_compiler_invocation_parse_file(inv, "model.onnx") != 0 ||
 *       kiln_compiler_invocation_run(inv, "artifact") != 0 ||
 *       kiln_compiler_invocation_write_output(inv, "model.kiln") != 0)
 *     fputs(kiln_compiler_invocation_diagnostics_text(inv), stderr);
 *   kiln_compiler_invocation_destroy(inv);
 *   kiln_compiler_session_destroy(s);
 *
 * Every function that can fail returns 0 on success and nonzero on
 * failure; the reason is in the invocation's diagnostics (or the session's
 * error). Strings returned stay valid until the next call on the same
 * object or its destruction. Sessions and invocations are independent:
 * different ones may be used from different threads at once; one object is
 * used by one thread at a time.
 *
 *===----------------------------------------------------------------------===*/
#ifndef KILN_C_COMPILER_H
#define KILN_C_COMPILER_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define KILN_COMPILER_API __attribute__((visibility("default")))
#else
#define KILN_COMPILER_API
#endif

/* The compiler's version ("0.1.0"). */
KILN_COMPILER_API const char *kiln_compiler_version(void);

/* The compile flags, as kiln-compile --help lists them: name (without
 * dashes), kind ("bool", "value", "list", "prefix") and help. Returns the
 * number of flags; index past it: NULL strings. */
KILN_COMPILER_API size_t kiln_compiler_flag_count(void);
KILN_COMPILER_API const char *kiln_compiler_flag_name(size_t index);
KILN_COMPILER_API const char *kiln_compiler_flag_kind(size_t index);
KILN_COMPILER_API const char *kiln_compiler_flag_help(size_t index);

typedef struct kiln_compiler_session_t kiln_compiler_session_t;

KILN_COMPILER_API kiln_compiler_session_t *kiln_compiler_session_create(void);
KILN_COMPILER_API void
kiln_compiler_session_destroy(kiln_compiler_session_t *session);
/* Applies kiln-compile flags ("--precision=fp16", "-O3", "--cpu", "generic",
 * ...) on top of the session's options; on failure nothing changes and
 * kiln_compiler_session_error says why. */
KILN_COMPILER_API int
kiln_compiler_session_set_flags(kiln_compiler_session_t *session, int argc,
                                const char *const *argv);
/* Back to the defaults. */
KILN_COMPILER_API void
kiln_compiler_session_reset_flags(kiln_compiler_session_t *session);
KILN_COMPILER_API const char *
kiln_compiler_session_error(const kiln_compiler_session_t *session);

typedef struct kiln_compiler_invocation_t kiln_compiler_invocation_t;

/* An invocation takes a copy of the session's options. */
KILN_COMPILER_API kiln_compiler_invocation_t *
kiln_compiler_invocation_create(kiln_compiler_session_t *session);
KILN_COMPILER_API void
kiln_compiler_invocation_destroy(kiln_compiler_invocation_t *inv);

/* The source: an ONNX file (or .mlir/.mlirbc), a serialized ONNX model in
 * memory (`name` names it in messages; external data is read from
 * `base_dir`, NULL: refused), or MLIR text. */
KILN_COMPILER_API int
kiln_compiler_invocation_parse_file(kiln_compiler_invocation_t *inv,
                                    const char *path);
KILN_COMPILER_API int kiln_compiler_invocation_parse_onnx_bytes(
    kiln_compiler_invocation_t *inv, const void *data, size_t size,
    const char *name, const char *base_dir);
KILN_COMPILER_API int
kiln_compiler_invocation_parse_mlir(kiln_compiler_invocation_t *inv,
                                    const char *text, size_t size,
                                    const char *name);

/* Compiles to `stage`: kiln, graph, onnx, linalg, llvm-dialect, llvm, ptx,
 * fatbin, asm, obj, so or artifact. */
KILN_COMPILER_API int kiln_compiler_invocation_run(kiln_compiler_invocation_t *inv,
                                                   const char *stage);
/* The output of the last run (IR text, ONNX bytes, an object, the artifact's
 * bytes, ...): pointer and size, valid until the next run or destroy. */
KILN_COMPILER_API int
kiln_compiler_invocation_output(kiln_compiler_invocation_t *inv,
                                const void **data, size_t *size);
KILN_COMPILER_API int
kiln_compiler_invocation_write_output(kiln_compiler_invocation_t *inv,
                                      const char *path);

typedef enum kiln_compiler_severity_t {
  KILN_COMPILER_NOTE = 0,
  KILN_COMPILER_WARNING = 1,
  KILN_COMPILER_ERROR = 2,
  KILN_COMPILER_REMARK = 3
} kiln_compiler_severity_t;

typedef struct kiln_compiler_diagnostic_t {
  kiln_compiler_severity_t severity;
  const char *location; /* "" when unknown */
  const char *node;     /* the ONNX node, "" when none */
  const char *message;
  const char *text;     /* one line as kiln-compile prints it */
} kiln_compiler_diagnostic_t;

KILN_COMPILER_API size_t
kiln_compiler_invocation_diagnostic_count(const kiln_compiler_invocation_t *inv);
KILN_COMPILER_API int
kiln_compiler_invocation_diagnostic(const kiln_compiler_invocation_t *inv,
                                    size_t index,
                                    kiln_compiler_diagnostic_t *diagnostic);
/* Every diagnostic, one line each. */
KILN_COMPILER_API const char *
kiln_compiler_invocation_diagnostics_text(kiln_compiler_invocation_t *inv);

/* The tables and summaries of the run (--auto-keep, int8 calibration,
 * --accuracy-report, --summary) as text. */
KILN_COMPILER_API const char *
kiln_compiler_invocation_messages(kiln_compiler_invocation_t *inv);
/* Collect kiln-compile --report's per-pass JSON in the next run. */
KILN_COMPILER_API void
kiln_compiler_invocation_enable_pass_report(kiln_compiler_invocation_t *inv);
/* That JSON ("" unless enabled). */
KILN_COMPILER_API const char *
kiln_compiler_invocation_pass_report(kiln_compiler_invocation_t *inv);
/* The graph (which 0) or backend (1) pipeline of the last run, as text. */
KILN_COMPILER_API const char *
kiln_compiler_invocation_pipeline(kiln_compiler_invocation_t *inv, int which);

/* Called at each stage and step of a long compile (from the compiling
 * thread, or a pass manager's worker thread). */
typedef void (*kiln_compiler_progress_fn)(void *user, const char *stage,
                                          const char *detail, unsigned step,
                                          unsigned steps);
KILN_COMPILER_API void
kiln_compiler_invocation_set_progress(kiln_compiler_invocation_t *inv,
                                      kiln_compiler_progress_fn callback,
                                      void *user);

#ifdef __cplusplus
}
#endif

#endif /* KILN_C_COMPILER_H */
