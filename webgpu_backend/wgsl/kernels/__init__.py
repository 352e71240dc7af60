"""WebGPU kernels of cooperative instructions: one module per kernel, registered against the
instruction's name (the table row's). Standard library only: nothing here touches a device.

The compiler, the launcher, the support queries and the code listing know a cooperative step only
through its registered ``Kernel``; an instruction without one runs its default expansion
(``atlas_web.lowering.expansions``) where it has one, else it is unsupported.

How to add a kernel (say ``GEMM``):

1. Write ``webgpu_backend/wgsl/kernels/gemm.py`` (standard library only) with a subclass of
   ``Kernel`` and register one instance: ``register(GemmKernel())``. Give it:

   - ``instruction = "GEMM"`` (the row's name) and ``launch_fields``: the u32 words of the
     per-dispatch ``launch`` record the shaders read (e.g. ``("dst", "src_a", "src_b", "m", "n", "k")``;
     names already declared by another kernel are shared; new ones are added to ``struct Launch``);
   - ``supports(operation, ty)``: whether it runs type ``ty`` (``operation``: the cooperative
     operation for rows that carry one, else None); ``operations(ty)`` when the row carries an
     operation (the default gives ``(None,)``); ``check(instr)`` raises UnsupportedOperation for an
     instruction it cannot run (the default asks ``supports(self.operation_of(instr), instr.ty)``);
   - ``plan(instr, operands, device) -> KernelPlan``: its dispatches in order, each a ``Dispatch``
     of a *shader spec*, the bindings (binding number -> an operand role or a launcher scratch
     buffer in ``SCRATCH_BINDINGS``) and the workgroup counts (``device.split(groups)`` folds a
     count past maxComputeWorkgroupsPerDimension into y and z), plus the ``launch`` field values
     of the step; ``scratch(instr)``: the bytes of the scratch buffers it binds by name ("work"), where it
     needs more than their size (the launcher grows them first). ``operands`` maps each array operand's role to (chunk buffer, byte offset):
     the written array is "dst", the read ones "src_a", "src_b", ... in operand order
     (``webgpu_backend.host_steps.binding_roles``, from ``atlas_web.isa.extents.array_operands``);
     ``binding_plan`` (``kernels.binding``) says whether every array can be bound at its own offset;
   - ``listing(instr)``: (label, shader spec) of its shaders in scalar form, for the code view.

   A *shader spec* is a frozen (hashable) dataclass with the fields ``guarded`` (check the launch
   guard: the launcher sets it False for the first dispatch of a submission) and ``bound``
   (each array bound at its own offset, so the bound range is the operand's extent rounded up to
   16 bytes) and the methods ``source(features) -> str`` (the WGSL; raises UnsupportedOperation)
   and ``layout() -> dict[int, str]`` (binding -> WebGPU binding type; 0 is ``launch``, 1 is
   ``rt``). The shader marks its step as reached (``rt[REACHED + launch.step] = launch.resume``)
   in its last dispatch, and writes a register result at ``rt[launch.result]``.
2. Add the module's name to ``_MODULES`` below (registration by import;
   tests/test_rule_modules.py fails for a kernel module that is not imported).
3. Take the row off ``webgpu_backend.docs``' documented-unsupported list and regenerate
   docs/backends.md; the conformance suite then runs the row's cases on webgpu.

Host steps (PoolAlloc, PoolFree) are kernels with ``host = True`` that run on the host between
submissions (``run_host``) instead of planning dispatches.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any

from atlas_web.isa.types import Type

from ...resources import split_workgroups
from ..rules import unsupported
from ..runtime_layout import declare_launch_fields

__all__ = ["Kernel", "KernelPlan", "Dispatch", "DeviceLimits", "KERNELS", "register", "kernel_for",
           "SCRATCH_BINDINGS"]

#: the launcher's scratch buffers a dispatch may bind by name ("work": sized per step by ``Kernel.scratch``)
SCRATCH_BINDINGS = frozenset({"partials", "work"})


@dataclass(frozen=True)
class DeviceLimits:
    """What a dispatch plan needs to know about the device: the most workgroups per dimension and
    the storage-buffer offset alignment."""

    max_groups: int
    bind_alignment: int

    def split(self, groups: int) -> tuple[int, int, int]:
        """``groups`` workgroups as an (x, y, z) grid within max_groups per dimension (resources.split_workgroups)."""
        return split_workgroups(groups, self.max_groups)


@dataclass(frozen=True)
class Dispatch:
    """One dispatch of a step: a shader spec (see the module docstring), binding -> operand role or
    scratch name, and the (x, y, z) workgroup counts."""

    shader: Any
    bindings: dict
    workgroups: tuple[int, int, int]


@dataclass(frozen=True)
class KernelPlan:
    """The dispatches of one cooperative step, in order, and the ``launch`` fields of its slot."""

    dispatches: tuple[Dispatch, ...]
    fields: dict = field(default_factory=dict)


class Kernel:
    """The WebGPU kernel of one cooperative instruction (see the module docstring)."""

    instruction: str = ""
    #: runs on the host between submissions (``run_host``) instead of dispatching shaders
    host: bool = False
    #: ``launch`` words its shaders read (declared into ``struct Launch`` when registered)
    launch_fields: tuple[str, ...] = ()
    #: a source array (src_a, src_b: the launcher keeps one scratch copy of each) overlapping the written
    #: one at another offset is copied to scratch first, so every element is computed from the values
    #: before the instruction
    snapshot_sources: bool = False
    #: its shaders may trap themselves (checks only the device can make, e.g. of arrays whose extent is read at
    #: launch): ``atomicMin(rt[TRAPS + launch.step], KERNEL_TRAP)`` and lane 0's record at ``launch.trap_info``
    #: with the instruction ``launch.trap_index`` (declare both in launch_fields; the launcher fills them, reads
    #: the traps and reports lane -1)
    traps_on_device: bool = False

    def operations(self, ty: Type | None) -> tuple:
        """The operations the row carries for ``ty`` (``(None,)``: the row has no operation field)."""
        return (None,)

    def operation_of(self, instr) -> object:
        """The operation ``instr`` carries (None: none)."""
        return None

    def supports(self, operation: object, ty: Type | None) -> bool:
        raise TypeError(f"kernel {self.instruction} defines no supports()")

    def check(self, instr) -> None:
        """Raise UnsupportedOperation when this kernel cannot run ``instr``."""
        operation = self.operation_of(instr)
        ty = getattr(instr, "ty", None)
        if not self.supports(operation, ty):
            name = self.instruction if operation is None else f"{self.instruction}.{operation.name}"
            raise unsupported(name, ty)

    def scratch(self, instr) -> dict[str, int]:
        """The bytes of the launcher's scratch buffers (by SCRATCH_BINDINGS name) ``instr``'s dispatches need; the
        launcher grows them before planning (ExecutionFailed past the device's binding limit)."""
        return {}

    def plan(self, instr, operands: dict, device: DeviceLimits) -> KernelPlan:
        raise TypeError(f"kernel {self.instruction} plans no dispatches")

    def listing(self, instr) -> list[tuple[str, Any]]:
        return []

    def run_host(self, step, lane0: dict, memory, driver, rt, uniforms_byte: int) -> None:
        raise TypeError(f"kernel {self.instruction} is not a host step")


#: instruction name -> its kernel
KERNELS: dict[str, Kernel] = {}


def register(kernel: Kernel) -> Kernel:
    """Register ``kernel`` for its instruction. Raises ValueError for a second kernel of one instruction."""
    if kernel.instruction in KERNELS:
        raise ValueError(f"{kernel.instruction} already has a WebGPU kernel ({type(KERNELS[kernel.instruction]).__name__})")
    KERNELS[kernel.instruction] = kernel
    declare_launch_fields(kernel.launch_fields)
    return kernel


def kernel_for(name: str) -> Kernel | None:
    """The kernel registered for instruction ``name`` (None: none)."""
    return KERNELS.get(name)


#: the kernel modules (each registers its kernels when imported)
_MODULES = ("map", "binary_map", "reduce", "pools", "gemm", "softmax", "norm", "sparse", "contract")
#: issue 11's convolution kernels
_MODULES += ("conv2d", "fft")
#: issue 11's attention kernels (RoPE, KVCacheUpdate, Attention, FlashAttention)
_MODULES += ("attention",)
for _module in _MODULES:
    importlib.import_module(f"{__name__}.{_module}")
