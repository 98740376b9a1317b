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
constexpr int CUDA_R_8I = 3;
constexpr int CUDA_R_32I = 10;
constexpr int CUBLAS_COMPUTE_32F = 68;
constexpr int CUBLAS_COMPUTE_32I = 72;
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

/// One int8 GEMM of the table's `qgemm` entry (cuda_abi.h): C[m, n] =
/// sum_k A[m, k] * W[n, k], int8 x int8 -> int32, all row-major.
struct QGemmArgs {
  int64_t m, n, k;
  const void *a;
  int32_t aFlags; ///< KILN_CUDA_QGEMM_A_INT8
  const void *w;
  void *c;
};

/// Checks a qgemm call against cuBLASLt's IMMA requirements (n and k
/// multiples of 4, 4-byte aligned pointers); "" or what is wrong. Its
/// layout ("TN", the transposition trick again: D = C^T = W * A^T in
/// column-major): cuBLASLt's A is W stored k x n with ld k and transposed,
/// its B our A, k x m with ld k, D is n x m with ld n.
std::string checkQGemm(const QGemmArgs &args);

/// The process's cuBLASLt, loaded on first use.
class CublasLt {
public:
  /// Loads libcublasLt and creates a handle; "" or why not.
  static std::string load(CublasLt *&out);

  /// Runs the planned GEMM on `stream` with `workspace` (device memory of
  /// `workspaceBytes`); "" or "cublasLtMatmul failed: ...".
  std::string run(const GemmArgs &args, const GemmPlan &plan, void *stream,
                  void *workspace, uint64_t workspaceBytes) const;
  /// Runs a checked int8 GEMM (CUBLAS_COMPUTE_32I, int32 scale, CUDA_R_8I
  /// operands, CUDA_R_32I output: IMMA tensor cores) on `stream`.
  std::string runQGemm(const QGemmArgs &args, void *stream, void *workspace,
                       uint64_t workspaceBytes) const;

  struct Api;
  const Api *api = nullptr;
  void *handle = nullptr;
};

} // namespace cuda
} // namespace kiln

#endif // KILN_RUNTIME_CUDA_CUBLASLT_H
