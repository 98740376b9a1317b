//===- CublasLt.h - cuBLASLt GEMMs for kiln_rt_cuda_gemm --------*- C++ -*-===//
//
// The `gemm` entry of the CUDA function table: a row-major batched GEMM
// with an optional bias and ReLU/GELU epilogue through cuBLASLt, loaded with
// dlopen (libcublasLt.so.13, .so.12, .so) the first time a model calls it,
// so models without library kernels never need it. Types and constants are
// declared here (cublasLt.h's values; CudaConstantsTest checks them where a
// toolkit is installed).
//
//===----------------------------------------------------------------------===//
#ifndef KILN_RUNTIME_CUDA_CUBLASLT_H
#define KILN_RUNTIME_CUDA_CUBLASLT_H

#include <cstdint>
#include <string>

namespace kiln {
namespace cuda {

// cublasLt.h / library_types.h values.
constexpr int CUDA_R_32F = 0;
constexpr int CUDA_R_16F = 2;
constexpr int CUDA_R_16BF = 14;
constexpr int CUBLAS_COMPUTE_32F = 68;
constexpr int CUBLAS_OP_N = 0;
constexpr int CUBLAS_OP_T = 1;
constexpr int CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT = 5;
constexpr int CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET = 6;
constexpr int CUBLASLT_MATMUL_DESC_TRANSA = 3;
constexpr int CUBLASLT_MATMUL_DESC_TRANSB = 4;
constexpr int CUBLASLT_MATMUL_DESC_EPILOGUE = 7;
constexpr int CUBLASLT_MATMUL_DESC_BIAS_POINTER = 8;
constexpr int CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE = 10;
constexpr int CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES = 1;
constexpr uint32_t CUBLASLT_EPILOGUE_DEFAULT = 1;
constexpr uint32_t CUBLASLT_EPILOGUE_RELU = 2;
constexpr uint32_t CUBLASLT_EPILOGUE_BIAS = 4;
constexpr uint32_t CUBLASLT_EPILOGUE_RELU_BIAS = 6;
constexpr uint32_t CUBLASLT_EPILOGUE_GELU = 32;
constexpr uint32_t CUBLASLT_EPILOGUE_GELU_BIAS = 36;

/// One GEMM of the table's `gemm` entry (cuda_abi.h): C[b] =
/// epilogue(A[b] * B[b or 0] + bias), all row-major.
struct GemmArgs {
  int32_t dtype;    ///< kiln_dtype: float32, float16, bfloat16
  int32_t epilogue; ///< kiln_cuda_epilogue
  int64_t batch, bBatch, m, n, k;
  const void *a, *b, *bias;
  void *c;
};

/// How a row-major GEMM maps onto column-major cuBLASLt: C^T = B^T * A^T,
/// so cuBLASLt's "A" is our B (n x k column-major, ld n), its "B" is our A
/// (k x m, ld k) and D is C^T (n x m, ld n); the bias (length n) is then
/// per row of D, which is what cuBLASLt's BIAS epilogues add.
struct GemmPlan {
  int dataType;          ///< CUDA_R_*
  uint32_t epilogue;     ///< CUBLASLT_EPILOGUE_*
  uint64_t aRows, aCols; ///< cuBLASLt's A (= our B)
  int64_t lda, strideA;  ///< 0 stride: B shared across the batch
  uint64_t bRows, bCols; ///< cuBLASLt's B (= our A)
  int64_t ldb, strideB;
  uint64_t dRows, dCols;
  int64_t ldd, strideD;
  int32_t batch;
};

/// Checks `args` and plans the call; "" or what is wrong ("dtype int8 is
/// not supported by the cuBLASLt GEMM (float32, float16, bfloat16)").
std::string planGemm(const GemmArgs &args, GemmPlan &plan);

/// The process's cuBLASLt, loaded on first use.
class CublasLt {
public:
  /// Loads libcublasLt and creates a handle; "" or why not.
  static std::string load(CublasLt *&out);

  /// Runs the planned GEMM on `stream` with `workspace` (device memory of
  /// `workspaceBytes`); "" or "cublasLtMatmul failed: ...".
  std::string run(const GemmArgs &args, const GemmPlan &plan, void *stream,
                  void *workspace, uint64_t workspaceBytes) const;

  struct Api;
  const Api *api = nullptr;
  void *handle = nullptr;
};

} // namespace cuda
} // namespace kiln

#endif // KILN_RUNTIME_CUDA_CUBLASLT_H
