//===- CublasLt.cpp - cuBLASLt GEMMs for kiln_rt_cuda_gemm ------------------===//
#include "CublasLt.h"
#include "CudaDriver.h"

#include "kiln/artifact_format.h"
#include "kiln/cuda_abi.h"

#include <cstdlib>
#include <limits>
#include <mutex>
#include <vector>

namespace kiln {
namespace cuda {

namespace {

// cublasLt.h's opaque algorithm and heuristic result (96 bytes).
struct MatmulAlgo {
  uint64_t data[8];
};
struct HeuristicResult {
  MatmulAlgo algo;
  size_t workspaceSize;
  int state;
  float wavesCount;
  int reserved[4];
};
static_assert(sizeof(HeuristicResult) == 96, "cublasLt.h's layout");

using Status = int;
using Handle = void *;
using Desc = void *;
using Layout = void *;
using Pref = void *;

} // namespace

struct CublasLt::Api {
  Status (*create)(Handle *);
  const char *(*statusString)(Status);
  Status (*descCreate)(Desc *, int, int);
  Status (*descDestroy)(Desc);
  Status (*descSet)(Desc, int, const void *, size_t);
  Status (*layoutCreate)(Layout *, int, uint64_t, uint64_t, int64_t);
  Status (*layoutDestroy)(Layout);
  Status (*layoutSet)(Layout, int, const void *, size_t);
  Status (*prefCreate)(Pref *);
  Status (*prefDestroy)(Pref);
  Status (*prefSet)(Pref, int, const void *, size_t);
  Status (*heuristic)(Handle, Desc, Layout, Layout, Layout, Layout, Pref, int,
                      HeuristicResult *, int *);
  Status (*matmul)(Handle, Desc, const void *, const void *, Layout,
                   const void *, Layout, const void *, const void *, Layout,
                   void *, Layout, const MatmulAlgo *, void *, size_t, void *);
};

std::string planGemm(const GemmArgs &g, GemmPlan &p) {
  switch (g.dtype) {
  case KILN_DTYPE_FLOAT32: p.dataType = CUDA_R_32F; break;
  case KILN_DTYPE_FLOAT16: p.dataType = CUDA_R_16F; break;
  case KILN_DTYPE_BFLOAT16: p.dataType = CUDA_R_16BF; break;
  default: {
    const char *name = kiln_dtype_name(g.dtype);
    return std::string("dtype ") +
           (name ? name : "code " + std::to_string(g.dtype)) +
           " is not supported by the cuBLASLt GEMM (float32, float16, "
           "bfloat16)";
  }
  }
  if (g.batch < 1 || g.m < 1 || g.n < 1 || g.k < 1)
    return "GEMM sizes must be positive (batch " + std::to_string(g.batch) +
           ", m " + std::to_string(g.m) + ", n " + std::to_string(g.n) +
           ", k " + std::to_string(g.k) + ")";
  if (g.bBatch != 1 && g.bBatch != g.batch)
    return "GEMM: B's batch " + std::to_string(g.bBatch) +
           " is neither 1 nor the batch " + std::to_string(g.batch);
  if (g.batch > std::numeric_limits<int32_t>::max())
    return "GEMM: batch " + std::to_string(g.batch) + " is too large";
  if (!g.a || !g.b || !g.c)
    return "GEMM: a NULL operand";
  bool bias = g.bias != nullptr;
  switch (g.epilogue) {
  case KILN_CUDA_EPILOGUE_NONE:
    p.epilogue = bias ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT;
    break;
  case KILN_CUDA_EPILOGUE_RELU:
    p.epilogue = bias ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_RELU;
    break;
  case KILN_CUDA_EPILOGUE_GELU:
    p.epilogue = bias ? CUBLASLT_EPILOGUE_GELU_BIAS : CUBLASLT_EPILOGUE_GELU;
    break;
  default:
    return "GEMM: unknown epilogue " + std::to_string(g.epilogue);
  }
  p.aRows = uint64_t(g.n);
  p.aCols = uint64_t(g.k);
  p.lda = g.n;
  p.strideA = g.bBatch == 1 ? 0 : g.n * g.k;
  p.bRows = uint64_t(g.k);
  p.bCols = uint64_t(g.m);
  p.ldb = g.k;
  p.strideB = g.m * g.k;
  p.dRows = uint64_t(g.n);
  p.dCols = uint64_t(g.m);
  p.ldd = g.n;
  p.strideD = g.m * g.n;
  p.batch = int32_t(g.batch);
  return "";
}

std::string checkQGemm(const QGemmArgs &g) {
  if (g.aFlags != KILN_CUDA_QGEMM_A_INT8)
    return "int8 GEMM: a_flags " + std::to_string(g.aFlags) +
           " is not supported (only KILN_CUDA_QGEMM_A_INT8: cuBLASLt's IMMA "
           "GEMM has no unsigned operand)";
  if (g.m < 1 || g.n < 1 || g.k < 1)
    return "int8 GEMM sizes must be positive (m " + std::to_string(g.m) +
           ", n " + std::to_string(g.n) + ", k " + std::to_string(g.k) + ")";
  if (g.n % 4 != 0 || g.k % 4 != 0)
    return "int8 GEMM: cuBLASLt's IMMA kernels need n and k multiples of 4 "
           "(n " +
           std::to_string(g.n) + ", k " + std::to_string(g.k) + ")";
  if (!g.a || !g.w || !g.c)
    return "int8 GEMM: a NULL operand";
  for (const void *p : {g.a, g.w, static_cast<const void *>(g.c)})
    if (reinterpret_cast<uintptr_t>(p) % 4 != 0)
      return "int8 GEMM: an operand is not 4-byte aligned";
  return "";
}

std::string CublasLt::load(CublasLt *&out) {
  return loadOnce(out, [](CublasLt *&loaded) -> std::string {
    std::string error;
    // $KILN_LIBCUBLASLT alone when set; else the loader's path, then the
    // toolkit's usual folders ($CUDA_HOME, /usr/local/cuda), newest first.
    std::string tried;
    void *h = openCudaLibrary(
        "KILN_LIBCUBLASLT",
        {"libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so"}, tried);
    if (!h) {
      error = "cuBLASLt not found (tried " + tried +
              "): the model uses library GEMMs (--kernels=library); install "
              "cuBLAS or compile with --kernels=codegen";
      return error;
    }
    auto *api = new Api;
    Symbols sym{h};
    sym(api->create, "cublasLtCreate");
    sym(api->statusString, "cublasLtGetStatusString");
    sym(api->descCreate, "cublasLtMatmulDescCreate");
    sym(api->descDestroy, "cublasLtMatmulDescDestroy");
    sym(api->descSet, "cublasLtMatmulDescSetAttribute");
    sym(api->layoutCreate, "cublasLtMatrixLayoutCreate");
    sym(api->layoutDestroy, "cublasLtMatrixLayoutDestroy");
    sym(api->layoutSet, "cublasLtMatrixLayoutSetAttribute");
    sym(api->prefCreate, "cublasLtMatmulPreferenceCreate");
    sym(api->prefDestroy, "cublasLtMatmulPreferenceDestroy");
    sym(api->prefSet, "cublasLtMatmulPreferenceSetAttribute");
    sym(api->heuristic, "cublasLtMatmulAlgoGetHeuristic");
    sym(api->matmul, "cublasLtMatmul");
    if (const char *missing = sym.missing) {
      delete api;
      error = std::string("cuBLASLt lacks ") + missing;
      return error;
    }
    Handle handle = nullptr;
    Status st = api->create(&handle);
    if (st != 0) {
      error = std::string("cublasLtCreate failed: ") + api->statusString(st);
      delete api;
      return error;
    }
    loaded = new CublasLt;
    loaded->api = api;
    loaded->handle = handle;
    return "";
  });
}

std::string CublasLt::run(const GemmArgs &g, const GemmPlan &p, void *stream,
                          void *workspace, uint64_t workspaceBytes) const {
  const Api &a = *api;
  Desc desc = nullptr;
  Layout la = nullptr, lb = nullptr, ld = nullptr;
  Pref pref = nullptr;
  std::string err;
  auto check = [&](Status st, const char *what) {
    if (st != 0 && err.empty())
      err = std::string(what) + " failed: " + a.statusString(st);
    return st == 0;
  };
  int32_t opN = CUBLAS_OP_N;
  int64_t biasStride = 0;
  bool ok =
      check(a.descCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F),
            "cublasLtMatmulDescCreate") &&
      check(a.descSet(desc, CUBLASLT_MATMUL_DESC_TRANSA, &opN, sizeof(opN)),
            "cublasLtMatmulDescSetAttribute(TRANSA)") &&
      check(a.descSet(desc, CUBLASLT_MATMUL_DESC_TRANSB, &opN, sizeof(opN)),
            "cublasLtMatmulDescSetAttribute(TRANSB)") &&
      check(a.descSet(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &p.epilogue,
                      sizeof(p.epilogue)),
            "cublasLtMatmulDescSetAttribute(EPILOGUE)");
  if (ok && g.bias)
    ok = check(a.descSet(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &g.bias,
                         sizeof(g.bias)),
               "cublasLtMatmulDescSetAttribute(BIAS_POINTER)") &&
         check(a.descSet(desc, CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE,
                         &biasStride, sizeof(biasStride)),
               "cublasLtMatmulDescSetAttribute(BIAS_BATCH_STRIDE)");
  auto layout = [&](Layout &l, uint64_t rows, uint64_t cols, int64_t ldv,
                    int64_t stride) {
    return check(a.layoutCreate(&l, p.dataType, rows, cols, ldv),
                 "cublasLtMatrixLayoutCreate") &&
           (p.batch == 1 ||
            (check(a.layoutSet(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &p.batch,
                               sizeof(p.batch)),
                   "cublasLtMatrixLayoutSetAttribute(BATCH_COUNT)") &&
             check(a.layoutSet(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                               &stride, sizeof(stride)),
                   "cublasLtMatrixLayoutSetAttribute(STRIDED_BATCH_OFFSET)")));
  };
  ok = ok && layout(la, p.aRows, p.aCols, p.lda, p.strideA) &&
       layout(lb, p.bRows, p.bCols, p.ldb, p.strideB) &&
       layout(ld, p.dRows, p.dCols, p.ldd, p.strideD);
  ok = ok && check(a.prefCreate(&pref), "cublasLtMatmulPreferenceCreate") &&
       check(a.prefSet(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                       &workspaceBytes, sizeof(workspaceBytes)),
             "cublasLtMatmulPreferenceSetAttribute");
  HeuristicResult result{};
  int found = 0;
  if (ok && check(a.heuristic(handle, desc, la, lb, ld, ld, pref, 1, &result,
                              &found),
                  "cublasLtMatmulAlgoGetHeuristic") &&
      found == 0)
    err = "cublasLtMatmulAlgoGetHeuristic found no algorithm";
  if (err.empty()) {
    float alpha = 1.0f, beta = 0.0f;
    check(a.matmul(handle, desc, &alpha, g.b, la, g.a, lb, &beta, g.c, ld, g.c,
                   ld, &result.algo, workspace, workspaceBytes, stream),
          "cublasLtMatmul");
  }
  if (pref)
    a.prefDestroy(pref);
  for (Layout l : {la, lb, ld})
    if (l)
      a.layoutDestroy(l);
  if (desc)
    a.descDestroy(desc);
  return err;
}

std::string CublasLt::runQGemm(const QGemmArgs &g, void *stream,
                               void *workspace,
                               uint64_t workspaceBytes) const {
  const Api &a = *api;
  Desc desc = nullptr;
  Layout la = nullptr, lb = nullptr, ld = nullptr;
  Pref pref = nullptr;
  std::string err;
  auto check = [&](Status st, const char *what) {
    if (st != 0 && err.empty())
      err = std::string(what) + " failed: " + a.statusString(st);
    return st == 0;
  };
  // D (n x m, = C row-major) = op(W stored k x n) * (A stored k x m), op =
  // transpose: the "TN" form IMMA requires.
  int32_t opT = CUBLAS_OP_T, opN = CUBLAS_OP_N;
  bool ok =
      check(a.descCreate(&desc, CUBLAS_COMPUTE_32I, CUDA_R_32I),
            "cublasLtMatmulDescCreate") &&
      check(a.descSet(desc, CUBLASLT_MATMUL_DESC_TRANSA, &opT, sizeof(opT)),
            "cublasLtMatmulDescSetAttribute(TRANSA)") &&
      check(a.descSet(desc, CUBLASLT_MATMUL_DESC_TRANSB, &opN, sizeof(opN)),
            "cublasLtMatmulDescSetAttribute(TRANSB)") &&
      check(a.layoutCreate(&la, CUDA_R_8I, uint64_t(g.k), uint64_t(g.n), g.k),
            "cublasLtMatrixLayoutCreate") &&
      check(a.layoutCreate(&lb, CUDA_R_8I, uint64_t(g.k), uint64_t(g.m), g.k),
            "cublasLtMatrixLayoutCreate") &&
      check(a.layoutCreate(&ld, CUDA_R_32I, uint64_t(g.n), uint64_t(g.m), g.n),
            "cublasLtMatrixLayoutCreate") &&
      check(a.prefCreate(&pref), "cublasLtMatmulPreferenceCreate") &&
      check(a.prefSet(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                      &workspaceBytes, sizeof(workspaceBytes)),
            "cublasLtMatmulPreferenceSetAttribute");
  HeuristicResult result{};
  int found = 0;
  if (ok && check(a.heuristic(handle, desc, la, lb, ld, ld, pref, 1, &result,
                              &found),
                  "cublasLtMatmulAlgoGetHeuristic") &&
      found == 0)
    err = "cublasLtMatmulAlgoGetHeuristic found no int8 algorithm";
  if (err.empty()) {
    int32_t alpha = 1, beta = 0;
    check(a.matmul(handle, desc, &alpha, g.w, la, g.a, lb, &beta, g.c, ld,
                   g.c, ld, &result.algo, workspace, workspaceBytes, stream),
          "cublasLtMatmul");
  }
  if (pref)
    a.prefDestroy(pref);
  for (Layout l : {la, lb, ld})
    if (l)
      a.layoutDestroy(l);
  if (desc)
    a.descDestroy(desc);
  return err;
}

} // namespace cuda
} // namespace kiln
