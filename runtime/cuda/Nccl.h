//===- Nccl.h - NCCL for the all-reduces of tensor-parallel models -*- C++ -*-===//
//
// The `all_reduce` entry of the CUDA function table (cuda_abi.h) sums a
// device buffer over the ranks of a tensor-parallel group with NCCL, on the
// session's stream. NCCL is loaded with dlopen ($KILN_LIBNCCL, else
// libnccl.so.2 / libnccl.so on the loader's path and the toolkit's folders)
// the first time a tensor-parallel session opens, so no other model needs
// it. The communicator is made over MPI (docs/cluster.md): rank 0 calls
// ncclGetUniqueId, MPI_Bcast carries the id, every rank calls
// ncclCommInitRank on its own GPU. Types and constants are nccl.h's.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_RUNTIME_CUDA_NCCL_H
#define KILN_RUNTIME_CUDA_NCCL_H

#include <cstddef>
#include <cstdint>
#include <string>

namespace kiln {
namespace cuda {

// nccl.h values.
constexpr int kNcclFloat16 = 6;
constexpr int kNcclFloat32 = 7;
constexpr int kNcclBfloat16 = 9;
constexpr int kNcclSum = 0;
constexpr size_t kNcclUniqueIdBytes = 128;

/// nccl.h's ncclUniqueId (passed by value to ncclCommInitRank).
struct NcclUniqueId {
  char internal[kNcclUniqueIdBytes];
};

struct Nccl {
  int (*getVersion)(int *version);
  int (*getUniqueId)(NcclUniqueId *id);
  int (*commInitRank)(void **comm, int nranks, NcclUniqueId id, int rank);
  int (*allReduce)(const void *send, void *recv, size_t count, int dtype,
                   int op, void *comm, void *stream);
  int (*commDestroy)(void *comm);
  const char *(*errorString)(int result);
  int version = 0; ///< ncclGetVersion's, e.g. 22703 for 2.27.3

  /// NCCL, loaded once per process; "" or why it cannot be used.
  static std::string load(const Nccl *&out);
  /// "NCCL 2.27.3".
  std::string versionString() const;
};

/// The NCCL data type of a kiln_dtype (float32, float16, bfloat16), or -1.
int ncclTypeOf(int32_t kilnDtype);

} // namespace cuda
} // namespace kiln

#endif // KILN_RUNTIME_CUDA_NCCL_H
