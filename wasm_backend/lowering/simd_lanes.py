"""SIMD lane mode: four lanes per step in v128 registers, for programs that allow it.

A program qualifies when its lanes never suspend, its one segment's branches are the same in the four
lanes of a step (straight-line code, loops over uniform counts, uniform branches, a lane-id guard:
``simd_control``), and every instruction has a rule in ``SIMD_RULES`` for the abstract values of its
operands. Each register value is one of:

* ``Const`` — an integer known at compile time;
* ``Uniform`` — the same in every lane, computed once in the prologue (presets, float constants,
  loads from addresses that are the same for every lane and not stored to before);
* ``Affine`` — ``base + GLOBAL_LANE_ID * stride`` (integers; ``stride`` known at compile time, ``base``
  Const or Uniform) — lane ids and the addresses built from them;
* ``Scalar`` / ``Strided`` — the same in the lanes of a step, or ``local + k * stride`` in lane k of the
  step, computed in the step body (``simd_step``: loop counters, row and column indices, walking pointers);
* ``Vector`` — anything else: one v128 per 4 lanes of 32-bit types (and of BF16, held in f32 lanes),
  two of 64-bit types.

Predicates are Const, Uniform, ``LaneRange`` (a lane-id guard) or lane masks (``simd_masks``).

The rules: this module has the builder and the rules of MOV_IMM, MOV, CVT, MAD, MemFence, AND/OR/XOR,
SHL by a constant, ADD/SUB/MUL and the float DIV/MIN/MAX/ABS/NEG/SQRT/FLOOR/CEIL/TRUNC/ROUND;
``simd_memory`` LDG/STG (contiguous and uniform; the checks hoisted into the prologue, SIMD_FALLBACK
when one would trap); ``simd_masks`` SETcc on every 32/64-bit and BF16 type and SEL; ``simd_arith``
integer NOT/NEG/ABS/MIN/MAX/SHR, shifts by uniform amounts, FMA/FMS and the transcendentals. Those
modules add their rules to ``SIMD_RULES`` when imported (``simd_function`` imports them). Every rule
computes what the scalar lane rule computes, bit for bit; ``simd_step`` wraps the integer rules for
Scalar and Strided operands. BF16 values are f32 lanes rounded to BF16
after every inexact operation (``SimdBuilder.round_to``, the vector form of ``round_bf16``); F16 has no
rules (its conversions to and from f32 have three regimes each, branches in the scalar helpers), nor
do narrow integers and extended integers. Nothing in a step traps: instructions that might (integer
division by a register, Atlas lookups) and gathers have no rule, and accesses are checked before they
run (in the prologue, or in the step, which then stops: ``simd_control``). The function covers the first
``lanes - lanes % 4`` lanes; the launch runs the rest with the scalar segment.

``build_simd_function`` returns None (no SIMD mode) whenever an instruction, an operand shape or an
address has no rule — the scalar path is always there.
"""

from __future__ import annotations

from dataclasses import dataclass

from atlas_web.isa.registers import FIRST_SPECIAL_REGISTER, SpecialRegister
from atlas_web.isa.types import Type

from ..encoding.types import ValType
from .emitter import Emitter
from .module_context import ModuleContext
from .typemap import bank_of, type_info

__all__ = ["SimdBuilder", "SimdUnsupported", "Const", "Uniform", "Affine", "Vector", "Scalar", "Strided", "LaneRange",
           "LocalRecorder",
           "SIMD_DONE", "SIMD_FALLBACK", "SIMD_LANES", "SIMD_RULES", "UNROLL", "VECTOR_TYPES", "INT_TYPES",
           "FLOAT_LANE_TYPES", "lane_shape", "halves", "wrap", "lane_range_of", "float_unary", "float_binary"]

