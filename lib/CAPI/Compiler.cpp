//===- Compiler.cpp - The C API of include/kiln-c/Compiler.h --------------===//

#include "kiln-c/Compiler.h"

#include "kiln/Driver/Flags.h"
#include "kiln/Driver/Invocation.h"

#include <string>
#include <vector>

using namespace kiln;

#ifndef KILN_VERSION
#define KILN_VERSION "unknown"
#endif

struct kiln_compiler_session_t {
  CompileOptions options;
  std::string error;
};

struct kiln_compiler_invocation_t {
  explicit kiln_compiler_invocation_t(const CompileOptions &options)
      : invocation(options), messageStream(messages) {
    invocation.setMessageStream(&messageStream);
    invocation.setDebugStream(&messageStream);
  }
  Invocation invocation;
  std::string messages;
  llvm::raw_string_ostream messageStream;
  std::string diagnosticsText;
  mutable std::vector<std::string> texts;
  kiln_compiler_progress_fn progress = nullptr;
  void *progressUser = nullptr;
};

static const char *flagKind(CompileFlag::Kind kind) {
  switch (kind) {
  case CompileFlag::Bool:
    return "bool";
  case CompileFlag::Value:
    return "value";
  case CompileFlag::List:
    return "list";
  case CompileFlag::Prefix:
    return "prefix";
  }
  return "value";
}

