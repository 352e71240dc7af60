"""Atlas programs generated from array nodes (atlas_web/numpy/nodes.py), as text assembly.

Per-lane programs: lane ``GLOBAL_LANE_ID`` unravels its index over the node's (coalesced) shape with
u32 division and remainder by immediates, multiplies by each operand's strides, and loads through
``[handle + byte offset]`` (RegisterIndirectComputed), so no buffer handle is written into a program:
handles, base offsets and scalars are preset registers r1, r2, ... in ``Kernel.presets`` order.
Cooperative programs take 64-bit pointers ``(handle << 32)`` the same way. Standard library only.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..isa.types import Type
from ..launch import LaunchConfig
from ..program import Program
from .nodes import CoopMapNode, CoopReduceNode, DotNode, GemmNode, KernelNode, MapNode, Operand, ReduceNode
from .ops_table import OPS
from .shapes import size_of

__all__ = ["Kernel", "generate"]

#: the first register of the generated temporaries (presets take r1 upward)
_FIRST_TEMP = 48


@dataclass(frozen=True, slots=True, eq=False)
class Kernel:
    """A generated program, its launch, and the preset registers it expects: ``presets[i]`` is
    ``(kind, operand, Type)`` for register ``r(i+1)``; kind is "handle", "base", "scalar" or "pointer",
    operand an input index or -1 for the output. ``budget``: backward jumps a lane needs."""

    program: Program
    config: LaunchConfig
    presets: tuple[tuple[str, int, Type], ...]
    budget: int | None = None
    #: launch parameters made for recent preset values (atlas_web/numpy/runtime.py)
    params: dict = field(default_factory=dict)


class Emitter:
    """Lines of text assembly and fresh registers."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self._next = _FIRST_TEMP
        self._offsets: dict[tuple, str] = {}

    def reg(self) -> str:
        r = f"r{self._next}"
        self._next += 1
        return r

    def emit(self, text: str) -> None:
        self.lines.extend(line.strip() for line in text.splitlines() if line.strip())

    def const(self, value: int) -> str:
        r = self.reg()
        self.emit(f"mov_imm.u32 {r}, {value & 0xFFFFFFFF}")
        return r

    def unravel(self, index: str, shape: tuple[int, ...]) -> list[str]:
        """Registers holding the coordinates of the row-major ``index`` in ``shape``."""
        coords = [index] * len(shape)
        rest = index
        for axis in range(len(shape) - 1, 0, -1):
            size = self.const(shape[axis])
            coord, quotient = self.reg(), self.reg()
            self.emit(f"rem.u32 {coord}, {rest}, {size}\ndiv.u32 {quotient}, {rest}, {size}")
            coords[axis], rest = coord, quotient
        if shape:
            coords[0] = rest
        return coords

    def offset(self, coords: list[str], strides: tuple[int, ...], base: str | None, itemsize: int,
               share: bool = False) -> str:
        """A register holding the byte offset ``(base + sum(coord * stride)) * itemsize`` (u32, wrapping:
        negative strides are their two's complement). With ``share`` (straight-line code, where no
        offset register changes) operands read alike share one: the scalar lane loop runs every
        instruction for every lane."""
        key = (tuple(coords), tuple(strides), base, itemsize)
        if share and key in self._offsets:
            return self._offsets[key]
        acc = self.reg()
        if share:
            self._offsets[key] = acc
        terms = [(c, s) for c, s in zip(coords, strides) if s != 0]
        if not base and len(terms) == 1 and terms[0][1] == 1:  # contiguous: the coordinate itself
            self.emit(f"mul.u32 {acc}, {terms[0][0]}, {self.const(itemsize)}")
            return acc
        self.emit(f"mov.u32 {acc}, {base}" if base else f"mov_imm.u32 {acc}, 0")
        for coord, stride in zip(coords, strides):
            if stride == 0:
                continue
            if stride == 1:
                self.emit(f"add.u32 {acc}, {acc}, {coord}")
            else:
                self.emit(f"mad.u32 {acc}, {coord}, {self.const(stride)}, {acc}")
        self.emit(f"mul.u32 {acc}, {acc}, {self.const(itemsize)}")
        return acc

    def check_registers(self) -> None:
        """Raise ArrayError where the program needed more registers than a lane has (r252 up are special)."""
        if self._next > 252:
            from ..errors import ArrayError
            raise ArrayError(f"a generated program needs {self._next - _FIRST_TEMP} temporary registers, "
                             f"more than the {252 - _FIRST_TEMP} a lane has; split the computation")

    def store_lane(self, handle: str, value: str, ty: Type) -> None:
        """Store ``value`` (of ``ty``) at element GLOBAL_LANE_ID of the buffer ``handle``."""
        offset = self.offset(["r255"], (1,), None, ty.size_bytes())
        self.emit(f"stg.{ty.suffix} [{handle} + {offset}], {value}")

    def guard(self, lanes: int) -> None:
        """Spare lanes of the last block end at once."""
        self.emit(f"set.ge.u32 p0, r255, {self.const(lanes)}\nbra.p0 @done")

    def program(self) -> Program:
        return Program.from_text("\n".join([*self.lines, "done:", "exit"]))


