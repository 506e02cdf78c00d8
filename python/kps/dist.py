"""Several GPUs from Python: one process per GPU, NCCL communicators and named groups
(dist/communicator.h), and the collective ops by their usual names.

    import torch, kps
    world = kps.dist.init_world()                 # RANK/WORLD_SIZE/... or a world of 1
    x = torch.ones(4, device=f"cuda:{world.device}")
    y = kps.dist.all_reduce(x, op="sum")          # = kps.ops.all_reduce; group="world"
    kps.dist.synchronize()                        # bounded by the timeout: a dead peer raises
    kps.dist.destroy()

The collectives (all_reduce, broadcast, reduce, all_gather, reduce_scatter, all_to_all,
send, recv) are kps.ops' functions, re-exported here; each takes `group` (default
"world"), the name of a group this module made. Failures raise the exception of their
status (kps.call's table): ValueError when there is no GPU or no NCCL, LookupError for an
unknown group, TimeoutError when a peer does not answer within the timeout.
"""

from collections import namedtuple as _namedtuple
import sys as _sys

from . import _kps
from .ops import all_gather, all_reduce, all_to_all, broadcast, recv, reduce, reduce_scatter, send  # noqa: F401

__all__ = ["Group", "init_world", "is_initialized", "get_group", "group_names", "split", "placeholder",
           "remove_group", "destroy", "synchronize", "nccl_version", "nccl_library", "process_info",
           "all_reduce", "broadcast", "reduce", "all_gather", "reduce_scatter", "all_to_all", "send", "recv"]

# A communicator: rank, size, device (the CUDA ordinal of this rank's GPU), timeout_s,
# aborted, synchronize(stream, timeout_s), split(color, key, name), abort().
Group = _kps.Communicator

NcclVersion = _namedtuple("NcclVersion", ["major", "minor", "patch"])
NcclLibrary = _namedtuple("NcclLibrary", ["path", "code", "version"])


def process_info():
    """This process's place, read from the environment as init_world reads it (torchrun and
    `kps launch`: RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT;
    Open MPI, Slurm, PMI; none set: rank 0 of 1): a dict with rank, world_size, local_rank,
    local_world_size, master_addr, master_port and source (which launcher's variables)."""
    return _kps.dist_process_info()


def init_world(timeout_s=300.0):
    """Joins the world (kps::dist::InitWorld) and names it group "world": makes GPU
    local_rank % device count current (for KPS and, if imported, PyTorch), meets the other
    ranks at MASTER_ADDR:MASTER_PORT and makes the NCCL communicator, all within
    `timeout_s` (TimeoutError naming the rank otherwise). Every later wait on the group
    (split, synchronize) has the same timeout. Returns the world's Group."""
    world = _kps.dist_init_world(float(timeout_s))
    torch = _sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available():
        torch.cuda.set_device(world.device)  # torch's tensors on "cuda" then land on this rank's GPU
    return world


def is_initialized(group="world"):
    """Whether group `group` exists."""
    return group in _kps.dist_group_names()


def get_group(name="world"):
    """Group `name`, or LookupError listing the groups there are."""
    return _kps.dist_get_group(name)


def group_names():
    """The names of the groups, sorted."""
    return list(_kps.dist_group_names())


def split(color, key=None, name=None, group="world"):
    """Splits `group` as ncclCommSplit does: the ranks of one `color` form a new group,
    ordered by `key` (default: the rank in `group`). Collective: every rank of `group` calls
    it. The new group is named `name` (for the ops' group attribute) when given. A negative
    color joins none and returns None."""
    parent = _kps.dist_get_group(group)
    return parent.split(int(color), parent.rank if key is None else int(key), name)


def placeholder(rank, size, name=None):
    """A Group with a rank and a size but no NCCL (kps::dist::Communicator::Placeholder),
    named `name` when given: shape inference (kps._kps.infer, torch fake tensors) and tests
    without GPUs. Running a collective or synchronizing on it is a ValueError."""
    return _kps.dist_placeholder(int(rank), int(size), name)


def remove_group(name):
    """Forgets group `name` (its communicator is destroyed once nothing holds it)."""
    _kps.dist_remove_group(name)


def destroy():
    """Forgets every group (kps::dist::ClearGroups), so that init_world can run again. A
    communicator is finalized once the last reference goes, here or with the last Group
    object Python holds."""
    _kps.dist_clear_groups()


def _current_stream(device):
    """The caller's current CUDA stream on `device` as an int: torch's when torch is
    imported, else CuPy's when CuPy is, else 0 (the legacy default stream)."""
    torch = _sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available():
        return torch.cuda.current_stream(device).cuda_stream
    cupy = _sys.modules.get("cupy")
    if cupy is not None:
        with cupy.cuda.Device(device):
            return cupy.cuda.get_current_stream().ptr
    return 0


def synchronize(group="world", timeout_s=None, stream=None):
    """Waits for the work queued so far on `stream` (default: the current stream, as
    kps.call picks it) while polling `group`'s communicator for errors
    (Communicator::Synchronize). A peer that failed, or `timeout_s` (default: the group's)
    passing first, aborts the communicator and raises (TimeoutError naming the rank and
    world for a timeout). Read collective results after this rather than after a plain
    stream synchronization when a peer might be gone."""
    comm = _kps.dist_get_group(group)
    if stream is None:
        handle = _current_stream(comm.device)
    else:
        from . import _stream_int

        handle = _stream_int(stream)
    comm.synchronize(handle, None if timeout_s is None else float(timeout_s))


def nccl_library():
    """The NCCL library KPS opened (dist::NcclLibrary): path, code (ncclGetVersion) and
    version ("2.28.9"). ValueError saying why when KPS was built without NCCL, no
    libnccl.so.2 opens (each path with its reason) or the library is older than 2.18."""
    return NcclLibrary(*_kps.dist_nccl_library())


def nccl_version():
    """NCCL's version as a tuple (major, minor, patch); errors as nccl_library()."""
    code = nccl_library().code  # major * 10000 + minor * 100 + patch since NCCL 2.9
    return NcclVersion(code // 10000, code % 10000 // 100, code % 100)
