/*===- FakeCudnn.c - A stand-in cuDNN that computes on the host -----------===*
 *
 * The cuDNN 9 legacy entry points runtime/cuda/Cudnn.cpp uses, implemented
 * on the host for float32: descriptors record their values,
 * cudnnConvolutionForward computes the NCHW cross-correlation (pads,
 * strides, dilations, groups) as cuDNN defines it, cudnnAddTensor
 * broadcasts a [1, K, 1, 1] bias, cudnnActivationForward applies ReLU. The
 * runtime's call (argument order, descriptors, epilogue, workspace) is then
 * checked numerically against a plain loop without a GPU: the "device"
 * pointers of test/Runtime/FakeCuda.c are host memory. Loaded through
 * $KILN_LIBCUDNN.
 *
 * The heuristics offer an algorithm wanting 64 KiB of workspace first (and
 * one wanting none second), so the runtime's workspace path is exercised;
 * the convolution refuses a missing or short workspace. `failCall` makes
 * the named entry point fail with CUDNN_STATUS_EXECUTION_FAILED.
 *
 *===----------------------------------------------------------------------===*/
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

enum {
  OK = 0,
  BAD_PARAM = 2000,
  NOT_SUPPORTED = 3000,
  EXECUTION_FAILED = 5000,
};

enum { kWorkspaceAlgo = 1, kNoWorkspaceAlgo = 0 };
#define WORKSPACE_BYTES ((size_t)64 << 10)

EXPORT struct {
  char failCall[64];
  int handlesCreated, handlesDestroyed;
  int convolutions, biasAdds, activations;
  int heuristicsCalls;
  void *lastStream;
  int lastAlgo, lastMathType, lastComputeType, lastMode, lastGroups;
  int lastNanOpt;
  size_t lastWorkspaceBytes;
  int liveDescriptors;
} fake_cudnn_state;
#define S fake_cudnn_state

static int failing(const char *name) {
  return S.failCall[0] && strcmp(S.failCall, name) == 0;
}
#define FAIL_IF(name)                                                          \
  do {                                                                         \
    if (failing(name))                                                         \
      return EXECUTION_FAILED;                                                 \
  } while (0)

struct Handle {
  void *stream;
};
struct Tensor {
  int format, type, n, c, h, w;
};
struct Filter {
  int type, format, k, c, h, w;
};
struct Conv {
  int padH, padW, u, v, dilH, dilW, mode, compute, groups, math;
};
struct Act {
  int mode, nanOpt;
  double coef;
};

EXPORT const char *cudnnGetErrorString(int s) {
  switch (s) {
  case OK:
    return "CUDNN_STATUS_SUCCESS";
  case BAD_PARAM:
    return "CUDNN_STATUS_BAD_PARAM";
  case NOT_SUPPORTED:
    return "CUDNN_STATUS_NOT_SUPPORTED";
  case EXECUTION_FAILED:
    return "CUDNN_STATUS_EXECUTION_FAILED";
  default:
    return "CUDNN_STATUS_UNKNOWN";
  }
}

EXPORT int cudnnCreate(void **h) {
  FAIL_IF("cudnnCreate");
  *h = calloc(1, sizeof(struct Handle));
  ++S.handlesCreated;
  return OK;
}
EXPORT int cudnnDestroy(void *h) {
  free(h);
  ++S.handlesDestroyed;
  return OK;
}
EXPORT int cudnnSetStream(void *h, void *stream) {
  FAIL_IF("cudnnSetStream");
  ((struct Handle *)h)->stream = stream;
  S.lastStream = stream;
  return OK;
}

#define CREATE_DESTROY(Type, create, destroy)                                  \
  EXPORT int create(void **d) {                                                \
    *d = calloc(1, sizeof(struct Type));                                       \
    ++S.liveDescriptors;                                                       \
    return OK;                                                                 \
  }                                                                            \
  EXPORT int destroy(void *d) {                                                \
    free(d);                                                                   \
    --S.liveDescriptors;                                                       \
    return OK;                                                                 \
  }
CREATE_DESTROY(Tensor, cudnnCreateTensorDescriptor,
               cudnnDestroyTensorDescriptor)
CREATE_DESTROY(Filter, cudnnCreateFilterDescriptor,
               cudnnDestroyFilterDescriptor)
CREATE_DESTROY(Conv, cudnnCreateConvolutionDescriptor,
               cudnnDestroyConvolutionDescriptor)
CREATE_DESTROY(Act, cudnnCreateActivationDescriptor,
               cudnnDestroyActivationDescriptor)

