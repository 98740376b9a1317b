/*===- FakeNccl.c - An NCCL that sums over MPI on the host -----------------===*
 *
 * Loaded through $KILN_LIBNCCL by TestCudaAllReduce.cpp under mpirun, with
 * FakeCuda.c as the driver (its device memory is host memory): the unique
 * id is a marker rank 0 makes, the communicator records its rank and size
 * (checked against MPI's world), and ncclAllReduce sums float32 buffers
 * with MPI_Allreduce, so the runtime's tensor-parallel path (session
 * creation, the id's broadcast, the table entry, the stream) runs with
 * numbers and no GPU.
 *
 *===----------------------------------------------------------------------===*/
#define OMPI_SKIP_MPICXX 1
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

typedef struct {
  char internal[128];
} ncclUniqueId;

typedef struct {
  int rank, size;
} FakeComm;

EXPORT int ncclGetVersion(int *version) {
  *version = 22703;
  return 0;
}

EXPORT int ncclGetUniqueId(ncclUniqueId *id) {
  memset(id, 0, sizeof(*id));
  strcpy(id->internal, "kiln-fake-nccl");
  return 0;
}

/* Without MPI (a one-rank shard, the GPU check's fake-driver run) the
 * world is this process. */
static int worldSize(void) {
  int up = 0, size = 1;
  MPI_Initialized(&up);
  if (up)
    MPI_Comm_size(MPI_COMM_WORLD, &size);
  return size;
}

EXPORT int ncclCommInitRank(void **comm, int nranks, ncclUniqueId id,
                            int rank) {
  int size = worldSize();
  if (strcmp(id.internal, "kiln-fake-nccl") != 0 || size != nranks ||
      rank < 0 || rank >= nranks)
    return 4; /* ncclInvalidArgument */
  FakeComm *c = malloc(sizeof(FakeComm));
  c->rank = rank;
  c->size = nranks;
  *comm = c;
  return 0;
}

EXPORT int ncclAllReduce(const void *send, void *recv, size_t count,
                         int dtype, int op, void *comm, void *stream) {
  (void)stream;
  if (dtype != 7 /* ncclFloat32 */ || op != 0 /* ncclSum */)
    return 5; /* ncclInvalidUsage */
  FakeComm *c = comm;
  if (c->size == 1) {
    if (send != recv)
      memmove(recv, send, count * sizeof(float));
    return 0;
  }
  MPI_Allreduce(send == recv ? MPI_IN_PLACE : send, recv, (int)count,
                MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  return 0;
}

EXPORT int ncclCommDestroy(void *comm) {
  free(comm);
  return 0;
}

EXPORT const char *ncclGetErrorString(int result) {
  return result == 4   ? "invalid argument"
         : result == 5 ? "invalid usage"
                       : "fake NCCL error";
}