SIMD_DONE = 0
#: what the prologue returns when a check fails (nothing ran)
SIMD_FALLBACK = -1
#: lanes per step
SIMD_LANES = 4
#: steps per iteration of the main loop
UNROLL = 2
I32, I64, F32, F64, V128 = ValType.I32, ValType.I64, ValType.F32, ValType.F64, ValType.V128
VECTOR_TYPES = frozenset({Type.F32, Type.F64, Type.BF16, Type.I32, Type.U32, Type.I64, Type.U64})
#: float types with lanes here (BF16 in f32x4 lanes, rounded after every inexact operation)
FLOAT_LANE_TYPES = frozenset({Type.F32, Type.F64, Type.BF16})
INT_TYPES = frozenset({Type.I32, Type.U32, Type.I64, Type.U64})


class SimdUnsupported(Exception):
    """The program (or one of its instructions) has no SIMD rule: use the scalar lane code."""


@dataclass(frozen=True)
class Const:
    value: int


@dataclass(frozen=True)
class Uniform:
    local: int


@dataclass(frozen=True)
class Affine:
    base: Const | Uniform
    stride: int


@dataclass(frozen=True)
class Vector:
    locals: tuple[int, ...]


@dataclass(frozen=True)
class Scalar:
    """The same in the four lanes of a step, computed in the step body (``simd_step``): a local of the
    type's value type."""

    local: int


@dataclass(frozen=True)
class Strided:
    """Integers: lane k of a step holds ``local + k * stride`` (wrapping), ``local`` computed in the step
    body (``simd_step``); ``top``: a bound no lane's value exceeds (no wrap), when known."""

    local: int
    stride: int
    top: int | None = None


@dataclass(frozen=True)
class LaneRange:
    """A predicate that holds exactly for the lanes with GLOBAL_LANE_ID below ``bound`` (``below``) or at
    or above it (not ``below``): what a guard like ``set.ge p0, r255, n`` computes."""

    bound: int
    below: bool

    def inverted(self) -> "LaneRange":
        return LaneRange(self.bound, not self.below)


def lane_shape(ty: Type) -> str:
    return {Type.F32: "f32x4", Type.F64: "f64x2", Type.BF16: "f32x4", Type.I32: "i32x4", Type.U32: "i32x4",
            Type.I64: "i64x2", Type.U64: "i64x2"}[ty]


def halves(ty: Type) -> int:
    return 2 if ty.bits == 64 else 1


class LocalRecorder:
    """Records the locals the builder asks for; the function is defined (with the same locals, in
    order) only once the whole program turned out to have SIMD rules."""

    def __init__(self) -> None:
        self.types: list[tuple[ValType, str | None]] = []

    def add_local(self, valtype: ValType, name: str | None = None) -> int:
        self.types.append((valtype, name))
        return len(self.types) - 1


