//===- TestCudaAllReduce.cpp - A tensor-parallel CUDA session, no GPU ------===//
//
//   mpirun -n N kiln-test-cuda-allreduce WORKDIR
//
// Every rank packs TestCudaModel.c's all-reduce variant as its shard of an
// N-rank tensor-parallel CUDA artifact and runs it on the fake driver
// (FakeCuda.c) with the fake NCCL (FakeNccl.c, sums over MPI): the session
// makes its communicator (rank 0's unique id broadcast over MPI), the host
// code's kiln_rt_cuda_all_reduce_f32 goes through the shim and the table
// to ncclAllReduce on the session's stream, and y must be the sum over the
// ranks of each rank's relu(x + w). Exit status 0 when every rank has it.
//
//===----------------------------------------------------------------------===//
#include "TestArtifact.h"
#include "kiln/distributed.hpp"
#include "kiln/runtime.h"

#include <cmath>
#include <dlfcn.h>
#include <cstdio>
#include <cstdlib>
#include <string>

int main(int argc, char **argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: mpirun -n N %s WORKDIR\n", argv[0]);
    return 2;
  }
  kiln::dist::World &world = kiln::dist::World::get();
  std::string error;
  if (!world.init(error)) {
    std::fprintf(stderr, "%s\n", error.c_str());
    return 2;
  }
  int rank = world.rank(), size = world.size();
  setenv("KILN_LIBCUDA", kiln::test::kFakeCudaSo, 1);
  // One fake GPU per rank of this node (the first member of FakeCuda.c's
  // exported state), as a tensor-parallel group needs.
  void *fake = dlopen(kiln::test::kFakeCudaSo, RTLD_NOW | RTLD_GLOBAL);
  int *deviceCount =
      fake ? static_cast<int *>(dlsym(fake, "fake_cuda_state")) : nullptr;
  if (!deviceCount)
    world.abortJob("kiln-test-cuda-allreduce", "cannot load the fake driver");
  *deviceCount = world.localSize();
  setenv("KILN_LIBNCCL", KILN_FAKE_NCCL_SO, 1);
  std::string path =
      std::string(argv[1]) + "/allreduce.rank" + std::to_string(rank) + ".kiln";
  error = kiln::test::writeTestCudaArtifact(
      path, KILN_TEST_CUDA_MODEL_ALLREDUCE_SO, kiln::test::kFakeFatbin,
      "sm_80", false, false, size, rank);
  if (!error.empty())
    world.abortJob("kiln-test-cuda-allreduce", error);
  kiln_model *model = nullptr;
  kiln_session *session = nullptr;
  if (kiln_model_load(path.c_str(), &model) != KILN_OK)
    world.abortJob("kiln-test-cuda-allreduce", kiln_last_error());
  kiln_session_options o;
  kiln_session_options_init(&o);
  o.cuda_graphs = 0; // the fake NCCL sums when called, not on replay
  if (kiln_session_create(model, &o, &session) != KILN_OK)
    world.abortJob("kiln-test-cuda-allreduce", kiln_last_error());

  const float w[4] = {0.5f, -1.0f, 2.0f, -3.0f}; // TestArtifact's weight
  auto input = [](int r, int i) { return float(r + 1) * (float(i) - 3.5f); };
  float x[8], y[8] = {};
  for (int i = 0; i < 8; ++i)
    x[i] = input(rank, i);
  const int64_t dims[2] = {2, 4};
  kiln_tensor in = {x, KILN_DTYPE_FLOAT32, 2, dims};
  kiln_tensor out = {y, KILN_DTYPE_FLOAT32, 2, dims};
  int bad = 0;
  for (int run = 0; run < 2; ++run) {
    if (kiln_session_run(session, &in, 1, &out, 1) != KILN_OK)
      world.abortJob("kiln-test-cuda-allreduce", kiln_last_error());
    for (int i = 0; i < 8; ++i) {
      float want = 0;
      for (int r = 0; r < size; ++r) {
        float v = input(r, i) + w[i % 4];
        want += v > 0 ? v : 0;
      }
      if (std::fabs(y[i] - want) > 1e-5f * (1 + std::fabs(want))) {
        std::fprintf(stderr, "rank %d run %d: y[%d] = %g, want %g\n", rank,
                     run, i, y[i], want);
        bad = 1;
      }
    }
  }
  kiln_session_free(session);
  kiln_model_free(model);
  double anyBad = world.allReduceMax(bad);
  if (rank == 0)
    std::printf("%s: %d ranks, y = the sum over the ranks on every rank\n",
                anyBad ? "FAIL" : "ok", size);
  return anyBad ? 1 : 0;
}