EXPORT int cudnnSetTensor4dDescriptor(void *d, int format, int type, int n,
                                      int c, int h, int w) {
  struct Tensor *t = d;
  if (n < 1 || c < 1 || h < 1 || w < 1)
    return BAD_PARAM;
  t->format = format, t->type = type;
  t->n = n, t->c = c, t->h = h, t->w = w;
  return OK;
}

/* Note the order: data type, then format (unlike the tensor's). */
EXPORT int cudnnSetFilter4dDescriptor(void *d, int type, int format, int k,
                                      int c, int h, int w) {
  struct Filter *f = d;
  if (k < 1 || c < 1 || h < 1 || w < 1)
    return BAD_PARAM;
  f->type = type, f->format = format;
  f->k = k, f->c = c, f->h = h, f->w = w;
  return OK;
}

EXPORT int cudnnSetConvolution2dDescriptor(void *d, int padH, int padW, int u,
                                           int v, int dilH, int dilW, int mode,
                                           int compute) {
  struct Conv *x = d;
  if (padH < 0 || padW < 0 || u < 1 || v < 1 || dilH < 1 || dilW < 1)
    return BAD_PARAM;
  x->padH = padH, x->padW = padW, x->u = u, x->v = v;
  x->dilH = dilH, x->dilW = dilW, x->mode = mode, x->compute = compute;
  x->groups = 1;
  return OK;
}
EXPORT int cudnnSetConvolutionGroupCount(void *d, int groups) {
  ((struct Conv *)d)->groups = groups;
  return OK;
}
EXPORT int cudnnSetConvolutionMathType(void *d, int math) {
  ((struct Conv *)d)->math = math;
  return OK;
}

/* The shapes agree as cuDNN requires (else BAD_PARAM). */
static int checkShapes(const struct Tensor *x, const struct Filter *w,
                       const struct Conv *c, const struct Tensor *y) {
  if (x->format != 0 || y->format != 0 || w->format != 0)
    return NOT_SUPPORTED; /* NCHW only */
  if (x->type != w->type || x->type != y->type)
    return BAD_PARAM;
  if (x->c != w->c * c->groups || w->k != y->c || x->n != y->n ||
      w->k % c->groups)
    return BAD_PARAM;
  int p = (x->h + 2 * c->padH - c->dilH * (w->h - 1) - 1) / c->u + 1;
  int q = (x->w + 2 * c->padW - c->dilW * (w->w - 1) - 1) / c->v + 1;
  return p == y->h && q == y->w ? OK : BAD_PARAM;
}

/* cudnnConvolutionFwdAlgoPerf_t (48 bytes). */
struct Perf {
  int algo, status;
  float time;
  size_t memory;
  int determinism, mathType, reserved[3];
};

EXPORT int cudnnGetConvolutionForwardAlgorithm_v7(void *h, void *xd, void *wd,
                                                  void *cd, void *yd,
                                                  int requested, int *returned,
                                                  struct Perf *perf) {
  (void)h;
  FAIL_IF("cudnnGetConvolutionForwardAlgorithm_v7");
  ++S.heuristicsCalls;
  int st = checkShapes(xd, wd, cd, yd);
  if (st != OK)
    return st;
  struct Perf list[2] = {
      {kWorkspaceAlgo,
       OK,
       -1,
       WORKSPACE_BYTES,
       1,
       ((struct Conv *)cd)->math,
       {0}},
      {kNoWorkspaceAlgo, OK, -1, 0, 1, ((struct Conv *)cd)->math, {0}}};
  int n = requested < 2 ? requested : 2;
  memcpy(perf, list, sizeof(struct Perf) * (size_t)n);
  *returned = n;
  return OK;
}

EXPORT int cudnnGetConvolutionForwardWorkspaceSize(void *h, void *xd, void *wd,
                                                   void *cd, void *yd, int algo,
                                                   size_t *bytes) {
  (void)h;
  int st = checkShapes(xd, wd, cd, yd);
  if (st != OK)
    return st;
  *bytes = algo == kWorkspaceAlgo ? WORKSPACE_BYTES : 0;
  return OK;
}

