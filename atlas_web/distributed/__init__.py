"""Many devices: ``MultiDeviceExecutor`` over local backends, the collectives across them, and the layouts.

Standard library only (docs/distributed.md). Collectives are also instructions (AllReduce, AllGather, Broadcast,
ReduceScatter:
docs/semantics.md, Collectives): the identity on one backend, run across the devices by the executor.
"""

from .buffers import DistributedBuffer
from .collectives import Placement, all_gather, all_reduce, broadcast, reduce_scatter
from .executor import MultiDeviceExecutor
from .layouts import DataParallel, Replicated, Sharded, Tiled, split_blocks
from .stages import Hybrid, ModelParallel, PipelineParallel, Stage

__all__ = ["MultiDeviceExecutor", "DistributedBuffer", "DataParallel", "ModelParallel", "PipelineParallel", "Hybrid",
           "Stage", "Replicated", "Sharded", "Tiled", "split_blocks",
           "Placement", "all_reduce", "all_gather", "broadcast", "reduce_scatter"]
