//===- TestCudaKernels.cu - TestCudaModel.c's kernels for a real GPU ------===//
//
// The two kernels of TestCudaModel.c (what FakeCuda.c runs on the host),
// built into a real fatbin (sm_80, sm_90, PTX) where the toolkit is found,
// so the cuda-gpu lit tests run the CUDA runtime end to end on a device.
//
//===----------------------------------------------------------------------===//
extern "C" __global__ void k0_add(const float *x, const float *w, float *tmp,
                                  long long n) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n)
    tmp[i] = x[i] + w[i % 4];
}
extern "C" __global__ void k1_relu(const float *tmp, float *y, long long n) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n)
    y[i] = tmp[i] > 0.0f ? tmp[i] : 0.0f;
}