def convert_to(em: Emitter, value: str, src: Type, dst: Type) -> str:
    if src == dst:
        return value
    out = em.reg()
    em.emit(f"cvt.{dst.suffix}.{src.suffix} {out}, {value}")
    return out


def input_presets(inputs: list[tuple[Type | None, bool]]) -> tuple[list[tuple[str, int, Type]],
                                                                   list[tuple[str, str | None]]]:
    """The presets of a program's inputs (operand k is input k: a scalar of the given type, or an array
    (None) read from a base offset where the flag says) and, per input, its registers: (handle or
    scalar, base or None)."""
    presets: list[tuple[str, int, Type]] = []
    registers: list[tuple[str, str | None]] = []
    for k, (scalar, based) in enumerate(inputs):
        if scalar is not None:
            presets.append(("scalar", k, scalar))
            registers.append((f"r{len(presets)}", None))
            continue
        presets.append(("handle", k, Type.U32))
        handle = f"r{len(presets)}"
        base = None
        if based:
            presets.append(("base", k, Type.U32))
            base = f"r{len(presets)}"
        registers.append((handle, base))
    return presets, registers


def emit_term(em: Emitter, op: str, compute: Type, out: Type, args: list[tuple[str, Type]]) -> str:
    """Emit the row ``op`` of ops_table.OPS over ``args`` (registers and their types): each converted
    to ``compute`` (where()'s condition is read as stored, u8), computed, and converted to ``out``;
    returns the register of the result (of type ``out``)."""
    converted = [convert_to(em, reg, ty, ty if (op == "where" and k == 0) else compute)
                 for k, (reg, ty) in enumerate(args)]
    row = OPS[op]
    result = em.reg()
    em.emit(row.body.format(d=result, t=compute.suffix, z=em.reg(), o=em.reg(), **dict(zip("abc", converted))))
    produced = Type.U8 if row.result == "bool" else compute
    return convert_to(em, result, produced, out)


def _map_kernel(node: MapNode) -> Kernel:
    em = Emitter()
    presets, registers = input_presets([(node.compute if o.strides is None else None, o.based) for o in node.inputs])
    bound = [(operand, reg, base) for operand, (reg, base) in zip(node.inputs, registers)]
    presets.append(("handle", -1, Type.U32))
    out_handle, out_base = f"r{len(presets)}", None
    if node.out_based:
        presets.append(("base", -1, Type.U32))
        out_base = f"r{len(presets)}"
    lanes = size_of(node.shape)
    em.guard(lanes)
    coords = em.unravel("r255", node.shape)
    args = []
    for operand, reg, base in bound:
        if operand.strides is None:
            args.append((reg, node.compute))
            continue
        offset = em.offset(coords, operand.strides, base, operand.dtype.size_bytes(), share=True)
        value = em.reg()
        em.emit(f"ldg.{operand.dtype.suffix} {value}, [{reg} + {offset}]")
        args.append((value, operand.dtype))
    stored = emit_term(em, node.op, node.compute, node.out, args)
    offset = em.offset(coords, node.out_strides, out_base, node.out.size_bytes(), share=True)
    em.emit(f"stg.{node.out.suffix} [{out_handle} + {offset}], {stored}")
    return Kernel(em.program(), LaunchConfig.linear(lanes), tuple(presets))