class SimdBuilder:
    """Abstract interpretation of the straight-line code, writing the prologue and the step body."""

    def __init__(self, m: ModuleContext, fb: LocalRecorder, program, info, config, lanes: int) -> None:
        self.m = m
        self.fb = fb
        self.program = program
        self.info = info
        self.config = config
        self.pro = Emitter()    # once per launch (uniform values, checks, address set-up)
        self.body = Emitter()   # once per step of four lanes
        self.values: dict[tuple[int, object], tuple[Type, object]] = {}
        #: the lanes this function runs: 0 … lanes-1 (a multiple of SIMD_LANES)
        self.lanes = lanes
        #: with a lane-id guard: how many leading lanes reach the guarded code (simd_function)
        self.guarded_lanes: int | None = None
        self.gid = fb.add_local(I32, "simd_gid")  # the step's first lane
        self.addresses: list[tuple[int, int]] = []  # (address local, bytes per step)
        #: every checked memory access: (address local of lane 0, bytes per lane, lanes it spans (1: the
        #: same address in every lane), whether it stores); simd_function decides from them whether
        #: ranges of lanes may run on several threads
        self.accesses: list[tuple[int, int, int, bool]] = []
        self.stored = False
        self.table = fb.add_local(I32, "simd_table")
        self.capacity = fb.add_local(I32, "simd_capacity")
        self.index = 0
        self.instr = None
        #: derived forms of values, for the rules modules (a predicate's lane masks: ``simd_masks``)
        self.derived: dict[object, object] = {}
        #: registers (and ("p", index) predicates) kept in fixed locals across control flow: key -> the
        #: form chosen for them (``simd_control.Homes``); None: straight-line code only
        self.homes = None
        #: whether the step body checks accesses (and the budget) itself: it may stop at a step's first lane
        self.body_checks = False
        #: LDG index -> i32 local: its accesses in a loop were checked before the loop (``simd_control``)
        self.hoisted: dict[int, int] = {}

    # ---- registers -----------------------------------------------------------------------------------
    def read(self, path: str) -> tuple[Type, object]:
        ty = self.info.use_types[(self.index, path)]
        name, _, sub = path.partition(".")
        value = getattr(self.instr, name)
        reg = (getattr(value, sub) if sub else value).index
        if reg >= FIRST_SPECIAL_REGISTER:
            return ty, self._special(SpecialRegister(reg))
        found = self.values.get((reg, bank_of(ty)))
        if found is None:
            raise SimdUnsupported(f"r{reg} is read before it is written")
        return ty, found[1]

    def write(self, value: object, path: str = "dst") -> None:
        ty = self.info.def_types[(self.index, path)]
        key = (getattr(self.instr, path).index, bank_of(ty))
        if self.homes is not None and key in self.homes.forms:
            value = self.homes.store(self, key, ty, value)
        self.values[key] = (ty, value)

    def write_predicate(self, index: int, value: object) -> None:
        """Predicate ``index`` := ``value`` (kept in its home across control flow, ``simd_control``)."""
        key = ("p", index)
        if self.homes is not None and key in self.homes.forms:
            value = self.homes.store(self, key, None, value)
        self.values[key] = (None, value)

    def _special(self, reg: SpecialRegister):
        if reg is SpecialRegister.GLOBAL_LANE_ID:
            return Affine(Const(0), 1)
        constant = self.config.uniform_specials()
        if reg not in constant:
            raise SimdUnsupported(f"{reg.name} varies in a way the SIMD mode does not model")
        return Const(constant[reg])

    def stop_if(self, e: Emitter) -> None:
        """Where the i32 on ``e``'s stack is nonzero, return the step's first lane: the lanes before it
        are done, the scalar lane code runs from there (``simd_control``)."""
        with e.if_():
            e.get(self.gid).op("return")

    # ---- scalars (prologue) -----------------------------------------------------------------------------
    def scalar(self, value, ty: Type) -> None:
        """Push a Const or Uniform value onto the prologue stack."""
        if isinstance(value, Const):
            (self.pro.i64 if ty.bits == 64 else self.pro.i32)(value.value)
        elif isinstance(value, Uniform):
            self.pro.get(value.local)
        else:
            raise SimdUnsupported("not a uniform value")

    def uniform_local(self, ty: Type) -> int:
        return self.fb.add_local(type_info(ty).valtype)

    # ---- vectors (step body) -----------------------------------------------------------------------------
    def vector(self, value, ty: Type) -> tuple[int, ...]:
        """The v128 locals holding ``value`` for the current step's four lanes."""
        if isinstance(value, Vector):
            return value.locals
        e = self.body
        out = tuple(self.fb.add_local(V128) for _ in range(halves(ty)))
        if isinstance(value, Strided):
            for h, half in enumerate(out):
                e.get(value.local).op(f"{lane_shape(ty)}.splat")
                e.op("v128.const", _lane_pattern(ty, value.stride, h)).op(f"{lane_shape(ty)}.add").set(half)
            return out
        if isinstance(value, (Const, Uniform, Scalar)):
            local = None if isinstance(value, Const) else value.local
            for half in out:
                if local is None:
                    (e.i64 if ty.bits == 64 else e.i32)(value.value)
                else:
                    e.get(local)
                e.op(f"{lane_shape(ty)}.splat").set(half)
            return out
        if isinstance(value, Affine):
            base = self.fb.add_local(type_info(ty).valtype)
            self.scalar(value.base, ty)
            self.pro.set(base)
            stride = value.stride
            # lane k of the step: base + (gid + k) * stride
            for h, half in enumerate(out):
                e.get(self.gid)
                if ty.bits == 64:
                    e.op("i64.extend_i32_u").i64(stride).op("i64.mul").get(base).op("i64.add").op("i64x2.splat")
                    pattern = b"".join(((2 * h + k) * stride & ((1 << 64) - 1)).to_bytes(8, "little") for k in range(2))
                    e.op("v128.const", pattern).op("i64x2.add").set(half)
                else:
                    e.i32(stride).op("i32.mul").get(base).op("i32.add").op("i32x4.splat")
                    pattern = b"".join((k * stride & 0xFFFFFFFF).to_bytes(4, "little") for k in range(4))
                    e.op("v128.const", pattern).op("i32x4.add").set(half)
            return out
        raise SimdUnsupported("no vector form")

    def round_to(self, ty: Type, vectors: tuple[int, ...]) -> None:
        """Round the f32x4 lanes of ``vectors`` to BF16 in place, as ``runtime.round_bf16`` (ties to even;
        NaN quieted with its upper half kept); nothing for the other types."""
        if ty is not Type.BF16:
            return
        e = self.body
        for v in vectors:
            e.get(v).op("v128.const", _splat32(0xFFFF0000)).op("v128.and").op("v128.const", _splat32(0x00400000))
            e.op("v128.or")
            e.get(v).op("v128.const", _splat32(0x7FFF)).op("i32x4.add").get(v).i32(16).op("i32x4.shr_u")
            e.op("v128.const", _splat32(1)).op("v128.and").op("i32x4.add").op("v128.const", _splat32(0xFFFF0000))
            e.op("v128.and")
            e.get(v).op("v128.const", _splat32(0x7FFFFFFF)).op("v128.and").op("v128.const", _splat32(0x7F800000))
            e.op("i32x4.gt_u").op("v128.bitselect").set(v)

    def vector_op(self, ty: Type, name: str, operands: list[tuple[int, ...]]) -> Vector:
        e = self.body
        out = tuple(self.fb.add_local(V128) for _ in range(halves(ty)))
        for h, half in enumerate(out):
            for op in operands:
                e.get(op[h])
            e.op(f"{lane_shape(ty)}.{name}").set(half)
        return Vector(out)

    # ---- the function -------------------------------------------------------------------------------------
    def run(self, instructions: range) -> None:
        for index in instructions:
            self.index = index
            self.instr = self.program.instructions[index]
            rule = SIMD_RULES.get(self.instr.INFO.name)
            if rule is None:
                raise SimdUnsupported(f"{self.instr.INFO.name} has no SIMD rule")
            rule(self, self.instr)