EXPORT int cudnnConvolutionForward(void *h, const void *alpha, void *xd,
                                   const void *xp, void *wd, const void *wp,
                                   void *cd, int algo, void *ws, size_t wsBytes,
                                   const void *beta, void *yd, void *yp) {
  (void)h;
  FAIL_IF("cudnnConvolutionForward");
  struct Tensor *xt = xd, *yt = yd;
  struct Filter *f = wd;
  struct Conv *c = cd;
  int st = checkShapes(xt, f, c, yt);
  if (st != OK)
    return st;
  if (xt->type != 0 || c->compute != 0)
    return NOT_SUPPORTED; /* the stand-in does float32 only */
  if (algo == kWorkspaceAlgo && (!ws || wsBytes < WORKSPACE_BYTES))
    return BAD_PARAM;
  S.lastAlgo = algo;
  S.lastMathType = c->math;
  S.lastComputeType = c->compute;
  S.lastMode = c->mode;
  S.lastGroups = c->groups;
  S.lastWorkspaceBytes = wsBytes;
  /* The workspace is device memory the call may scribble on. */
  if (ws)
    memset(ws, 0xa5, wsBytes);
  const float *x = xp, *w = wp;
  float *y = yp, a = *(const float *)alpha, b = *(const float *)beta;
  int kPerGroup = f->k / c->groups;
  for (int n = 0; n < yt->n; ++n)
    for (int k = 0; k < yt->c; ++k) {
      int g = k / kPerGroup;
      for (int p = 0; p < yt->h; ++p)
        for (int q = 0; q < yt->w; ++q) {
          float acc = 0;
          for (int ci = 0; ci < f->c; ++ci)
            for (int r = 0; r < f->h; ++r)
              for (int s = 0; s < f->w; ++s) {
                /* CUDNN_CONVOLUTION would flip the filter. */
                int rr = c->mode == 1 ? r : f->h - 1 - r;
                int ss = c->mode == 1 ? s : f->w - 1 - s;
                int ih = p * c->u - c->padH + r * c->dilH;
                int iw = q * c->v - c->padW + s * c->dilW;
                if (ih < 0 || ih >= xt->h || iw < 0 || iw >= xt->w)
                  continue;
                int cIn = g * f->c + ci;
                acc += x[((n * xt->c + cIn) * xt->h + ih) * xt->w + iw] *
                       w[((k * f->c + ci) * f->h + rr) * f->w + ss];
              }
          float *out = &y[((n * yt->c + k) * yt->h + p) * yt->w + q];
          /* beta 0: y is not read (it may hold anything), as in cuDNN */
          *out = a * acc + (b != 0 ? b * *out : 0);
        }
    }
  ++S.convolutions;
  return OK;
}

EXPORT int cudnnAddTensor(void *h, const void *alpha, void *ad, const void *ap,
                          const void *beta, void *cd, void *cp) {
  (void)h;
  FAIL_IF("cudnnAddTensor");
  struct Tensor *at = ad, *ct = cd;
  /* A broadcasts where its dims are 1 (here: a [1, K, 1, 1] bias). */
  if ((at->n != 1 && at->n != ct->n) || (at->c != 1 && at->c != ct->c) ||
      (at->h != 1 && at->h != ct->h) || (at->w != 1 && at->w != ct->w) ||
      at->type != ct->type)
    return BAD_PARAM;
  if (ct->type != 0)
    return NOT_SUPPORTED;
  const float *A = ap;
  float *C = cp, a = *(const float *)alpha, b = *(const float *)beta;
  for (int n = 0; n < ct->n; ++n)
    for (int c = 0; c < ct->c; ++c)
      for (int i = 0; i < ct->h; ++i)
        for (int j = 0; j < ct->w; ++j) {
          float av =
              A[(((at->n == 1 ? 0 : n) * at->c + (at->c == 1 ? 0 : c)) * at->h +
                 (at->h == 1 ? 0 : i)) *
                    at->w +
                (at->w == 1 ? 0 : j)];
          float *cv = &C[((n * ct->c + c) * ct->h + i) * ct->w + j];
          *cv = a * av + b * *cv;
        }
  ++S.biasAdds;
  return OK;
}

EXPORT int cudnnSetActivationDescriptor(void *d, int mode, int nanOpt,
                                        double coef) {
  struct Act *x = d;
  x->mode = mode, x->nanOpt = nanOpt, x->coef = coef;
  return OK;
}

EXPORT int cudnnActivationForward(void *h, void *ad, const void *alpha,
                                  void *xd, const void *xp, const void *beta,
                                  void *yd, void *yp) {
  (void)h;
  FAIL_IF("cudnnActivationForward");
  struct Act *act = ad;
  struct Tensor *xt = xd, *yt = yd;
  if (act->mode != 1)
    return NOT_SUPPORTED; /* RELU only */
  if (xt->type != 0 || memcmp(xt, yt, sizeof(*xt)) != 0)
    return BAD_PARAM;
  S.lastNanOpt = act->nanOpt;
  const float *x = xp;
  float *y = yp, a = *(const float *)alpha, b = *(const float *)beta;
  size_t count = (size_t)xt->n * xt->c * xt->h * xt->w;
  for (size_t i = 0; i < count; ++i) {
    float v = x[i] > 0 || x[i] != x[i] ? x[i] : 0;
    y[i] = a * v + (b != 0 ? b * y[i] : 0);
  }
  ++S.activations;
  return OK;
}
