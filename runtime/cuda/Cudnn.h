//===- Cudnn.h - cuDNN convolutions for kiln_rt_cuda_conv2d -----*- C++ -*-===//
//
// The `conv2d` entry of the CUDA function table: an NCHW 2-D convolution
// (ONNX Conv: cross-correlation, groups, dilations, symmetric pads) with an
// optional bias and ReLU, through cuDNN 9's legacy API, loaded with dlopen
// (libcudnn.so.9, or $KILN_LIBCUDNN) the first time a model calls it, so
// models without library convolutions never need it. Types and constants
// are declared here (cudnn.h's values; CudaConstantsTest checks them where
// the headers are installed).
//
// The call is graph-capture safe: the algorithm comes from cuDNN's
// heuristics (cudnnGetConvolutionForwardAlgorithm_v7: host only, no
// benchmarking runs, the same choice every time), the workspace from the
// session's stream-ordered pool, and the bias and ReLU are
// cudnnAddTensor / cudnnActivationForward on the same stream.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_RUNTIME_CUDA_CUDNN_H
#define KILN_RUNTIME_CUDA_CUDNN_H

#include <cstdint>
#include <string>

namespace kiln {
namespace cuda {

// cudnn_graph.h / cudnn_ops.h / cudnn_cnn.h values.
constexpr int CUDNN_STATUS_SUCCESS = 0;
constexpr int CUDNN_TENSOR_NCHW = 0;
constexpr int CUDNN_DATA_FLOAT = 0;
constexpr int CUDNN_DATA_HALF = 2;
constexpr int CUDNN_DATA_BFLOAT16 = 9;
constexpr int CUDNN_CROSS_CORRELATION = 1;
constexpr int CUDNN_TENSOR_OP_MATH = 1;
constexpr int CUDNN_FMA_MATH = 3;
constexpr int CUDNN_ACTIVATION_RELU = 1;
constexpr int CUDNN_NOT_PROPAGATE_NAN = 0;
constexpr int CUDNN_PROPAGATE_NAN = 1;

/// One convolution of the table's `conv2d` entry (cuda_abi.h).
struct ConvArgs {
  int32_t dtype;      ///< kiln_dtype: float32, float16, bfloat16
  int32_t epilogue;   ///< kiln_cuda_epilogue: NONE or RELU
  int64_t n, c, h, w; ///< x, NCHW
  int64_t k, r, s;    ///< weight [k, c / groups, r, s]
  int64_t p, q;       ///< y [n, k, p, q]
  int64_t padTop, padLeft, padBottom, padRight;
  int64_t strideH, strideW, dilationH, dilationW, groups;
  const void *x, *weight, *bias;
  void *y;
};

/// The descriptors' values (cuDNN takes int).
struct ConvPlan {
  int dataType; ///< CUDNN_DATA_*
  int mathType; ///< CUDNN_FMA_MATH for float32 (no TF32), else TENSOR_OP
  int n, c, h, w, k, cPerGroup, r, s, p, q;
  int padH, padW, strideH, strideW, dilationH, dilationW, groups;
  bool bias, relu;
};

/// Checks `args` and plans the call; "" or what is wrong ("asymmetric
/// pads (top 1, bottom 0) are not supported by cuDNN").
std::string planConv(const ConvArgs &args, ConvPlan &plan);

/// The process's cuDNN, loaded on first use; handles are per session.
class Cudnn {
public:
  /// Loads libcudnn; "" or why not ("cuDNN not found (tried ...): the model
  /// uses library convolutions ...").
  static std::string load(Cudnn *&out);

  /// cudnnCreate + cudnnSetStream; "" or "<call> failed: <status>".
  std::string createHandle(void *stream, void *&handle) const;
  void destroyHandle(void *handle) const;

  /// The first algorithm of cuDNN's heuristics (_v7) that succeeds within
  /// `maxWorkspace`, and its workspace; "" or "<call> failed: <status>".
  std::string selectAlgorithm(void *handle, const ConvPlan &plan,
                              uint64_t maxWorkspace, int &algo,
                              uint64_t &workspaceBytes) const;

  /// Enqueues the convolution, then the bias and ReLU, on the handle's
  /// stream; "" or "<call> failed: <status>".
  std::string run(void *handle, const ConvArgs &args, const ConvPlan &plan,
                  int algo, void *workspace, uint64_t workspaceBytes) const;

  struct Api;
  const Api *api = nullptr;
};

} // namespace cuda
} // namespace kiln

#endif // KILN_RUNTIME_CUDA_CUDNN_H