def _lane_pattern(ty: Type, stride: int, half: int) -> bytes:
    """``k * stride`` for the lanes k of vector half ``half`` of ``ty``."""
    if ty.bits == 64:
        return b"".join(((2 * half + k) * stride & ((1 << 64) - 1)).to_bytes(8, "little") for k in range(2))
    return b"".join((k * stride & 0xFFFFFFFF).to_bytes(4, "little") for k in range(4))


def _splat32(value: int) -> bytes:
    return (value & 0xFFFFFFFF).to_bytes(4, "little") * 4


def wrap(ty: Type, value: int) -> int:
    return value & ((1 << ty.bits) - 1)


# ---- rules -------------------------------------------------------------------------------------------------

def _simd_mov_imm(s: SimdBuilder, instr) -> None:
    ty = instr.ty
    if ty in INT_TYPES:
        s.write(Const(wrap(ty, instr.value)))
        return
    if ty not in VECTOR_TYPES:
        raise SimdUnsupported(f"MOV_IMM {ty.name}")
    local = s.uniform_local(ty)
    (s.pro.f64 if ty is Type.F64 else s.pro.f32)(instr.value)
    s.pro.set(local)
    s.write(Uniform(local))


def _simd_mov(s: SimdBuilder, instr) -> None:
    ty, value = s.read("src")
    if ty not in VECTOR_TYPES:
        raise SimdUnsupported(f"MOV {ty.name}")
    s.write(value)


