//===- Isolated.cpp - libonnx's checks run in a child process -------------===//
//
// libonnx 1.12 (Debian's, 2022) can crash on malformed models: its shape
// inference and version converter dereference what they never validated
// (seen as SIGSEGV in ShapeInferenceImplBase::process and in
// DefaultVersionConverter::convert_version -> graphProtoToGraph on mutated
// real models). No input file may crash a Kiln tool, and those code paths
// cannot be validated from outside without rewriting them. So every libonnx
// step after parsing runs in a forked child: the child works on its
// copy-on-write image of the model and sends back what the step produced
// (serialized protobuf) or the message it threw; a signal or a hang in the
// child becomes an error of the parent. docs/design/importer.md says why
// this rather than a newer ONNX library.
//
//===----------------------------------------------------------------------===//

#include "ImporterInternal.h"

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <cstdio>
#include <new>
#include <poll.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

namespace kiln::import {

namespace {
/// The child's first byte: what follows is the step's result or a message.
enum : char { kResult = 'R', kThrew = 'E' };

bool writeAll(int fd, const char *data, size_t size) {
  while (size) {
    ssize_t n = ::write(fd, data, size);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return false;
    data += n;
    size -= size_t(n);
  }
  return true;
}

int timeoutSeconds() {
  if (const char *env = std::getenv("KILN_ONNX_STEP_TIMEOUT")) {
    int seconds = std::atoi(env);
    if (seconds > 0)
      return seconds;
  }
  return 300;
}
/// The address space the child may add to the parent's (MiB): libonnx's
/// shape inference builds whatever a malformed model asks for (a
/// ConstantOfShape whose shape input declares 2^63 elements grows a shape of
/// that rank until memory runs out, which on a large machine takes minutes
/// and swaps). Beyond its copy of the model and the serialized result, no
/// step needs much: the child may grow by three times the parent's resident
/// size (the model is in it) plus this headroom.
long long headroomMiB() {
  if (const char *env = std::getenv("KILN_ONNX_STEP_MEMORY_MB")) {
    long long mib = std::atoll(env);
    if (mib > 0)
      return mib;
  }
  return 2048;
}

/// Reads a "Name:   N kB" line of /proc/self/status, in bytes (0 if absent).
unsigned long long statusBytes(const char *field) {
  unsigned long long kib = 0;
  if (FILE *status = std::fopen("/proc/self/status", "r")) {
    char line[256];
    size_t length = std::strlen(field);
    while (std::fgets(line, sizeof line, status))
      if (!std::strncmp(line, field, length) && line[length] == ':') {
        kib = std::strtoull(line + length + 1, nullptr, 10);
        break;
      }
    std::fclose(status);
  }
  return kib << 10;
}

/// Lowers a resource limit to `limit` bytes unless it is already lower.
void lowerLimit(int resource, unsigned long long limit) {
  struct rlimit rl;
  if (::getrlimit(resource, &rl) == 0 &&
      (rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > limit)) {
    rl.rlim_cur = limit;
    ::setrlimit(resource, &rl);
  }
}

/// Limits the child's memory (called in the child after fork): its address
/// space (RLIMIT_AS) and its private writable mappings (RLIMIT_DATA), each
/// to what it has now plus three times the resident size plus the headroom.
/// Both: under AddressSanitizer the heap lives in a range reserved at start
/// (already in the address space, so RLIMIT_AS never bites), and it is the
/// writable mappings made inside it that grow.
void limitChildMemory() {
  unsigned long long size = statusBytes("VmSize");
  unsigned long long data = statusBytes("VmData");
  unsigned long long resident = statusBytes("VmRSS");
  unsigned long long extra =
      3 * resident + ((unsigned long long)headroomMiB() << 20);
  if (size)
    lowerLimit(RLIMIT_AS, size + extra);
  if (data)
    lowerLimit(RLIMIT_DATA, data + extra);
}

} // namespace

static bool libOnnxInProcess() {
  const char *env = std::getenv("KILN_ONNX_IN_PROCESS");
  return env && *env && *env != '0';
}

IsolatedOutcome runIsolated(llvm::function_ref<std::string()> step) {
  IsolatedOutcome outcome;
  if (libOnnxInProcess()) {
    try {
      outcome.result = step();
      outcome.status = IsolatedOutcome::Ok;
    } catch (const std::exception &e) {
      outcome.status = IsolatedOutcome::Threw;
      outcome.message = e.what();
    }
    return outcome;
  }
  int fds[2];
  if (::pipe(fds) != 0)
    fail("cannot create a pipe for libonnx's child process: {0}",
         std::strerror(errno));
  pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    fail("cannot fork libonnx's child process: {0}", std::strerror(errno));
  }
  if (pid == 0) {
    // The child: no destructors or atexit handlers of the parent's state,
    // and no crash handler of the parent's (LLVM's prints a stack dump):
    // a signal ends it quietly, and the parent reports it.
    ::close(fds[0]);
    for (int sig : {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTRAP})
      ::signal(sig, SIG_DFL);
    limitChildMemory();
    std::string out;
    try {
      out = std::string(1, kResult) + step();
    } catch (const std::bad_alloc &) {
      out = std::string(1, kThrew) +
            "ran out of the memory it may use (" +
            std::to_string(headroomMiB()) +
            " MiB beyond the model; KILN_ONNX_STEP_MEMORY_MB): the model "
            "declares sizes no real model has";
    } catch (const std::exception &e) {
      out = std::string(1, kThrew) + e.what();
    } catch (...) {
      out = std::string(1, kThrew) + "an unknown exception";
    }
    _exit(writeAll(fds[1], out.data(), out.size()) ? 0 : 3);
  }
  ::close(fds[1]);
  std::string data;
  auto deadline = std::chrono::steady_clock::now() +
                  std::chrono::seconds(timeoutSeconds());
  bool hung = false;
  char buffer[1 << 16];
  while (true) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                    deadline - std::chrono::steady_clock::now())
                    .count();
    if (left <= 0) {
      hung = true;
      break;
    }
    struct pollfd pfd = {fds[0], POLLIN, 0};
    int ready = ::poll(&pfd, 1, int(std::min<long long>(left, 1000)));
    if (ready < 0 && errno == EINTR)
      continue;
    if (ready == 0)
      continue;
    ssize_t n = ::read(fds[0], buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;
    data.append(buffer, size_t(n));
  }
  ::close(fds[0]);
  if (hung)
    ::kill(pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (hung) {
    outcome.status = IsolatedOutcome::Crashed;
    outcome.message = "did not finish within " +
                      std::to_string(timeoutSeconds()) +
                      " s (KILN_ONNX_STEP_TIMEOUT)";
  } else if (WIFSIGNALED(status)) {
    outcome.status = IsolatedOutcome::Crashed;
    int sig = WTERMSIG(status);
    outcome.message = std::string("crashed with signal ") +
                      std::to_string(sig) + " (" + strsignal(sig) + ")";
  } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || data.empty()) {
    outcome.status = IsolatedOutcome::Crashed;
    outcome.message = "ended without a result (exit status " +
                      std::to_string(WEXITSTATUS(status)) + ")";
  } else if (data[0] == kThrew) {
    outcome.status = IsolatedOutcome::Threw;
    outcome.message = data.substr(1);
  } else {
    outcome.status = IsolatedOutcome::Ok;
    outcome.result = data.substr(1);
  }
  return outcome;
}

} // namespace kiln::import
