//===- Cudnn.cpp - cuDNN convolutions for kiln_rt_cuda_conv2d -------------===//
#include "Cudnn.h"
#include "CudaDriver.h"

#include "kiln/artifact_format.h"
#include "kiln/cuda_abi.h"

#include <cstdlib>
#include <limits>
#include <mutex>
#include <type_traits>
#include <vector>

namespace kiln {
namespace cuda {

namespace {

// cudnn_cnn.h's cudnnConvolutionFwdAlgoPerf_t.
struct FwdAlgoPerf {
  int algo;
  int status;
  float time;
  size_t memory;
  int determinism;
  int mathType;
  int reserved[3];
};
static_assert(sizeof(FwdAlgoPerf) == 48, "cudnn_cnn.h's layout");

using Status = int;
using Handle = void *;
using TensorDesc = void *;
using FilterDesc = void *;
using ConvDesc = void *;
using ActDesc = void *;

// cuDNN's heuristics list every forward algorithm (8) at most.
constexpr int kAlgoCount = 8;

} // namespace

struct Cudnn::Api {
  Status (*create)(Handle *);
  Status (*destroy)(Handle);
  Status (*setStream)(Handle, void *);
  const char *(*errorString)(Status);
  Status (*createTensor)(TensorDesc *);
  Status (*setTensor4d)(TensorDesc, int, int, int, int, int, int);
  Status (*destroyTensor)(TensorDesc);
  Status (*createFilter)(FilterDesc *);
  Status (*setFilter4d)(FilterDesc, int, int, int, int, int, int);
  Status (*destroyFilter)(FilterDesc);
  Status (*createConv)(ConvDesc *);
  Status (*setConv2d)(ConvDesc, int, int, int, int, int, int, int, int);
  Status (*setGroupCount)(ConvDesc, int);
  Status (*setMathType)(ConvDesc, int);
  Status (*destroyConv)(ConvDesc);
  Status (*getAlgorithmV7)(Handle, TensorDesc, FilterDesc, ConvDesc, TensorDesc,
                           int, int *, FwdAlgoPerf *);
  Status (*getWorkspaceSize)(Handle, TensorDesc, FilterDesc, ConvDesc,
                             TensorDesc, int, size_t *);
  Status (*forward)(Handle, const void *, TensorDesc, const void *, FilterDesc,
                    const void *, ConvDesc, int, void *, size_t, const void *,
                    TensorDesc, void *);
  Status (*addTensor)(Handle, const void *, TensorDesc, const void *,
                      const void *, TensorDesc, void *);
  Status (*createActivation)(ActDesc *);
  Status (*setActivation)(ActDesc, int, int, double);
  Status (*destroyActivation)(ActDesc);
  Status (*activationForward)(Handle, ActDesc, const void *, TensorDesc,
                              const void *, const void *, TensorDesc, void *);
};

std::string planConv(const ConvArgs &g, ConvPlan &p) {
  switch (g.dtype) {
  case KILN_DTYPE_FLOAT32:
    p.dataType = CUDNN_DATA_FLOAT;
    break;
  case KILN_DTYPE_FLOAT16:
    p.dataType = CUDNN_DATA_HALF;
    break;
  case KILN_DTYPE_BFLOAT16:
    p.dataType = CUDNN_DATA_BFLOAT16;
    break;
  default: {
    const char *name = kiln_dtype_name(g.dtype);
    return std::string("dtype ") +
           (name ? name : "code " + std::to_string(g.dtype)) +
           " is not supported by the cuDNN convolution (float32, float16, "
           "bfloat16)";
  }
  }
  // float32 stays float32 (FMA math: no TF32, as the cuBLASLt GEMM's
  // COMPUTE_32F); half types use tensor cores with fp32 accumulation.
  p.mathType =
      g.dtype == KILN_DTYPE_FLOAT32 ? CUDNN_FMA_MATH : CUDNN_TENSOR_OP_MATH;
  auto str = [](int64_t v) { return std::to_string(v); };
  if (g.n < 1 || g.c < 1 || g.h < 1 || g.w < 1 || g.k < 1 || g.r < 1 ||
      g.s < 1 || g.p < 1 || g.q < 1)
    return "convolution sizes must be positive (x [" + str(g.n) + ", " +
           str(g.c) + ", " + str(g.h) + ", " + str(g.w) + "], weight [" +
           str(g.k) + ", _, " + str(g.r) + ", " + str(g.s) + "], y [_, _, " +
           str(g.p) + ", " + str(g.q) + "])";
  if (g.groups < 1 || g.c % g.groups != 0 || g.k % g.groups != 0)
    return "convolution: groups " + str(g.groups) +
           " must divide the channels " + str(g.c) + " and the filters " +
           str(g.k);
  if (g.padTop < 0 || g.padLeft < 0 || g.padBottom < 0 || g.padRight < 0)
    return "convolution: negative pads";
  if (g.padTop != g.padBottom || g.padLeft != g.padRight)
    return "asymmetric pads (top " + str(g.padTop) + ", left " +
           str(g.padLeft) + ", bottom " + str(g.padBottom) + ", right " +
           str(g.padRight) + ") are not supported by cuDNN";
  if (g.strideH < 1 || g.strideW < 1 || g.dilationH < 1 || g.dilationW < 1)
    return "convolution: strides and dilations must be positive";
  int64_t wantP =
      (g.h + 2 * g.padTop - g.dilationH * (g.r - 1) - 1) / g.strideH + 1;
  int64_t wantQ =
      (g.w + 2 * g.padLeft - g.dilationW * (g.s - 1) - 1) / g.strideW + 1;
  if (g.p != wantP || g.q != wantQ)
    return "convolution: the output is " + str(g.p) + "x" + str(g.q) +
           " but the sizes give " + str(wantP) + "x" + str(wantQ);
  for (int64_t v : {g.n, g.c, g.h, g.w, g.k, g.r, g.s, g.p, g.q, g.padTop,
                    g.padLeft, g.strideH, g.strideW, g.dilationH, g.dilationW})
    if (v > std::numeric_limits<int32_t>::max())
      return "convolution: size " + str(v) + " does not fit cuDNN's int";
  switch (g.epilogue) {
  case KILN_CUDA_EPILOGUE_NONE:
    p.relu = false;
    break;
  case KILN_CUDA_EPILOGUE_RELU:
    p.relu = true;
    break;
  default:
    return "convolution: epilogue " + str(g.epilogue) +
           " is not supported (none, relu)";
  }
  if (!g.x || !g.weight || !g.y)
    return "convolution: a NULL operand";
  p.bias = g.bias != nullptr;
  p.n = int(g.n), p.c = int(g.c), p.h = int(g.h), p.w = int(g.w);
  p.k = int(g.k), p.cPerGroup = int(g.c / g.groups);
  p.r = int(g.r), p.s = int(g.s), p.p = int(g.p), p.q = int(g.q);
  p.padH = int(g.padTop), p.padW = int(g.padLeft);
  p.strideH = int(g.strideH), p.strideW = int(g.strideW);
  p.dilationH = int(g.dilationH), p.dilationW = int(g.dilationW);
  p.groups = int(g.groups);
  return "";
}

std::string Cudnn::load(Cudnn *&out) {
  return loadOnce(out, [](Cudnn *&loaded) -> std::string {
    std::string error;
    // $KILN_LIBCUDNN alone when set; else the loader's path, then the
    // toolkit's usual folders ($CUDA_HOME, /usr/local/cuda).
    std::string tried;
    void *h = openCudaLibrary("KILN_LIBCUDNN", {"libcudnn.so.9"}, tried);
    if (!h) {
      error = "cuDNN not found (tried " + tried +
              "): the model uses library convolutions (--kernels=library); "
              "install cuDNN 9 or compile with --kernels=codegen";
      return error;
    }
    auto *api = new Api;
    Symbols sym{h};
    sym(api->create, "cudnnCreate");
    sym(api->destroy, "cudnnDestroy");
    sym(api->setStream, "cudnnSetStream");
    sym(api->errorString, "cudnnGetErrorString");
    sym(api->createTensor, "cudnnCreateTensorDescriptor");
    sym(api->setTensor4d, "cudnnSetTensor4dDescriptor");
    sym(api->destroyTensor, "cudnnDestroyTensorDescriptor");
    sym(api->createFilter, "cudnnCreateFilterDescriptor");
    sym(api->setFilter4d, "cudnnSetFilter4dDescriptor");
    sym(api->destroyFilter, "cudnnDestroyFilterDescriptor");
    sym(api->createConv, "cudnnCreateConvolutionDescriptor");
    sym(api->setConv2d, "cudnnSetConvolution2dDescriptor");
    sym(api->setGroupCount, "cudnnSetConvolutionGroupCount");
    sym(api->setMathType, "cudnnSetConvolutionMathType");
    sym(api->destroyConv, "cudnnDestroyConvolutionDescriptor");
    sym(api->getAlgorithmV7, "cudnnGetConvolutionForwardAlgorithm_v7");
    sym(api->getWorkspaceSize, "cudnnGetConvolutionForwardWorkspaceSize");
    sym(api->forward, "cudnnConvolutionForward");
    sym(api->addTensor, "cudnnAddTensor");
    sym(api->createActivation, "cudnnCreateActivationDescriptor");
    sym(api->setActivation, "cudnnSetActivationDescriptor");
    sym(api->destroyActivation, "cudnnDestroyActivationDescriptor");
    sym(api->activationForward, "cudnnActivationForward");
    if (const char *missing = sym.missing) {
      delete api;
      error = std::string("cuDNN lacks ") + missing +
              " (the legacy API of cuDNN 9 is needed)";
      return error;
    }
    loaded = new Cudnn;
    loaded->api = api;
    return "";
  });
}

std::string Cudnn::createHandle(void *stream, void *&handle) const {
  handle = nullptr;
  Handle h = nullptr;
  Status st = api->create(&h);
  if (st != CUDNN_STATUS_SUCCESS)
    return std::string("cudnnCreate failed: ") + api->errorString(st);
  st = api->setStream(h, stream);
  if (st != CUDNN_STATUS_SUCCESS) {
    api->destroy(h);
    return std::string("cudnnSetStream failed: ") + api->errorString(st);
  }
  handle = h;
  return "";
}

void Cudnn::destroyHandle(void *handle) const {
  if (handle)
    api->destroy(handle);
}

namespace {

// The descriptors of one planned convolution, destroyed on scope exit.
struct Descriptors {
  const Cudnn::Api &a;
  TensorDesc x = nullptr, y = nullptr, bias = nullptr;
  FilterDesc w = nullptr;
  ConvDesc conv = nullptr;
  ActDesc act = nullptr;
  std::string err;

