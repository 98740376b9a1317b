//===- Flags.h - Command-line flags of a Kiln compile -----------*- C++ -*-===//
//
// One table of kiln-compile's compile flags (name, value, help, how it sets
// CompileOptions). Two front ends read it: CompileFlagsRegistration makes
// llvm::cl options of them for a tool's command line (as CIRCT's
// FirtoolOptions does), and parseCompileFlags parses flag strings without
// llvm::cl's global state, for the C API and the Python package.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_DRIVER_FLAGS_H
#define KILN_DRIVER_FLAGS_H

#include "kiln/Driver/CompileOptions.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/CommandLine.h"

#include <memory>
#include <string>
#include <vector>

namespace kiln {

struct CompileFlag {
  enum Kind {
    Bool,   ///< --name, --name=true|false
    Value,  ///< --name=value
    List,   ///< --name=a,b (repeatable)
    Prefix  ///< -Ovalue
  };
  Kind kind;
  const char *name;
  const char *valueDesc; ///< "" for none
  const char *help;
  /// Sets the option from `value` ("true"/"false" for Bool; one element for
  /// List): "" or an error message.
  std::string (*apply)(CompileOptions &options, const std::string &value);
};

/// Every compile flag, in help order.
llvm::ArrayRef<CompileFlag> getCompileFlags();

/// Parses `args` ("--name=value", "--name value", "--flag", "-O3", "-name"
/// with one dash too) onto `options`: "" or an error message naming the
/// flag.
std::string parseCompileFlags(llvm::ArrayRef<std::string> args,
                              CompileOptions &options);

/// The compile flags as llvm::cl options in `category`, for a tool's main
/// (construct before llvm::cl::ParseCommandLineOptions).
class CompileFlagsRegistration {
public:
  explicit CompileFlagsRegistration(llvm::cl::OptionCategory &category);
  ~CompileFlagsRegistration();

  /// Applies the flags given on the command line to `options`: "" or an
  /// error message.
  std::string apply(CompileOptions &options) const;

private:
  struct Impl;
  std::unique_ptr<Impl> impl;
};

} // namespace kiln

#endif // KILN_DRIVER_FLAGS_H
