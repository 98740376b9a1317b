/*===- FakeCublasLt.c - A stand-in cuBLASLt that computes on the host -----===*
 *
 * The cuBLASLt entry points runtime/cuda/CublasLt.cpp uses, implemented on
 * the host for float32 (and int8 x int8 -> int32 in the "TN" form of the
 * IMMA kernels, for kiln_rt_cuda_qgemm): descriptors and layouts record
 * their attributes and cublasLtMatmul computes D = epilogue(op(A) * op(B)
 * + bias) column-major, batched with the layouts' strides, exactly as
 * cuBLASLt defines it. The
 * runtime's row-major GEMM (the transposition trick, the bias per row of D,
 * the epilogues, shared or per-batch B) is then checked against a plain
 * row-major loop without a GPU. Loaded through $KILN_LIBCUBLASLT.
 *
 *===----------------------------------------------------------------------===*/
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

enum { OK = 0, NOT_SUPPORTED = 15, INVALID_VALUE = 7 };

EXPORT struct {
  int matmuls;
  int lastComputeType, lastScaleType;
  int lastTransA, lastTransB;
  uint32_t lastEpilogue;
} fake_cublaslt_state;
#define S fake_cublaslt_state

struct Desc {
  int compute, scale, transa, transb;
  uint32_t epilogue;
  const void *bias;
  int64_t biasStride;
};
struct Layout {
  int type;
  uint64_t rows, cols;
  int64_t ld;
  int32_t batch;
  int64_t stride;
};

EXPORT int cublasLtCreate(void **h) {
  static char handle;
  *h = &handle;
  return OK;
}

EXPORT const char *cublasLtGetStatusString(int s) {
  switch (s) {
  case OK: return "CUBLAS_STATUS_SUCCESS";
  case NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
  case INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
  default: return "CUBLAS_STATUS_UNKNOWN";
  }
}

EXPORT int cublasLtMatmulDescCreate(void **d, int compute, int scale) {
  struct Desc *x = calloc(1, sizeof(*x));
  x->compute = compute;
  x->scale = scale;
  x->epilogue = 1;
  *d = x;
  return OK;
}

EXPORT int cublasLtMatmulDescDestroy(void *d) {
  free(d);
  return OK;
}

EXPORT int cublasLtMatmulDescSetAttribute(void *d, int attr, const void *buf,
                                          size_t size) {
  struct Desc *x = d;
  switch (attr) {
  case 3: memcpy(&x->transa, buf, size); return OK;
  case 4: memcpy(&x->transb, buf, size); return OK;
  case 7: memcpy(&x->epilogue, buf, size); return OK;
  case 8: memcpy(&x->bias, buf, size); return OK;
  case 10: memcpy(&x->biasStride, buf, size); return OK;
  default: return INVALID_VALUE;
  }
}

EXPORT int cublasLtMatrixLayoutCreate(void **l, int type, uint64_t rows,
                                      uint64_t cols, int64_t ld) {
  struct Layout *x = calloc(1, sizeof(*x));
  x->type = type;
  x->rows = rows;
  x->cols = cols;
  x->ld = ld;
  x->batch = 1;
  *l = x;
  return OK;
}

EXPORT int cublasLtMatrixLayoutDestroy(void *l) {
  free(l);
  return OK;
}

EXPORT int cublasLtMatrixLayoutSetAttribute(void *l, int attr,
                                            const void *buf, size_t size) {
  struct Layout *x = l;
  switch (attr) {
  case 5: memcpy(&x->batch, buf, size); return OK;
  case 6: memcpy(&x->stride, buf, size); return OK;
  default: return INVALID_VALUE;
  }
}

EXPORT int cublasLtMatmulPreferenceCreate(void **p) {
  *p = calloc(1, 16);
  return OK;
}

EXPORT int cublasLtMatmulPreferenceDestroy(void *p) {
  free(p);
  return OK;
}

EXPORT int cublasLtMatmulPreferenceSetAttribute(void *p, int attr,
                                                const void *buf,
                                                size_t size) {
  (void)p, (void)buf, (void)size;
  return attr == 1 ? OK : INVALID_VALUE;
}

EXPORT int cublasLtMatmulAlgoGetHeuristic(void *h, void *d, void *a, void *b,
                                          void *c, void *dd, void *pref,
                                          int requested, void *results,
                                          int *count) {
  (void)h, (void)d, (void)a, (void)b, (void)c, (void)dd, (void)pref;
  memset(results, 0, 96 * (size_t)requested);
  *count = 1;
  return OK;
}