def _int_fold(op: str, ty: Type, a: int, b: int) -> int:
    results = {"ADD": a + b, "SUB": a - b, "MUL": a * b, "AND": a & b, "OR": a | b, "XOR": a ^ b,
               "SHL": a << (b % ty.bits)}
    return wrap(ty, results[op])


def _affine_max(value: Affine, lanes: int) -> int | None:
    """The largest value of an Affine over the lanes when its base is known and it does not wrap."""
    if not isinstance(value.base, Const) or value.stride < 0:
        return None
    return value.base.value + (lanes - 1) * value.stride


def _uniform_op(s: SimdBuilder, ty: Type, op: str, a, b) -> Uniform:
    local = s.uniform_local(ty)
    s.scalar(a, ty)
    s.scalar(b, ty)
    s.pro.op(f"{type_info(ty).prefix}.{_SCALAR_OPS[op]}").set(local)
    return Uniform(local)


_SCALAR_OPS = {"ADD": "add", "SUB": "sub", "MUL": "mul", "AND": "and", "OR": "or", "XOR": "xor", "SHL": "shl"}
_VECTOR_INT_OPS = {"ADD": "add", "SUB": "sub", "MUL": "mul", "AND": "and", "OR": "or", "XOR": "xor"}
_BITWISE = frozenset({"AND", "OR", "XOR"})


def _affine_binary(s: SimdBuilder, ty: Type, op: str, a, b):
    """The Affine result of ``op`` when one operand is Affine and the other fits, else None."""
    uniform = (Const, Uniform)
    if isinstance(b, Affine) and isinstance(a, uniform) and op in ("ADD", "MUL", "OR"):
        a, b = b, a  # commutative
    if not isinstance(a, Affine):
        return None
    if isinstance(b, Affine) and op == "ADD":
        return Affine(_combine(s, ty, "ADD", a.base, b.base), wrap(ty, a.stride + b.stride))
    if not isinstance(b, uniform):
        return None
    if op in ("ADD", "SUB"):
        return Affine(_combine(s, ty, op, a.base, b), a.stride)
    if isinstance(b, Const) and op == "MUL":
        return Affine(_combine(s, ty, op, a.base, b), wrap(ty, a.stride * b.value))
    if isinstance(b, Const) and op == "SHL":
        return Affine(_combine(s, ty, op, a.base, b), wrap(ty, a.stride << (b.value % ty.bits)))
    if isinstance(b, Const) and op == "OR":
        # or with a constant whose set bits all lie above every value of the Affine: an addition
        top = _affine_max(a, s.lanes)
        low_bit = b.value & -b.value
        if top is not None and b.value and top < low_bit and a.base.value >= 0:
            return Affine(_combine(s, ty, "ADD", a.base, b), a.stride)
    return None


def _combine(s: SimdBuilder, ty: Type, op: str, a, b):
    if isinstance(a, Const) and isinstance(b, Const):
        return Const(_int_fold(op, ty, a.value, b.value))
    return _uniform_op(s, ty, op, a, b)


def _int_binary(op: str):
    def rule(s: SimdBuilder, instr) -> None:
        ty = instr.ty
        if ty not in INT_TYPES:
            raise SimdUnsupported(f"{op} {ty.name}")
        _, a = s.read("lhs" if op != "SHL" else "src")
        _, b = s.read("rhs" if op != "SHL" else "amount")
        if op == "SHL":
            if not isinstance(b, Const):
                raise SimdUnsupported("SHL by a varying amount")
            b = Const(b.value)
        if isinstance(a, (Const, Uniform)) and isinstance(b, (Const, Uniform)):
            s.write(_combine(s, ty, op, a, b))
            return
        affine = _affine_binary(s, ty, op, a, b)
        if affine is not None:
            s.write(affine)
            return
        if op == "SHL":
            lanes = lane_shape(ty)
            va = s.vector(a, ty)
            out = tuple(s.fb.add_local(V128) for _ in va)
            for src, dst in zip(va, out):
                s.body.get(src).i32(b.value % ty.bits).op(f"{lanes}.shl").set(dst)
            s.write(Vector(out))
            return
        name = _VECTOR_INT_OPS[op]
        if op in _BITWISE:
            s.write(Vector(_bitwise(s, name, s.vector(a, ty), s.vector(b, ty))))
            return
        s.write(s.vector_op(ty, name, [s.vector(a, ty), s.vector(b, ty)]))
    return rule