def _reduce_kernel(node: ReduceNode) -> Kernel:
    em = Emitter()
    presets = (("handle", 0, Type.U32), ("handle", -1, Type.U32))
    lanes = size_of(node.shape)
    count = size_of(node.reduce_shape)
    em.guard(lanes)
    base = em.offset(em.unravel("r255", node.shape), node.strides, None, 1)  # in elements
    itemsize = node.dtype.size_bytes()

    def load_at(position: str) -> str:
        coords = em.unravel(position, node.reduce_shape)
        offset = em.offset(coords, node.reduce_strides, base, itemsize)
        value = em.reg()
        em.emit(f"ldg.{node.dtype.suffix} {value}, [r1 + {offset}]")
        return convert_to(em, value, node.dtype, node.acc)

    result = emit_fold(em, node.op, node.acc, count, load_at)
    em.store_lane("r2", convert_to(em, result, fold_type(node.op, node.acc), node.out), node.out)
    return Kernel(em.program(), LaunchConfig.linear(lanes), presets, budget=count + 16)


def fold_type(op: str, acc_type: Type) -> Type:
    """The type of ``emit_fold``'s result register."""
    return Type.U32 if op in ("argmax", "argmin") else acc_type


def emit_fold(em: Emitter, op: str, acc_type: Type, count: int, load_at) -> str:
    """Fold ``count`` values (``load_at(position register)`` emits the load of one, in ``acc_type``) by
    ``op`` in index order; returns the register of the result: the accumulator (``acc_type``), or for
    argmax/argmin the u32 index of the first best (the first NaN, as NumPy)."""
    acc, index, j, one, limit = em.reg(), em.reg(), em.reg(), em.const(1), em.const(count)
    t = acc_type.suffix
    if op in ("sum", "prod"):
        em.emit(f"mov_imm.{t} {acc}, {0 if op == 'sum' else 1}\nmov_imm.u32 {j}, 0")
    else:  # max, min, argmax, argmin start from the first element (count >= 1 is checked by the caller)
        em.emit(f"mov_imm.u32 {j}, 0")
        em.emit(f"mov.{t} {acc}, {load_at(j)}\nmov_imm.u32 {index}, 0\nmov_imm.u32 {j}, 1")
    em.emit("loop:")
    em.emit(f"set.ge.u32 p1, {j}, {limit}\nbra.p1 @end")
    value = load_at(j)
    if op in ("sum", "prod", "max", "min"):
        mnemonic = {"sum": "add", "prod": "mul", "max": "max", "min": "min"}[op]
        em.emit(f"{mnemonic}.{t} {acc}, {acc}, {value}")
    else:
        # the first NaN wins, as in NumPy: stop at it; otherwise strictly better (or NaN) replaces
        # unordered (NaN replaces) for floats; for integers the unordered forms compare unsigned
        condition = ("gt" if op == "argmax" else "lt") + ("u" if acc_type.is_float() else "")
        em.emit(f"set.ne.{t} p2, {acc}, {acc}\nbra.p2 @end\n"
                f"set.{condition}.{t} p3, {value}, {acc}\nsel.{t} {acc}, p3, {value}, {acc}\n"
                f"sel.u32 {index}, p3, {j}, {index}")
    em.emit(f"add.u32 {j}, {j}, {one}\nbra @loop")
    em.emit("end:")
    return index if op in ("argmax", "argmin") else acc


def _dot_kernel(node: DotNode) -> Kernel:
    em = Emitter()
    presets = (("handle", 0, Type.U32), ("handle", 1, Type.U32), ("handle", -1, Type.U32))
    lanes = size_of(node.shape)
    em.guard(lanes)
    coords = em.unravel("r255", node.shape)
    size, t = node.ty.size_bytes(), node.ty.suffix
    a_at, b_at = em.offset(coords, node.a_strides, None, size), em.offset(coords, node.b_strides, None, size)
    a_step, b_step = em.const(node.a_k * size), em.const(node.b_k * size)
    acc, j, one, limit, x, y = em.reg(), em.reg(), em.const(1), em.const(node.k), em.reg(), em.reg()
    em.emit(f"mov_imm.{t} {acc}, 0\nmov_imm.u32 {j}, 0\nloop:\nset.ge.u32 p1, {j}, {limit}\nbra.p1 @end\n"
            f"ldg.{t} {x}, [r1 + {a_at}]\nldg.{t} {y}, [r2 + {b_at}]\nmul.{t} {x}, {x}, {y}\n"
            f"add.{t} {acc}, {acc}, {x}\nadd.u32 {a_at}, {a_at}, {a_step}\nadd.u32 {b_at}, {b_at}, {b_step}\n"
            f"add.u32 {j}, {j}, {one}\nbra @loop\nend:")
    em.store_lane("r3", acc, node.ty)
    return Kernel(em.program(), LaunchConfig.linear(lanes), presets, budget=node.k + 16)


