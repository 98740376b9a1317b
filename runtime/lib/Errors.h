//===- Errors.h - The runtime's per-thread error message ---------*- C++ -*-===//
//
// For the runtime's sources beyond Runtime.cpp: sets the calling thread's
// kiln_last_error() message and returns `status`.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_ERRORS_H
#define KILN_RUNTIME_ERRORS_H

#include "kiln/runtime.h"

#include <string>

namespace kiln {
kiln_status setRuntimeError(kiln_status status, const std::string &message);
} // namespace kiln

#endif // KILN_RUNTIME_ERRORS_H
