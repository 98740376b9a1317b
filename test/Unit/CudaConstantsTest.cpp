//===- CudaConstantsTest.cpp - runtime/cuda's constants vs the toolkit ----===//
//
// runtime/cuda/ declares the driver API and cuBLASLt values it uses itself,
// so it builds without a CUDA toolkit. Where a toolkit is installed this
// test compiles those declarations against cuda.h and cublasLt.h (and
// cudnn.h where cuDNN's headers are there too): a wrong
// value or struct layout fails the build of the test.
//
//===----------------------------------------------------------------------===//
#include "CublasLt.h"
#include "CudaDriver.h"
#include "Cudnn.h"

#include <cublasLt.h>
#include <cuda.h>

#include <gtest/gtest.h>

#include <cstddef>

namespace k = kiln::cuda;

#define SAME(name) static_assert(int(k::name) == int(::name), #name)
SAME(CUDA_SUCCESS);
SAME(CUDA_ERROR_INVALID_VALUE);
SAME(CUDA_ERROR_OUT_OF_MEMORY);
SAME(CUDA_ERROR_NO_DEVICE);
SAME(CUDA_ERROR_NO_BINARY_FOR_GPU);
SAME(CUDA_ERROR_NOT_FOUND);
SAME(CUDA_ERROR_LAUNCH_FAILED);
SAME(CUDA_ERROR_NOT_SUPPORTED);
SAME(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
SAME(CU_STREAM_NON_BLOCKING);
SAME(CU_EVENT_DEFAULT);
SAME(CU_EVENT_DISABLE_TIMING);
SAME(CU_STREAM_CAPTURE_MODE_RELAXED);
SAME(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
SAME(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
SAME(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
SAME(CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED);
SAME(CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
SAME(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES);
SAME(CU_MEMPOOL_ATTR_RELEASE_THRESHOLD);
SAME(CU_MEM_ALLOCATION_TYPE_PINNED);
SAME(CU_MEM_HANDLE_TYPE_NONE);
SAME(CU_MEM_LOCATION_TYPE_DEVICE);
SAME(CUDA_R_32F);
SAME(CUDA_R_16F);
SAME(CUDA_R_16BF);
SAME(CUBLAS_COMPUTE_32F);
SAME(CUBLAS_COMPUTE_32I);
SAME(CUDA_R_8I);
SAME(CUDA_R_32I);
SAME(CUBLAS_OP_N);
SAME(CUBLAS_OP_T);
SAME(CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT);
SAME(CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET);
SAME(CUBLASLT_MATMUL_DESC_TRANSA);
SAME(CUBLASLT_MATMUL_DESC_TRANSB);
SAME(CUBLASLT_MATMUL_DESC_EPILOGUE);
SAME(CUBLASLT_MATMUL_DESC_BIAS_POINTER);
SAME(CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE);
SAME(CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES);
SAME(CUBLASLT_EPILOGUE_DEFAULT);
SAME(CUBLASLT_EPILOGUE_RELU);
SAME(CUBLASLT_EPILOGUE_BIAS);
SAME(CUBLASLT_EPILOGUE_RELU_BIAS);
SAME(CUBLASLT_EPILOGUE_GELU);
SAME(CUBLASLT_EPILOGUE_GELU_BIAS);
#undef SAME

#define SAME_FIELD(field)                                                      \
  static_assert(offsetof(k::CUmemPoolProps, field) ==                          \
                    offsetof(::CUmemPoolProps, field),                         \
                "CUmemPoolProps::" #field)
static_assert(sizeof(k::CUmemPoolProps) == sizeof(::CUmemPoolProps),
              "CUmemPoolProps size");
SAME_FIELD(allocType);
SAME_FIELD(handleTypes);
SAME_FIELD(location);
SAME_FIELD(win32SecurityAttributes);
SAME_FIELD(maxSize);
SAME_FIELD(usage);
#undef SAME_FIELD
static_assert(sizeof(k::CUdeviceptr) == sizeof(::CUdeviceptr), "CUdeviceptr");
static_assert(sizeof(cublasLtMatmulHeuristicResult_t) == 96,
              "the heuristic result CublasLt.cpp declares");

// cuDNN's values (Cudnn.h) where its headers came with the toolkit.
#if __has_include(<cudnn.h>)
#include <cudnn.h>
#define SAME(name) static_assert(int(k::name) == int(::name), #name)
SAME(CUDNN_STATUS_SUCCESS);
SAME(CUDNN_TENSOR_NCHW);
SAME(CUDNN_DATA_FLOAT);
SAME(CUDNN_DATA_HALF);
SAME(CUDNN_DATA_BFLOAT16);
SAME(CUDNN_CROSS_CORRELATION);
SAME(CUDNN_TENSOR_OP_MATH);
SAME(CUDNN_FMA_MATH);
SAME(CUDNN_ACTIVATION_RELU);
SAME(CUDNN_NOT_PROPAGATE_NAN);
SAME(CUDNN_PROPAGATE_NAN);
#undef SAME
static_assert(CUDNN_MAJOR == 9, "Cudnn.cpp declares cuDNN 9's legacy API");
static_assert(sizeof(cudnnConvolutionFwdAlgoPerf_t) == 48 &&
                  offsetof(cudnnConvolutionFwdAlgoPerf_t, memory) == 16 &&
                  offsetof(cudnnConvolutionFwdAlgoPerf_t, mathType) == 28,
              "the perf result Cudnn.cpp declares");
#endif

TEST(CudaConstants, MatchTheToolkit) {
  // Everything is checked at compile time; this records that it ran.
  SUCCEED();
}