def _bitwise(s: SimdBuilder, name: str, a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    out = tuple(s.fb.add_local(V128) for _ in a)
    for x, y, dst in zip(a, b, out):
        s.body.get(x).get(y).op(f"v128.{name}").set(dst)
    return out


_FLOAT_BINARY = {"ADD": "add", "SUB": "sub", "MUL": "mul", "DIV": "div", "MIN": "min", "MAX": "max"}
#: float operations whose result is representable in the operands' format (no rounding to BF16)
_EXACT_FLOAT = frozenset({"MIN", "MAX", "ABS", "NEG", "FLOOR", "CEIL", "TRUNC", "ROUND"})
_FLOAT_UNARY = {"ABS": "abs", "NEG": "neg", "SQRT": "sqrt", "FLOOR": "floor", "CEIL": "ceil", "TRUNC": "trunc",
                "ROUND": "nearest"}


def float_binary(op: str):
    def rule(s: SimdBuilder, instr) -> None:
        ty = instr.ty
        if ty not in FLOAT_LANE_TYPES:
            raise SimdUnsupported(f"{op} {ty.name}")
        _, a = s.read("lhs")
        _, b = s.read("rhs")
        result = s.vector_op(ty, _FLOAT_BINARY[op], [s.vector(a, ty), s.vector(b, ty)])
        if op not in _EXACT_FLOAT:
            s.round_to(ty, result.locals)
        s.write(result)
    return rule


def float_unary(op: str):
    def rule(s: SimdBuilder, instr) -> None:
        ty = instr.ty
        if ty not in FLOAT_LANE_TYPES:
            raise SimdUnsupported(f"{op} {ty.name}")
        _, a = s.read("src")
        result = s.vector_op(ty, _FLOAT_UNARY[op], [s.vector(a, ty)])
        if op not in _EXACT_FLOAT:
            s.round_to(ty, result.locals)
        s.write(result)
    return rule


def _simd_mad(s: SimdBuilder, instr) -> None:
    ty = instr.ty
    if ty not in VECTOR_TYPES:
        raise SimdUnsupported(f"MAD {ty.name}")
    _, a = s.read("a")
    _, b = s.read("b")
    _, c = s.read("c")
    product = s.vector_op(ty, "mul", [s.vector(a, ty), s.vector(b, ty)])
    result = s.vector_op(ty, "add", [product.locals, s.vector(c, ty)])
    s.round_to(ty, result.locals)  # BF16: the product and the sum in f32, then the result to BF16
    s.write(result)


def _simd_cvt(s: SimdBuilder, instr) -> None:
    src, dst = instr.src_ty, instr.dst_ty
    _, value = s.read("src")
    if src in INT_TYPES and dst in INT_TYPES:
        if src.bits == dst.bits:
            s.write(value)
            return
        if isinstance(value, Const):
            signed = src.is_signed() and value.value >> (src.bits - 1)
            s.write(Const(wrap(dst, value.value - (1 << src.bits) if signed else value.value)))
            return
        if isinstance(value, Affine) and src.bits == 32 and dst.bits == 64:
            top = _affine_max(value, s.lanes)
            limit = 1 << 31 if src.is_signed() else 1 << 32
            if top is not None and top < limit:
                s.write(Affine(Const(value.base.value), value.stride))
                return
        raise SimdUnsupported(f"CVT {src.name} -> {dst.name} of this value")
    if src in (Type.I32, Type.U32) and dst is Type.F32:
        v = s.vector(value, src)
        out = s.fb.add_local(V128)
        s.body.get(v[0]).op(f"f32x4.convert_i32x4_{'s' if src.is_signed() else 'u'}").set(out)
        s.write(Vector((out,)))
        return
    if src is Type.F32 and dst is Type.F64:
        v = s.vector(value, src)
        low, high = s.fb.add_local(V128), s.fb.add_local(V128)
        s.body.get(v[0]).op("f64x2.promote_low_f32x4").set(low)
        s.body.get(v[0]).get(v[0]).op("i8x16.shuffle", tuple(range(8, 16)) * 2).op("f64x2.promote_low_f32x4").set(high)
        s.write(Vector((low, high)))
        return
    if src is Type.F64 and dst is Type.F32:
        v = s.vector(value, src)
        out = s.fb.add_local(V128)
        s.body.get(v[0]).op("f32x4.demote_f64x2_zero").get(v[1]).op("f32x4.demote_f64x2_zero")
        s.body.op("i8x16.shuffle", tuple(range(0, 8)) + tuple(range(16, 24))).set(out)
        s.write(Vector((out,)))
        return
    raise SimdUnsupported(f"CVT {src.name} -> {dst.name}")


#: condition -> (relation on the lane id, holds for the lanes below the bound)
_RANGE_CONDITIONS = {"LT": (0, True), "LTU": (0, True), "LE": (1, True), "LEU": (1, True),
                     "GE": (0, False), "GEU": (0, False), "GT": (1, False), "GTU": (1, False)}
_MIRRORED = {"LT": "GT", "LE": "GE", "GT": "LT", "GE": "LE", "LTU": "GTU", "LEU": "GEU", "GTU": "LTU",
             "GEU": "LEU"}


def lane_range_of(s: SimdBuilder, instr) -> LaneRange | None:
    """The LaneRange a SETcc computes when it is a lane-id guard ((base + GLOBAL_LANE_ID) compared with a
    constant, without wrapping), else None."""
    ty = instr.ty
    if ty not in INT_TYPES:
        return None
    _, a = s.read("lhs")
    _, b = s.read("rhs")
    cond = instr.cond.name
    if isinstance(a, Const) and isinstance(b, Affine):
        a, b, cond = b, a, _MIRRORED.get(cond, cond)
    if not (isinstance(a, Affine) and isinstance(b, Const) and isinstance(a.base, Const) and a.stride == 1
            and cond in _RANGE_CONDITIONS):
        return None
    top = a.base.value + s.config.total_threads
    limit = 1 << (ty.bits - 1 if ty.is_signed() and not cond.endswith("U") else ty.bits)
    if a.base.value < 0 or top >= limit or b.value >= limit:
        return None
    shift, below = _RANGE_CONDITIONS[cond]
    return LaneRange(max(0, b.value - a.base.value + shift), below)


def _simd_setcc(s: SimdBuilder, instr) -> None:
    """Only lane-id guards here (``simd_masks`` widens SETcc to lane masks)."""
    found = lane_range_of(s, instr)
    if found is None:
        raise SimdUnsupported("a predicate that is not a lane-id guard")
    s.write_predicate(instr.pred.index, found)


def _simd_nothing(s: SimdBuilder, instr) -> None:
    """MemFence orders nothing here."""


SIMD_RULES = {
    "MOV_IMM": _simd_mov_imm, "MOV": _simd_mov, "CVT": _simd_cvt, "MAD": _simd_mad,
    "MemFence": _simd_nothing, "SETcc": _simd_setcc,
    **{name: _int_binary(name) for name in ("AND", "OR", "XOR", "SHL")},
    **{name: float_unary(name) for name in _FLOAT_UNARY},
}


def _arith(name: str):
    integer, floating = _int_binary(name), float_binary(name)

    def rule(s: SimdBuilder, instr) -> None:
        (integer if instr.ty in INT_TYPES else floating)(s, instr)
    return rule


for _name in ("ADD", "SUB", "MUL"):
    SIMD_RULES[_name] = _arith(_name)
for _name in ("DIV", "MIN", "MAX"):
    SIMD_RULES[_name] = float_binary(_name)
