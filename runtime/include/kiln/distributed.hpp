//===- distributed.hpp - Kiln's processes under an MPI launcher -*- C++ -*-===//
//
// The control plane of a run over several processes (docs/cluster.md): the
// tools (kiln-run, kiln-generate, the Python package) run under
// `mpirun -n N` or Slurm's `srun`, one process (rank) per device. The world
// is MPI's COMM_WORLD when the process was started by a launcher; a process
// started on its own is a world of one and needs no MPI.
//
// Rank and world size come from MPI; the local rank (which device a rank
// uses) from MPI's shared-memory split of the world, cross-checked against
// OMPI_COMM_WORLD_LOCAL_RANK or SLURM_LOCALID where the launcher sets them.
// A Kiln built without MPI that finds itself started by a launcher with a
// world of more than one process refuses with a message saying so (it
// would otherwise run N unrelated copies).
//
// The collectives here are the ones the tools need (barrier, gather and
// broadcast of byte strings, a sum all-reduce of floats) plus the one the
// compiled code of a tensor-parallel model calls (kiln_abi_all_reduce_*,
// through the hook the runtime installs). Errors abort the whole job
// (MPI_Abort) after printing the rank, its host and the reason: a rank that
// fails must not leave the others waiting in a collective.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_DISTRIBUTED_HPP
#define KILN_DISTRIBUTED_HPP

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace kiln {
namespace dist {

/// What the environment says about how this process was started, read
/// without MPI (so a build without MPI can refuse clearly).
struct LaunchEnvironment {
  /// "Open MPI" (OMPI_COMM_WORLD_*), "Slurm" (SLURM_PROCID with
  /// SLURM_NTASKS), "PMI" (PMI_RANK / PMIX_RANK), or "" (started on its own).
  std::string launcher;
  int rank = 0, size = 1;
  int localRank = 0, localSize = 1; ///< -1 when the launcher does not say
};
LaunchEnvironment readLaunchEnvironment();

/// Whether this Kiln was built with MPI (KILN_ENABLE_MPI and libmpi found).
bool builtWithMpi();

/// The process's world. One per process; init() once, before any other
/// call (the tools call it first thing in main).
class World {
public:
  static World &get();

  /// Starts MPI when the process was started by a launcher (and this build
  /// has MPI); else a world of one. False with `error` when the launcher
  /// started several processes and this build cannot join them.
  bool init(std::string &error);
  /// MPI_Finalize where init started MPI (also run at exit).
  void finalize();

  bool initialized() const { return ready; }
  /// True when MPI is running (started by a launcher, even with one rank).
  bool usesMpi() const { return mpi; }
  int rank() const { return rank_; }
  int size() const { return size_; }
  int localRank() const { return localRank_; }
  int localSize() const { return localSize_; }
  /// Distinct hosts in the world (1 without MPI).
  int numNodes() const { return nodes; }
  const std::string &hostname() const { return host; }
  /// "Open MPI v4.1.4, ..." (MPI_Get_library_version's first line) or
  /// "none (one process)".
  const std::string &launcherVersion() const { return library; }
  /// How the process was started ("mpirun (Open MPI)", "Slurm", "none").
  const std::string &launcher() const { return launchedBy; }

  void barrier();
  /// A barrier that waits without spinning (MPI_Ibarrier polled every
  /// 100 us, sleeping between): for ranks that wait while another works
  /// alone (a compile, a one-rank baseline), so that on a node whose
  /// cores are shared (hyperthreads, oversubscription) the waiting ranks do
  /// not slow the working one down. MPI_Barrier polls at full speed.
  void idleBarrier();
  /// Every rank's `mine`, in rank order, on `root`; empty on the others.
  std::vector<std::string> gather(const std::string &mine, int root = 0);
  /// `root`'s `value` on every rank.
  std::string broadcast(const std::string &value, int root = 0);
  /// In-place sum over the ranks of `count` floats.
  void allReduceSum(float *data, size_t count);
  void allReduceSum(double *data, size_t count);
  /// The largest `value` over the ranks, on every rank.
  double allReduceMax(double value);
  /// Prints "<tool>: rank R of N on HOST: error: MESSAGE" to stderr and
  /// ends the whole job with exit status `code` (MPI_Abort under MPI, else
  /// exit).
  [[noreturn]] void abortJob(const std::string &tool,
                             const std::string &message, int code = 2);

private:
  bool ready = false, mpi = false, weStartedMpi = false;
  int rank_ = 0, size_ = 1, localRank_ = 0, localSize_ = 1, nodes = 1;
  std::string host, library, launchedBy;
};

} // namespace dist
} // namespace kiln

#endif // KILN_DISTRIBUTED_HPP