/* int8 x int8 -> int32 as cuBLASLt's IMMA kernels (regular layouts) take
 * it: compute CUBLAS_COMPUTE_32I with int32 scale, A and B CUDA_R_8I, D
 * CUDA_R_32I, op(A) = A^T and op(B) = B ("TN", the only form), leading
 * dimensions and D's rows and k multiples of 4; anything else is
 * NOT_SUPPORTED, as the heuristic would find no algorithm. */
static int int8Matmul(struct Desc *d, const void *alpha, const void *A,
                      struct Layout *la, const void *B, struct Layout *lb,
                      const void *beta, void *D, struct Layout *ld) {
  if (d->compute != 72 || d->scale != 10 || lb->type != 3 ||
      ld->type != 10 || d->transa != 1 || d->transb != 0 ||
      d->epilogue != 1)
    return NOT_SUPPORTED;
  if (la->batch != 1 || lb->batch != 1 || ld->batch != 1)
    return NOT_SUPPORTED;
  /* op(A) = A^T: A is stored k x rows(D). */
  uint64_t m = ld->rows, n = ld->cols, k = la->rows;
  if (la->cols != m || lb->rows != k || lb->cols != n)
    return INVALID_VALUE;
  if (la->ld % 4 || lb->ld % 4 || ld->ld % 4 || m % 4 || k % 4)
    return NOT_SUPPORTED;
  int32_t a = *(const int32_t *)alpha, bt = *(const int32_t *)beta;
  const int8_t *pa = A, *pb = B;
  int32_t *pd = D;
  for (uint64_t i = 0; i < m; ++i)
    for (uint64_t j = 0; j < n; ++j) {
      int32_t acc = 0;
      for (uint64_t p = 0; p < k; ++p)
        acc += (int32_t)pa[p + i * la->ld] * (int32_t)pb[p + j * lb->ld];
      pd[i + j * ld->ld] = a * acc + (bt != 0 ? bt * pd[i + j * ld->ld] : 0);
    }
  ++S.matmuls;
  return OK;
}

EXPORT int cublasLtMatmul(void *h, void *desc, const void *alpha,
                          const void *A, void *Adesc, const void *B,
                          void *Bdesc, const void *beta, const void *C,
                          void *Cdesc, void *D, void *Ddesc, const void *algo,
                          void *ws, size_t wsSize, void *stream) {
  (void)h, (void)C, (void)Cdesc, (void)algo, (void)ws, (void)wsSize,
      (void)stream;
  struct Desc *d = desc;
  struct Layout *la = Adesc, *lb = Bdesc, *ld = Ddesc;
  S.lastComputeType = d->compute;
  S.lastScaleType = d->scale;
  S.lastTransA = d->transa;
  S.lastTransB = d->transb;
  S.lastEpilogue = d->epilogue;
  if (la->type == 3) /* CUDA_R_8I */
    return int8Matmul(d, alpha, A, la, B, lb, beta, D, ld);
  if (la->type != 0 || lb->type != 0 || ld->type != 0 || d->transa ||
      d->transb)
    return NOT_SUPPORTED; /* the stand-in does float32, N/N only */
  if (la->cols != lb->rows || la->rows != ld->rows || lb->cols != ld->cols ||
      la->batch != ld->batch || lb->batch != ld->batch)
    return INVALID_VALUE;
  float a = *(const float *)alpha, bt = *(const float *)beta;
  uint64_t m = ld->rows, n = ld->cols, k = la->cols;
  for (int32_t bi = 0; bi < ld->batch; ++bi) {
    const float *pa = (const float *)A + bi * la->stride;
    const float *pb = (const float *)B + bi * lb->stride;
    float *pd = (float *)D + bi * ld->stride;
    const float *bias = d->bias ? (const float *)d->bias + bi * d->biasStride
                                : NULL;
    for (uint64_t i = 0; i < m; ++i)
      for (uint64_t j = 0; j < n; ++j) {
        float acc = 0;
        for (uint64_t p = 0; p < k; ++p)
          acc += pa[i + p * la->ld] * pb[p + j * lb->ld];
        /* beta 0: D is not read (it may hold anything), as in cuBLASLt */
        float v = a * acc + (bt != 0 ? bt * pd[i + j * ld->ld] : 0);
        if (d->epilogue & 4) /* BIAS */
          v += bias ? bias[i] : 0;
        if (d->epilogue & 2) /* RELU */
          v = v > 0 ? v : 0;
        if (d->epilogue & 32) /* GELU (tanh) */
          v = 0.5f * v *
              (1 + tanhf(0.7978845608f * (v + 0.044715f * v * v * v)));
        pd[i + j * ld->ld] = v;
      }
  }
  ++S.matmuls;
  return OK;
}