extern "C" {

const char *kiln_compiler_version(void) { return KILN_VERSION; }

size_t kiln_compiler_flag_count(void) { return getCompileFlags().size(); }
const char *kiln_compiler_flag_name(size_t index) {
  auto flags = getCompileFlags();
  return index < flags.size() ? flags[index].name : nullptr;
}
const char *kiln_compiler_flag_kind(size_t index) {
  auto flags = getCompileFlags();
  return index < flags.size() ? flagKind(flags[index].kind) : nullptr;
}
const char *kiln_compiler_flag_help(size_t index) {
  auto flags = getCompileFlags();
  return index < flags.size() ? flags[index].help : nullptr;
}

kiln_compiler_session_t *kiln_compiler_session_create(void) {
  return new kiln_compiler_session_t();
}
void kiln_compiler_session_destroy(kiln_compiler_session_t *session) {
  delete session;
}
int kiln_compiler_session_set_flags(kiln_compiler_session_t *session,
                                    int argc, const char *const *argv) {
  if (!session)
    return 1;
  std::vector<std::string> args;
  for (int i = 0; i < argc; ++i)
    args.push_back(argv[i] ? argv[i] : "");
  CompileOptions updated = session->options;
  session->error = parseCompileFlags(args, updated);
  if (!session->error.empty())
    return 1;
  session->options = std::move(updated);
  return 0;
}
void kiln_compiler_session_reset_flags(kiln_compiler_session_t *session) {
  if (session) {
    session->options = CompileOptions();
    session->error.clear();
  }
}
const char *kiln_compiler_session_error(const kiln_compiler_session_t *session) {
  return session ? session->error.c_str() : "no session";
}

kiln_compiler_invocation_t *
kiln_compiler_invocation_create(kiln_compiler_session_t *session) {
  if (!session)
    return nullptr;
  return new kiln_compiler_invocation_t(session->options);
}
void kiln_compiler_invocation_destroy(kiln_compiler_invocation_t *inv) {
  delete inv;
}

int kiln_compiler_invocation_parse_file(kiln_compiler_invocation_t *inv,
                                        const char *path) {
  return inv && path && inv->invocation.importFile(path) ? 0 : 1;
}
int kiln_compiler_invocation_parse_onnx_bytes(kiln_compiler_invocation_t *inv,
                                              const void *data, size_t size,
                                              const char *name,
                                              const char *base_dir) {
  if (!inv || (!data && size))
    return 1;
  llvm::StringRef bytes(static_cast<const char *>(data), size);
  return inv->invocation.importOnnxBytes(bytes, name ? name : "<bytes>",
                                         base_dir ? base_dir : "")
             ? 0
             : 1;
}
int kiln_compiler_invocation_parse_mlir(kiln_compiler_invocation_t *inv,
                                        const char *text, size_t size,
                                        const char *name) {
  if (!inv || (!text && size))
    return 1;
  return inv->invocation.parseMLIR(llvm::StringRef(text, size),
                                   name ? name : "<string>")
             ? 0
             : 1;
}

int kiln_compiler_invocation_run(kiln_compiler_invocation_t *inv,
                                 const char *stage) {
  if (!inv)
    return 1;
  Stage parsed;
  if (!stage || !parseStage(stage, parsed)) {
    inv->invocation.reportError(
        std::string("unknown stage '") + (stage ? stage : "") +
        "' (kiln, graph, onnx, linalg, llvm-dialect, llvm, ptx, fatbin, asm, "
        "obj, so, artifact)");
    return 1;
  }
  inv->messages.clear();
  return inv->invocation.run(parsed) ? 0 : 1;
}

int kiln_compiler_invocation_output(kiln_compiler_invocation_t *inv,
                                    const void **data, size_t *size) {
  if (!inv || !data || !size)
    return 1;
  const std::string &output = inv->invocation.getOutput();
  *data = output.data();
  *size = output.size();
  return inv->invocation.hasErrors() && output.empty() ? 1 : 0;
}
int kiln_compiler_invocation_write_output(kiln_compiler_invocation_t *inv,
                                          const char *path) {
  return inv && path && inv->invocation.writeOutput(path) ? 0 : 1;
}

size_t
kiln_compiler_invocation_diagnostic_count(const kiln_compiler_invocation_t *inv) {
  return inv ? inv->invocation.getDiagnostics().size() : 0;
}

static kiln_compiler_severity_t toC(kiln::Diagnostic::Severity severity) {
  switch (severity) {
  case kiln::Diagnostic::Severity::Note:
    return KILN_COMPILER_NOTE;
  case kiln::Diagnostic::Severity::Warning:
    return KILN_COMPILER_WARNING;
  case kiln::Diagnostic::Severity::Error:
    return KILN_COMPILER_ERROR;
  case kiln::Diagnostic::Severity::Remark:
    return KILN_COMPILER_REMARK;
  }
  return KILN_COMPILER_ERROR;
}

int kiln_compiler_invocation_diagnostic(const kiln_compiler_invocation_t *inv,
                                        size_t index,
                                        kiln_compiler_diagnostic_t *out) {
  if (!inv || !out || index >= inv->invocation.getDiagnostics().size())
    return 1;
  const auto &all = inv->invocation.getDiagnostics();
  const kiln::Diagnostic &d = all[index];
  // One formatted line per diagnostic, kept with the invocation.
  auto &texts = inv->texts;
  if (texts.size() < all.size())
    texts.resize(all.size());
  texts[index] = d.format("kiln-compile");
  out->severity = toC(d.severity);
  out->location = d.location.c_str();
  out->node = d.node.c_str();
  out->message = d.message.c_str();
  out->text = texts[index].c_str();
  return 0;
}

const char *
kiln_compiler_invocation_diagnostics_text(kiln_compiler_invocation_t *inv) {
  if (!inv)
    return "";
  inv->diagnosticsText = inv->invocation.getDiagnosticsText();
  return inv->diagnosticsText.c_str();
}

const char *kiln_compiler_invocation_messages(kiln_compiler_invocation_t *inv) {
  return inv ? inv->messages.c_str() : "";
}
void kiln_compiler_invocation_enable_pass_report(
    kiln_compiler_invocation_t *inv) {
  if (inv)
    inv->invocation.getOptions().collectPassReport = true;
}
const char *
kiln_compiler_invocation_pass_report(kiln_compiler_invocation_t *inv) {
  return inv ? inv->invocation.getPassReportJson().c_str() : "";
}
const char *kiln_compiler_invocation_pipeline(kiln_compiler_invocation_t *inv,
                                              int which) {
  if (!inv)
    return "";
  return which == 0 ? inv->invocation.getGraphPipeline().c_str()
                    : inv->invocation.getBackendPipeline().c_str();
}

void kiln_compiler_invocation_set_progress(kiln_compiler_invocation_t *inv,
                                           kiln_compiler_progress_fn callback,
                                           void *user) {
  if (!inv)
    return;
  inv->progress = callback;
  inv->progressUser = user;
  if (!callback) {
    inv->invocation.setProgressCallback(nullptr);
    return;
  }
  inv->invocation.setProgressCallback([inv](const Progress &p) {
    inv->progress(inv->progressUser, p.stage.c_str(), p.detail.c_str(), p.step,
                  p.steps);
  });
}

} // extern "C"