  Descriptors(const Cudnn::Api &api) : a(api) {}
  ~Descriptors() {
    for (TensorDesc t : {x, y, bias})
      if (t)
        a.destroyTensor(t);
    if (w)
      a.destroyFilter(w);
    if (conv)
      a.destroyConv(conv);
    if (act)
      a.destroyActivation(act);
  }
  bool check(Status st, const char *what) {
    if (st != CUDNN_STATUS_SUCCESS && err.empty())
      err = std::string(what) + " failed: " + a.errorString(st);
    return st == CUDNN_STATUS_SUCCESS;
  }
  bool tensor(TensorDesc &t, int dataType, int n, int c, int h, int w) {
    return check(a.createTensor(&t), "cudnnCreateTensorDescriptor") &&
           check(a.setTensor4d(t, CUDNN_TENSOR_NCHW, dataType, n, c, h, w),
                 "cudnnSetTensor4dDescriptor");
  }
  // x, w, the convolution and y (checked against cuDNN's own output size
  // by the forward call itself).
  bool build(const ConvPlan &p) {
    return tensor(x, p.dataType, p.n, p.c, p.h, p.w) &&
           tensor(y, p.dataType, p.n, p.k, p.p, p.q) &&
           check(a.createFilter(&w), "cudnnCreateFilterDescriptor") &&
           check(a.setFilter4d(w, p.dataType, CUDNN_TENSOR_NCHW, p.k,
                               p.cPerGroup, p.r, p.s),
                 "cudnnSetFilter4dDescriptor") &&
           check(a.createConv(&conv), "cudnnCreateConvolutionDescriptor") &&
           // fp32 compute for every data type (float16's "pseudo-half"
           // configuration: fp32 accumulation).
           check(a.setConv2d(conv, p.padH, p.padW, p.strideH, p.strideW,
                             p.dilationH, p.dilationW, CUDNN_CROSS_CORRELATION,
                             CUDNN_DATA_FLOAT),
                 "cudnnSetConvolution2dDescriptor") &&
           (p.groups == 1 || check(a.setGroupCount(conv, p.groups),
                                   "cudnnSetConvolutionGroupCount")) &&
           check(a.setMathType(conv, p.mathType),
                 "cudnnSetConvolutionMathType");
  }
};

} // namespace

std::string Cudnn::selectAlgorithm(void *handle, const ConvPlan &p,
                                   uint64_t maxWorkspace, int &algo,
                                   uint64_t &workspaceBytes) const {
  Descriptors d(*api);
  if (!d.build(p))
    return d.err;
  FwdAlgoPerf perf[kAlgoCount] = {};
  int returned = 0;
  if (!d.check(api->getAlgorithmV7(handle, d.x, d.w, d.conv, d.y, kAlgoCount,
                                   &returned, perf),
               "cudnnGetConvolutionForwardAlgorithm_v7"))
    return d.err;
  // The heuristics' order is their expected speed; the first that works
  // within the workspace cap (its own size asked again: `memory` is only
  // an estimate in some versions).
  for (int i = 0; i < returned && i < kAlgoCount; ++i) {
    if (perf[i].status != CUDNN_STATUS_SUCCESS || perf[i].memory > maxWorkspace)
      continue;
    size_t bytes = 0;
    if (api->getWorkspaceSize(handle, d.x, d.w, d.conv, d.y, perf[i].algo,
                              &bytes) != CUDNN_STATUS_SUCCESS ||
        bytes > maxWorkspace)
      continue;
    algo = perf[i].algo;
    workspaceBytes = bytes;
    return "";
  }
  return "cudnnGetConvolutionForwardAlgorithm_v7 failed: no algorithm "
         "within a " +
         std::to_string(maxWorkspace >> 20) + " MiB workspace (" +
         std::to_string(returned) + " considered)";
}

std::string Cudnn::run(void *handle, const ConvArgs &g, const ConvPlan &p,
                       int algo, void *workspace,
                       uint64_t workspaceBytes) const {
  Descriptors d(*api);
  if (!d.build(p))
    return d.err;
  // alpha/beta are floats for float, half and bfloat16 data.
  float one = 1.0f, zero = 0.0f;
  if (!d.check(api->forward(handle, &one, d.x, g.x, d.w, g.weight, d.conv, algo,
                            workspace, workspaceBytes, &zero, d.y, g.y),
               "cudnnConvolutionForward"))
    return d.err;
  if (p.bias &&
      !(d.tensor(d.bias, p.dataType, 1, p.k, 1, 1) &&
        d.check(api->addTensor(handle, &one, d.bias, g.bias, &one, d.y, g.y),
                "cudnnAddTensor")))
    return d.err;
  // ReLU in place; NaN propagates as in ONNX Relu (max(x, 0) of NaN).
  if (p.relu && !(d.check(api->createActivation(&d.act),
                          "cudnnCreateActivationDescriptor") &&
                  d.check(api->setActivation(d.act, CUDNN_ACTIVATION_RELU,
                                             CUDNN_PROPAGATE_NAN, 0.0),
                          "cudnnSetActivationDescriptor") &&
                  d.check(api->activationForward(handle, d.act, &one, d.y, g.y,
                                                 &zero, d.y, g.y),
                          "cudnnActivationForward")))
    return d.err;
  return "";
}

} // namespace cuda
} // namespace kiln
