//===- Distributed.cpp - Kiln's processes under an MPI launcher -----------===//
//
// include/kiln/distributed.hpp. Built with MPI when KILN_WITH_MPI is 1
// (runtime/CMakeLists.txt: KILN_ENABLE_MPI and Debian's libopenmpi-dev);
// without it, a world of one that refuses to run under a launcher that
// started several processes.
//
//===----------------------------------------------------------------------===//
#include "kiln/distributed.hpp"
#include "kiln/half.h"

// Without the build's definition (a tree that lists the runtime's sources
// itself, e.g. the fuzzers'): no MPI.
#ifndef KILN_WITH_MPI
#define KILN_WITH_MPI 0
#endif

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <unistd.h>

#if KILN_WITH_MPI
// The C API only (Open MPI's and MPICH's mpi.h add the removed C++ bindings
// to a C++ translation unit otherwise).
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>
#endif

namespace kiln {
namespace dist {

namespace {

bool envInt(const char *name, int &out) {
  const char *v = std::getenv(name);
  if (!v || !*v)
    return false;
  char *end = nullptr;
  long n = std::strtol(v, &end, 10);
  if (*end || n < 0 || n > (1 << 30))
    return false;
  out = int(n);
  return true;
}

std::string thisHost() {
  char name[256] = {0};
  if (gethostname(name, sizeof(name) - 1) != 0)
    return "unknown-host";
  return name;
}

} // namespace

LaunchEnvironment readLaunchEnvironment() {
  LaunchEnvironment e;
  int r, n;
  if (envInt("OMPI_COMM_WORLD_RANK", r) && envInt("OMPI_COMM_WORLD_SIZE", n)) {
    e.launcher = "Open MPI";
    e.rank = r;
    e.size = n;
    if (!envInt("OMPI_COMM_WORLD_LOCAL_RANK", e.localRank))
      e.localRank = -1;
    if (!envInt("OMPI_COMM_WORLD_LOCAL_SIZE", e.localSize))
      e.localSize = -1;
  } else if (envInt("SLURM_PROCID", r) && envInt("SLURM_NTASKS", n) &&
             n > 1) {
    // A batch script (or a CI job) inside a Slurm allocation sees these
    // too, with one task: only srun's several tasks are a world.
    e.launcher = "Slurm";
    e.rank = r;
    e.size = n;
    if (!envInt("SLURM_LOCALID", e.localRank))
      e.localRank = -1;
    e.localSize = -1;
  } else if ((envInt("PMIX_RANK", r) || envInt("PMI_RANK", r))) {
    e.launcher = "PMI";
    e.rank = r;
    e.size = envInt("PMI_SIZE", n) ? n : -1;
    e.localRank = envInt("MPI_LOCALRANKID", e.localRank) ? e.localRank : -1;
    e.localSize = -1;
  }
  return e;
}

bool builtWithMpi() { return KILN_WITH_MPI != 0; }

World &World::get() {
  static World world;
  return world;
}

#if KILN_WITH_MPI
namespace {
void finalizeAtExit() { World::get().finalize(); }
} // namespace
#endif

bool World::init(std::string &error) {
  if (ready)
    return true;
  host = thisHost();
  LaunchEnvironment env = readLaunchEnvironment();
  launchedBy = env.launcher.empty() ? "none" : env.launcher;
  library = "none (one process)";
#if KILN_WITH_MPI
  int already = 0;
  MPI_Initialized(&already);
  if (!env.launcher.empty() || already) {
    if (!already) {
      int provided = 0;
      // Serialized: the tools call collectives from one thread at a time
      // (a model's all-reduce runs on the thread that runs the model).
      if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED,
                          &provided) != MPI_SUCCESS) {
        error = "MPI_Init_thread failed";
        return false;
      }
      weStartedMpi = true;
      std::atexit(finalizeAtExit);
    }
    mpi = true;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    // The local rank: the ranks that share this node's memory.
    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank_,
                        MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, &localRank_);
    MPI_Comm_size(node, &localSize_);
    // Nodes: the ranks that are local rank 0.
    int leader = localRank_ == 0 ? 1 : 0;
    MPI_Allreduce(&leader, &nodes, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Comm_free(&node);
    char version[MPI_MAX_LIBRARY_VERSION_STRING] = {0};
    int len = 0;
    MPI_Get_library_version(version, &len);
    library.assign(version, size_t(std::max(0, len)));
    size_t cut = library.find_first_of(",\n");
    if (cut != std::string::npos)
      library.resize(cut);
    while (!library.empty() && (library.back() == ' ' ||
                                library.back() == '\0'))
      library.pop_back();
    if (env.launcher.empty())
      launchedBy = "MPI (initialized by the host program)";
    else if (env.launcher == "Open MPI")
      launchedBy = "mpirun (Open MPI)";
    ready = true;
    return true;
  }
#endif
  if (!env.launcher.empty() && env.size != 1) {
    error = "started by " + env.launcher + " as rank " +
            std::to_string(env.rank) + " of " +
            (env.size < 0 ? std::string("several") :
                            std::to_string(env.size)) +
            ", but this Kiln was built without MPI: install Open MPI "
            "(scripts/setup.sh installs openmpi-bin and libopenmpi-dev) and "
            "rebuild with -DKILN_ENABLE_MPI=ON";
    return false;
  }
  ready = true;
  return true;
}

void World::finalize() {
#if KILN_WITH_MPI
  if (weStartedMpi) {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized)
      MPI_Finalize();
    weStartedMpi = false;
  }
