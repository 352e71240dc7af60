"""Lane state of the reference executor: registers, predicates, special registers, phase, call stacks.

Every per-lane quantity is a NumPy array over all lanes of the launch. A
register holds an array in the storage dtype of the type it was last written
with (``numeric.storage_dtype``); reading it as another integer type of the
same width reinterprets the bits (``numeric.as_type``). A write that covers
only some lanes with a type of another width or family moves the old array
aside ("shelves" it) and writes into a zero-filled array of the new type, so a
lane that later reads the old type still finds its own value. Arrays handed in
by a whole-launch write are stored as they are (no copy); the first masked
write into such an array copies it once, because the caller may share it.
"""

from __future__ import annotations

import numpy as np

from ..isa.registers import FIRST_SPECIAL_REGISTER, NUM_PREDICATES, NUM_REGISTERS, SpecialRegister
from ..isa.types import Type
from ..launch import LaunchConfig
from . import numeric

__all__ = ["RegisterFile", "PredicateFile", "LaneGeometry", "CallStacks", "bank_of"]


def bank_of(ty: Type) -> object:
    """The storage bank of ``ty``: integers of one width share a bank (reinterpreted), floats do not."""
    return ("int", ty.bits) if ty.is_integer() else ty


class LaneGeometry:
    """Where each lane sits in the launch: block, lane within block, and the special register values.

    Arrays are computed on first use and kept (a launch of a million lanes
    rarely reads every special register).
    """

    def __init__(self, config: LaunchConfig) -> None:
        self.config = config
        self.n = config.total_threads
        self.block_lanes = config.block_lanes
        self.num_blocks = config.num_blocks
        self._cache: dict[object, np.ndarray] = {}

    def global_ids(self) -> np.ndarray:
        """0 … n-1 as int64."""
        ids = self._cache.get("gid")
        if ids is None:
            ids = self._cache["gid"] = np.arange(self.n, dtype=np.int64)
        return ids

    def block_index(self) -> np.ndarray:
        """Each lane's linear block index (int64)."""
        blocks = self._cache.get("block")
        if blocks is None:
            blocks = self._cache["block"] = np.repeat(np.arange(self.num_blocks, dtype=np.int64), self.block_lanes)
        return blocks

    def special(self, reg: SpecialRegister) -> np.ndarray:
        """The u32 values of special register ``reg`` for every lane (read-only: shared by every read)."""
        values = self._cache.get(reg)
        if values is None:
            values = self._cache[reg] = self._compute_special(reg)
            values.flags.writeable = False
        return values

    def _compute_special(self, reg: SpecialRegister) -> np.ndarray:
        (gx, gy, _gz), (bx, by, _bz) = self.config.grid, self.config.block
        constant = self.config.uniform_specials()
        if reg in constant:
            return np.full(self.n, constant[reg], dtype=np.uint32)
        if reg is SpecialRegister.GLOBAL_LANE_ID:
            return np.arange(self.n, dtype=np.uint32)
        # computed on one block (or one row of blocks), then tiled / repeated: no division over every lane
        lane = np.arange(self.block_lanes, dtype=np.uint32)
        block = np.arange(self.num_blocks, dtype=np.uint32)
        in_block = {
            SpecialRegister.LANE_IDX_X: lambda: lane % bx,
            SpecialRegister.LANE_IDX_Y: lambda: (lane // bx) % by,
            SpecialRegister.LANE_IDX_Z: lambda: lane // (bx * by),
        }
        if reg in in_block:
            return np.tile(in_block[reg]().astype(np.uint32), self.num_blocks)
        of_block = {
            SpecialRegister.BLOCK_IDX_X: lambda: block % gx,
            SpecialRegister.BLOCK_IDX_Y: lambda: (block // gx) % gy,
            SpecialRegister.BLOCK_IDX_Z: lambda: block // (gx * gy),
        }
        return np.repeat(of_block[reg]().astype(np.uint32), self.block_lanes)


class _Slot:
    """One register: its type, its array over all lanes, whether the array is ours to mutate."""

    __slots__ = ("ty", "values", "owned")

    def __init__(self, ty: Type, values: np.ndarray, owned: bool) -> None:
        self.ty = ty
        self.values = values
        self.owned = owned


class RegisterFile:
    """r0 … r242 per lane, plus read access to the special registers r243 … r255.

    ``idx`` arguments select lanes: None for every lane of the launch, else an
    int64 array of global lane ids. Values read are never to be mutated by the
    caller (they may be the stored array itself).
    """

    def __init__(self, geometry: LaneGeometry) -> None:
        self.geometry = geometry
        self.n = geometry.n
        self._slots: list[_Slot | None] = [None] * NUM_REGISTERS
        # register index -> bank -> the slot a masked write of another type moved aside
        self._shelf: dict[int, dict[object, _Slot]] = {}

    def stored_type(self, index: int) -> Type | None:
        """The type register ``index`` was last written with (u32 for special registers; None if never)."""
        if index >= FIRST_SPECIAL_REGISTER:
            return Type.U32
        slot = self._slots[index]
        return None if slot is None else slot.ty

    def _slot_for_read(self, index: int, ty: Type) -> _Slot | None:
        if index >= FIRST_SPECIAL_REGISTER:
            return _Slot(Type.U32, self.geometry.special(SpecialRegister(index)), False)
        slot = self._slots[index]
        if slot is not None and bank_of(slot.ty) == bank_of(ty):
            return slot
        shelved = self._shelf.get(index)
        if shelved is not None:
            return shelved.get(bank_of(ty))
        return None

    def read(self, index: int, ty: Type, idx: np.ndarray | None) -> np.ndarray:
        """Register ``index`` read as ``ty`` for lanes ``idx`` (zeros where never written)."""
        slot = self._slot_for_read(index, ty)
        if slot is None:
            return numeric.zeros(ty, self.n if idx is None else len(idx))
        values = slot.values if idx is None else slot.values[idx]
        return values if slot.ty is ty else numeric.as_type(values, slot.ty, ty)

    def read_as_stored(self, index: int, idx: np.ndarray | None, default: Type = Type.U32) -> tuple[Type, np.ndarray]:
        """``(type, values)`` of register ``index`` in the type it was last written with.

        For operands whose type rule admits several types (``int``, ``int32``,
        ``ptr``) when no static type is known; a never-written register reads
        as zeros of ``default``.
        """
        ty = self.stored_type(index) or default
        return ty, self.read(index, ty, idx)

    def write(self, index: int, ty: Type, values: np.ndarray, idx: np.ndarray | None) -> None:
        """Set register ``index`` to ``values`` (of ``ty``) for lanes ``idx`` (None: every lane).

        A write for every lane stores ``values`` without copying it.
        """
        if idx is None:
            self._slots[index] = _Slot(ty, values, False)
            self._shelf.pop(index, None)
            return
        slot = self._slot_for_write(index, ty)
        if not slot.owned:
            slot.values = np.array(slot.values, copy=True)
            slot.owned = True
        slot.values[idx] = values

    def _slot_for_write(self, index: int, ty: Type) -> _Slot:
        slot = self._slots[index]
        if slot is not None and slot.ty is ty:
            return slot
        bank = bank_of(ty)
        if slot is not None and bank_of(slot.ty) == bank:
            # same-width integer of the other signedness: reinterpret every lane's bits
            slot = _Slot(ty, numeric.as_type(slot.values, slot.ty, ty), False)
            self._slots[index] = slot
            return slot
        shelf = self._shelf.setdefault(index, {})
        if slot is not None:
            shelf[bank_of(slot.ty)] = slot
        new = shelf.pop(bank, None)
        if new is None:
            new = _Slot(ty, numeric.zeros(ty, self.n), True)
        elif new.ty is not ty:
            new = _Slot(ty, numeric.as_type(new.values, new.ty, ty), False)
        if not shelf:
            del self._shelf[index]
        self._slots[index] = new
        return new


class PredicateFile:
    """p0 … p15 per lane as bool arrays; same lane selection and copy rules as RegisterFile."""

    def __init__(self, n: int) -> None:
        self.n = n
        self._values: list[np.ndarray | None] = [None] * NUM_PREDICATES
        self._owned = [False] * NUM_PREDICATES

    def read(self, index: int, idx: np.ndarray | None) -> np.ndarray:
        values = self._values[index]
        if values is None:
            return np.zeros(self.n if idx is None else len(idx), dtype=bool)
        return values if idx is None else values[idx]

    def write(self, index: int, values: np.ndarray, idx: np.ndarray | None) -> None:
        if idx is None:
            self._values[index] = np.asarray(values, dtype=bool)
            self._owned[index] = False
            return
        current = self._values[index]
        if current is None:
            current = np.zeros(self.n, dtype=bool)
        elif not self._owned[index]:
            current = current.copy()
        current[idx] = values
        self._values[index] = current
        self._owned[index] = True


class CallStacks:
    """Per-lane return-index stacks for CALL/RET; grows when a lane goes deeper than planned."""

    def __init__(self, n: int, depth: int) -> None:
        self.n = n
        self.depth = np.zeros(n, dtype=np.int64)
        self._frames = np.zeros((max(depth, 1), n), dtype=np.int64)

    def push(self, idx: np.ndarray | None, return_index: int) -> None:
        """Push ``return_index`` on the stacks of lanes ``idx``."""
        lanes = slice(None) if idx is None else idx
        depth = self.depth[lanes]
        needed = int(depth.max()) + 1 if depth.size else 0
        if needed > self._frames.shape[0]:
            grown = np.zeros((max(needed, 2 * self._frames.shape[0]), self.n), dtype=np.int64)
            grown[: self._frames.shape[0]] = self._frames
            self._frames = grown
        if idx is None:
            self._frames[depth, np.arange(self.n)] = return_index
        else:
            self._frames[depth, idx] = return_index
        self.depth[lanes] = depth + 1

    def pop(self, idx: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        """``(had_frame, return_index)`` for lanes ``idx``; pops where a frame exists."""
        lanes = slice(None) if idx is None else idx
        depth = self.depth[lanes]
        had = depth > 0
        top = np.maximum(depth - 1, 0)
        columns = np.arange(self.n) if idx is None else idx
        returns = self._frames[top, columns]
        self.depth[lanes] = top
        return had, returns
