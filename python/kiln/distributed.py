"""The MPI world of a process started by ``mpirun`` or ``srun``
(docs/cluster.md).

``init()`` joins the launcher's world; a process started on its own is a
world of one and needs no MPI. :class:`kiln.InferenceSession` calls it, so a
tensor-parallel artifact (``kiln-compile --tensor-parallel=N``) runs under
``mpirun -n N python script.py`` as its rank's shard.

    import kiln.distributed as dist
    dist.init()
    if dist.rank() == 0: ...
    everyone = dist.gather(json.dumps(mine))   # on rank 0, in rank order
"""

from ._kiln import distributed as _d

init = _d.init
uses_mpi = _d.uses_mpi
rank = _d.rank
size = _d.size
local_rank = _d.local_rank
local_size = _d.local_size
nodes = _d.nodes
hostname = _d.hostname
launcher = _d.launcher
library = _d.library
barrier = _d.barrier
gather = _d.gather
broadcast = _d.broadcast
abort = _d.abort

__all__ = ["init", "uses_mpi", "rank", "size", "local_rank", "local_size",
           "nodes", "hostname", "launcher", "library", "barrier", "gather",
           "broadcast", "abort"]