#endif
}

void World::barrier() {
#if KILN_WITH_MPI
  if (mpi)
    MPI_Barrier(MPI_COMM_WORLD);
#endif
}

void World::idleBarrier() {
#if KILN_WITH_MPI
  if (mpi) {
    MPI_Request request;
    MPI_Ibarrier(MPI_COMM_WORLD, &request);
    int done = 0;
    while (true) {
      MPI_Test(&request, &done, MPI_STATUS_IGNORE);
      if (done)
        break;
      usleep(100);
    }
  }
#endif
}

std::vector<std::string> World::gather(const std::string &mine, int root) {
  std::vector<std::string> all;
#if KILN_WITH_MPI
  if (mpi) {
    int n = int(mine.size());
    std::vector<int> sizes(rank_ == root ? size_t(size_) : 0);
    MPI_Gather(&n, 1, MPI_INT, sizes.data(), 1, MPI_INT, root,
               MPI_COMM_WORLD);
    std::vector<int> offsets(sizes.size());
    int total = 0;
    for (size_t i = 0; i < sizes.size(); ++i) {
      offsets[i] = total;
      total += sizes[i];
    }
    std::vector<char> buffer(size_t(std::max(total, 1)));
    MPI_Gatherv(mine.data(), n, MPI_CHAR, buffer.data(), sizes.data(),
                offsets.data(), MPI_CHAR, root, MPI_COMM_WORLD);
    for (size_t i = 0; i < sizes.size(); ++i)
      all.emplace_back(buffer.data() + offsets[i], size_t(sizes[i]));
    return all;
  }
#endif
  (void)root;
  all.push_back(mine);
  return all;
}

std::string World::broadcast(const std::string &value, int root) {
#if KILN_WITH_MPI
  if (mpi) {
    long long n = (long long)value.size();
    MPI_Bcast(&n, 1, MPI_LONG_LONG, root, MPI_COMM_WORLD);
    std::string out = rank_ == root ? value : std::string(size_t(n), '\0');
    if (n)
      MPI_Bcast(&out[0], int(n), MPI_CHAR, root, MPI_COMM_WORLD);
    return out;
  }
#endif
  (void)root;
  return value;
}

#if KILN_WITH_MPI
namespace {
/// In-place MPI_SUM over COMM_WORLD; MPI counts are ints, so large
/// buffers go in pieces.
template <typename T>
void sumInPlace(T *data, size_t count, MPI_Datatype type) {
  for (size_t done = 0; done < count;) {
    int n = int(std::min<size_t>(count - done, size_t(1) << 30));
    MPI_Allreduce(MPI_IN_PLACE, data + done, n, type, MPI_SUM,
                  MPI_COMM_WORLD);
    done += size_t(n);
  }
}
} // namespace
#endif

void World::allReduceSum(float *data, size_t count) {
#if KILN_WITH_MPI
  if (mpi)
    sumInPlace(data, count, MPI_FLOAT);
#else
  (void)data;
  (void)count;
#endif
}

void World::allReduceSum(double *data, size_t count) {
#if KILN_WITH_MPI
  if (mpi)
    sumInPlace(data, count, MPI_DOUBLE);
#else
  (void)data;
  (void)count;
#endif
}

double World::allReduceMax(double value) {
#if KILN_WITH_MPI
  if (mpi)
    MPI_Allreduce(MPI_IN_PLACE, &value, 1, MPI_DOUBLE, MPI_MAX,
                  MPI_COMM_WORLD);
#endif
  return value;
}

void World::abortJob(const std::string &tool, const std::string &message,
                     int code) {
  if (size_ > 1 || mpi)
    std::fprintf(stderr, "%s: rank %d of %d on %s: error: %s\n", tool.c_str(),
                 rank_, size_, host.empty() ? thisHost().c_str() : host.c_str(),
                 message.c_str());
  else
    std::fprintf(stderr, "%s: error: %s\n", tool.c_str(), message.c_str());
  std::fflush(stderr);
#if KILN_WITH_MPI
  if (mpi && size_ > 1)
    MPI_Abort(MPI_COMM_WORLD, code);
#endif
  std::exit(code);
}

} // namespace dist
} // namespace kiln


// The hook the compiled code of a tensor-parallel model calls through
// kiln_abi_all_reduce_sum_* (runtime/abi/kiln_abi.c), installed by the
// runtime when it loads a model: dtype 0 float32, 1 float16, 2 bfloat16
// (summed in float32, rounded once to nearest even).
extern "C" int32_t kilnRuntimeAllReduce(void *data, int64_t count,
                                        int32_t dtype) {
  kiln::dist::World &w = kiln::dist::World::get();
  if (!w.initialized() || count < 0 || dtype < 0 || dtype > 2)
    return 1;
  if (dtype == 0) {
    w.allReduceSum(static_cast<float *>(data), size_t(count));
    return 0;
  }
  uint16_t *h = static_cast<uint16_t *>(data);
  std::vector<float> f(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i)
    f[size_t(i)] = dtype == 1 ? kiln::halfBitsToFloat(h[i])
                            : kiln::bfloat16BitsToFloat(h[i]);
  w.allReduceSum(f.data(), f.size());
  for (int64_t i = 0; i < count; ++i)
    h[i] = dtype == 1 ? kiln::floatToHalfBits(f[size_t(i)])
                       : kiln::floatToBfloat16Bits(f[size_t(i)]);
  return 0;
}