def _coop_map_kernel(node: CoopMapNode) -> Kernel:
    operation = OPS[node.op].cooperative
    t = node.ty.suffix
    if node.arity == 1:
        text = f"pmap.{operation.text}.{t} [r2 + 0], [r1 + 0], {node.count}"
    else:
        text = f"pmap2.{operation.text}.{t} [r3 + 0], [r1 + 0], [r2 + 0], {node.count}"
    presets = tuple(("pointer", k, Type.U64) for k in range(node.arity)) + (("pointer", -1, Type.U64),)
    return Kernel(Program.from_text(text + "\nexit"), LaunchConfig(), presets)


def gemm_text(node: GemmNode, c: str, a: str, b: str) -> str:
    """The GEMM (BatchedGEMM for a batch) of ``node`` with C, A and B at the pointer registers given."""
    t, m, n, k = node.ty.suffix, node.m, node.n, node.k
    if node.batch == 1:
        return f"gemm.{t} [{c} + 0], [{a} + 0], [{b} + 0], {m}, {n}, {k}, 1.0, 0.0, false, false, 0, 0, 0"
    # leading dimensions and strides 0: packed
    return (f"bgemm.{t} [{c} + 0], [{a} + 0], [{b} + 0], {node.batch}, {m}, {n}, {k}, 1.0, 0.0, false, false, "
            "0, 0, 0, 0, 0, 0")


def _gemm_kernel(node: GemmNode) -> Kernel:
    presets = (("pointer", 0, Type.U64), ("pointer", 1, Type.U64), ("pointer", -1, Type.U64))
    return Kernel(Program.from_text(gemm_text(node, "r3", "r1", "r2") + "\nexit"), LaunchConfig(), presets)


def _kernel_instruction(node: KernelNode) -> Kernel:
    names = {f"a{k}": f"r{k + 1} + 0" for k in range(node.arrays)}
    text = node.text.format(out=f"r{node.arrays + 1} + 0", **names)
    presets = tuple(("pointer", k, Type.U64) for k in range(node.arrays)) + (("pointer", -1, Type.U64),)
    return Kernel(Program.from_text(text + "\nexit"), LaunchConfig(), presets)


#: numpy reduction name -> ParallelReduce operation spelling
_COOP_REDUCE = {"sum": "sum", "prod": "product", "max": "max", "min": "min"}


def _coop_reduce_kernel(node: CoopReduceNode) -> Kernel:
    t = node.ty.suffix
    text = f"preduce.{_COOP_REDUCE[node.op]}.{t} r10, [r1 + 0], {node.count}\nstg.{t} [r2 + 0], r10\nexit"
    return Kernel(Program.from_text(text), LaunchConfig(), (("pointer", 0, Type.U64), ("pointer", -1, Type.U64)))


#: node class -> generator (atlas_web/numpy/codegen_fused.py adds the fused nodes)
GENERATORS: dict[type, object] = {
    MapNode: _map_kernel, ReduceNode: _reduce_kernel, DotNode: _dot_kernel, GemmNode: _gemm_kernel,
    CoopMapNode: _coop_map_kernel, CoopReduceNode: _coop_reduce_kernel, KernelNode: _kernel_instruction,
}


def generate(node: object) -> Kernel:
    """The program computing ``node`` (a node of atlas_web/numpy/nodes.py) and how to launch it.
    Raises ProgramError only for a bug here (the generated text does not verify)."""
    return GENERATORS[type(node)](node)
