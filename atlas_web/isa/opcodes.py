"""THE opcode table: the single source of truth of the Atlas ISA.

One row per instruction: its seed name, bytecode opcode, assembly mnemonic,
operands (in field order, with their kind, type rule and access), the types it
accepts, how it executes and a one-line meaning. The instruction dataclasses
(``atlas_web.isa.instructions``), the text assembly, the bytecode, the
verifier, the docs and every backend's rule table are derived from or checked
against it.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
from dataclasses import dataclass, field

from ..errors import ProgramError, TrapCode

from .effects import ADDRESS_TRAPS, Effects, derive_effects
from .addresses import Address
from .extents import Requirement, compile_extent
from .enums import BinaryMapOperation, Condition, MapOperation, MemoryScope, ReduceOperation
from .types import FLOAT_TYPES, INTEGER_TYPES_UP_TO_64, Type

__all__ = [
    "OperandKind", "Access", "ExecKind", "Operand", "OpcodeInfo", "OPCODE_TABLE",
    "TypeRule", "FLOATS", "INTS", "EXTENDED", "ALL", "SCALARS", "STRUCTURAL_INSTRUCTIONS", "Effects",
    "Requirement", "float_storage", "SUBNORMAL_FLUSHED_TYPES",
]


class OperandKind(enum.Enum):
    """What an operand field holds."""

    REG = "reg"            # a Register
    PRED = "pred"          # a Predicate
    OPT_PRED = "opt_pred"  # a Predicate or None (BRA)
    FLAG = "flag"          # a bool: BRA's negate (a suffix), GEMM's trans_a (listed: true / false)
    ADDR = "addr"          # an Address.* mode; ``rule`` is "global" or "shared"
    LABEL = "label"        # a Label (a str is accepted and converted)
    IMM = "imm"            # MOV_IMM's value: int or float of the instruction's type
    FLOAT = "float"        # a float immediate (alpha, beta, eps) stored in its own Type ``rule``: F32 or F64,
                           # or TypeRule.TY: the instruction's type (a row whose types are F32 and F64)
    UINT = "uint"          # an unsigned immediate of ``rule`` bits; also the shape operands (count, m, n, k)
                           # that address operands' extents name
    ENUM = "enum"          # a member of the enum class in ``rule``
    DIMS = "dims"          # a tuple of at most 8 unsigned 32-bit ints (``rule`` 1: a shape) or of int pairs
                           # (``rule`` 2: axis pairs); atlas_web/isa/dims.py


class Access(enum.Enum):
    READ = "r"
    WRITE = "w"
    READ_WRITE = "rw"


class ExecKind(enum.Enum):
    """How an instruction executes (DESIGN.md, execution model)."""

    LANE = "per-lane"
    CONTROL = "control"
    SYNC = "sync"
    COOPERATIVE = "cooperative"


class TypeRule(enum.Enum):
    """The static type a register operand must have (when not a fixed Type)."""

    TY = "ty"            # the instruction's ``ty``
    SRC_TY = "src_ty"    # CVT's source type
    DST_TY = "dst_ty"    # CVT's destination type
    INT = "int"          # any integer type of at most 64 bits
    INT32 = "int32"      # i32 or u32
    PTR = "ptr"          # i64 or u64 (a 64-bit pointer)


@dataclass(frozen=True, slots=True)
class Operand:
    """One operand field: name, kind, rule and access.

    ``rule`` is a TypeRule or a fixed Type for REG; "global"/"shared" for ADDR;
    the bit width for UINT (counts and shapes: the operands extents name); the
    storage Type (F32 or F64, or TypeRule.TY: the instruction's) for FLOAT; the enum class for ENUM. ``access`` is the access to
    the operand's registers (an address's registers are read). ADDR operands also
    say what they cover (atlas_web.isa.extents): ``memory``, the access to the
    elements; ``extent``, how many, as an expression over the row's UINT (shape)
    operands; ``element``, their type (a TypeRule naming a type field, or a Type).
    """

    name: str
    kind: OperandKind
    rule: object = None
    access: Access = Access.READ
    #: ENUM operands and BRA's predicate are spelled in the mnemonic suffix
    in_suffix: bool = False
    #: ADDR only: the access to the memory the address covers
    memory: Access | None = None
    #: ADDR only: the number of elements covered, e.g. "1", "count", "m*k"
    extent: str | None = None
    #: ADDR only: the elements' type
    element: object = None


@dataclass(frozen=True)
class OpcodeInfo:
    """One row of the opcode table."""

    name: str
    opcode: int
    mnemonic: str
    operands: tuple[Operand, ...]
    #: the names of the type fields: ("ty",), ("src_ty", "dst_ty") or ()
    type_fields: tuple[str, ...]
    types: frozenset[Type]
    kind: ExecKind
    category: str
    summary: str
    #: default for ``ty`` (cooperative instructions default to F32), or None when required
    default_type: Type | None = None
    #: instructions whose defaults appear after the operands (BRA's pred/negate)
    defaults: dict = field(default_factory=dict)
    #: what it reads, writes and may trap with, and whether lanes may run it in any order
    #: (atlas_web.isa.effects); None: derived from the row
    effects: Effects | None = None
    #: conditions on the shape, flag and float immediate fields the verifier checks (atlas_web.isa.extents.Requirement)
    requires: tuple[Requirement, ...] = ()
    #: on a device that flushes f32 subnormals (docs/semantics.md, Numbers): every step of this instruction's
    #: SUBNORMAL_FLUSHED_TYPES arithmetic may read a subnormal operand as a zero of its sign and give a zero of
    #: its sign for a subnormal result. False: it reads and keeps the bits on every device
    may_flush_subnormals: bool = False

    def __post_init__(self) -> None:
        for op in self.operands:
            _check_operand(self, op)
        for req in self.requires:
            _check_names(self, f"{self.name}: requirement on {req.operand!r}: condition", req.condition, floats=True)
        if self.effects is None:
            object.__setattr__(self, "effects", derive_effects(self))

    @functools.cached_property
    def address_operands(self) -> tuple[Operand, ...]:
        """The ADDR operands, in operand order."""
        return tuple(o for o in self.operands if o.kind is OperandKind.ADDR)

    @property
    def fields(self) -> tuple[str, ...]:
        """The instruction's field names: its operands in table order, then its type fields."""
        return tuple(o.name for o in self.operands) + self.type_fields

    def operand(self, name: str) -> Operand:
        """The operand named ``name``; raises KeyError when the instruction has none."""
        for o in self.operands:
            if o.name == name:
                return o
        raise KeyError(name)


def _check_operand(info: OpcodeInfo, op: Operand) -> None:
    """Refuse, with ProgramError naming the row and operand, an ADDR operand without a memory access, an
    extent that is not an expression over the row's UINT operands, or an element type naming no type field;
    and an extent on any other operand."""
    where = f"{info.name}: operand {op.name!r}"
    if op.kind is OperandKind.FLOAT and op.rule not in (Type.F32, Type.F64) and not (
            op.rule is TypeRule.TY and info.types and info.types <= {Type.F32, Type.F64}):
        raise ProgramError(f"{where}: a float immediate is stored as Type.F32, Type.F64 or (a row of F32 and F64) "
                           f"TypeRule.TY, not {op.rule!r}")
    if op.kind is not OperandKind.ADDR:
        if op.extent is not None or op.memory is not None or op.element is not None:
            raise ProgramError(f"{where}: only an address operand has a memory access, extent or element type")
        return
    if not isinstance(op.memory, Access):
        raise ProgramError(f"{where}: an address operand needs its memory access (Access.READ/WRITE/READ_WRITE)")
    if not isinstance(op.extent, str):
        raise ProgramError(f"{where}: an address operand needs its extent (e.g. \"1\", \"count\", \"m*k\")")
    _check_names(info, f"{where}: extent", op.extent)
    if not (isinstance(op.element, Type) or (isinstance(op.element, TypeRule) and op.element.value in info.type_fields)):
        raise ProgramError(f"{where}: element type {op.element!r} is neither a Type nor a type field of the row")


def _check_names(info: OpcodeInfo, what: str, expression: str, floats: bool = False) -> None:
    """Refuse an extent or condition (``what`` names it) that is not an expression (compile_extent) over the
    row's shape (UINT, DIMS) and flag (FLAG) operands, and (``floats``: a condition) its FLOAT immediates."""
    kinds = (OperandKind.UINT, OperandKind.FLAG, OperandKind.DIMS) + ((OperandKind.FLOAT,) if floats else ())
    shapes = {o.name for o in info.operands if o.kind in kinds}
    compiled = compile_extent(expression)
    unknown = compiled.names - shapes
    if unknown:
        raise ProgramError(f"{what} {expression!r} names {', '.join(sorted(unknown))}, "
                           f"not a shape (UINT, DIMS){', float' if floats else ''} or flag operand of the row")
    counts = {o.name for o in info.operands if o.kind is OperandKind.ADDR and isinstance(o.element, Type)
              and not o.element.is_float() and not compile_extent(o.extent).loads}
    if compiled.loads - counts:
        raise ProgramError(f"{what} {expression!r} reads an element of {', '.join(sorted(compiled.loads - counts))}, "
                           "not an integer array operand of the row with an extent of its own")


def float_storage(op: Operand, ty: Type | None) -> Type:
    """The Type a FLOAT operand is stored in on an instruction of type ``ty``."""
    return ty if op.rule is TypeRule.TY else op.rule  # type: ignore[return-value]


FLOATS = frozenset(FLOAT_TYPES)
INTS = frozenset(INTEGER_TYPES_UP_TO_64)
EXTENDED = frozenset(t for t in Type if t.is_extended())
SCALARS = FLOATS | INTS
ALL = SCALARS | EXTENDED
NONE: frozenset[Type] = frozenset()

R, W, RW = Access.READ, Access.WRITE, Access.READ_WRITE
K = OperandKind
T = TypeRule


def _reg(name: str, rule: object = T.TY, access: Access = R) -> Operand:
    return Operand(name, K.REG, rule, access)


def _dst(rule: object = T.TY) -> Operand:
    return Operand("dst", K.REG, rule, W)


def _addr(name: str, space: str, memory: Access, extent: str = "1", element: object = T.TY) -> Operand:
    """An address operand covering ``extent`` elements of ``element`` type in ``space``."""
    return Operand(name, K.ADDR, space, memory=memory, extent=extent, element=element)


_ROWS: list[OpcodeInfo] = []


#: the types whose subnormals are f32 subnormals (BF16 has f32's exponent range): what a device that flushes
#: f32 subnormals reads and writes as zeros (F16 computes in f32, where its subnormals are normal numbers)
SUBNORMAL_FLUSHED_TYPES = frozenset({Type.F32, Type.BF16})

#: the rows whose F32/BF16 arithmetic a device that flushes subnormals may flush (``may_flush_subnormals``): the
#: steps a GPU computes with its float unit. Every other row reads the bits (webgpu computes DIV/RCP/SQRT/RSQRT,
#: FMA/FMS, REM, the logarithms, comparisons, MIN/MAX/CLAMP, SIGN and CVT in integer arithmetic for this reason)
_MAY_FLUSH_SUBNORMALS = frozenset({
    "ADD", "SUB", "MUL", "MAD", "LERP", "FLOOR", "CEIL", "ROUND", "TRUNC",
    "EXP", "SIN", "COS", "TAN", "TANH", "SIGMOID", "GELU", "SWISH", "ReduceAdd", "ReduceMul",
})


def _row(name, opcode, mnemonic, operands, types, kind, category, summary, *,
         type_fields=("ty",), default_type=None, defaults=None, effects=None, requires=()):
    """Add a row; ``effects``: what derive_effects cannot see in the operands (its keyword arguments)."""
    info = OpcodeInfo(name, opcode, mnemonic, tuple(operands), tuple(type_fields) if types else (),
                      frozenset(types), kind, category, summary, default_type, dict(defaults or {}),
                      requires=tuple(requires), may_flush_subnormals=name in _MAY_FLUSH_SUBNORMALS)
    if effects:
        info = dataclasses.replace(info, effects=derive_effects(info, **effects))
    _ROWS.append(info)


L, C, S, CO = ExecKind.LANE, ExecKind.CONTROL, ExecKind.SYNC, ExecKind.COOPERATIVE
BIN = (_dst(), _reg("lhs"), _reg("rhs"))
UN = (_dst(), _reg("src"))
ABC = (_dst(), _reg("a"), _reg("b"), _reg("c"))
GADDR = "global"
SADDR = "shared"

#: effects the operands do not show (derive_effects' keywords)
INTEGER_DIVISION = {"traps": {TrapCode.DIVISION_BY_ZERO, TrapCode.INTEGER_OVERFLOW}}
CLASS_CHECKED = {"traps": {TrapCode.INVALID_CLASS}}
#: the phase is the lane's own: writing it is invisible to other lanes
LANE_PHASE = {"reads": {"atlas"}, "writes": {"atlas"}, "order_free": True}

# --- data movement -------------------------------------------------------------
_row("LDG", 0x01, "ldg", [_dst(), _addr("src", GADDR, R)], ALL, L, "data movement",
     "dst = the value of type ty at global address src")
_row("STG", 0x02, "stg", [_addr("dst", GADDR, W), _reg("src")], ALL, L, "data movement",
     "store src (type ty) at global address dst")
_row("LDS", 0x03, "lds", [_dst(), _addr("src", SADDR, R)], ALL, L, "data movement",
     "dst = the value of type ty at shared-memory address src")
_row("STS", 0x04, "sts", [_addr("dst", SADDR, W), _reg("src")], ALL, L, "data movement",
     "store src (type ty) at shared-memory address dst")
_row("MOV", 0x05, "mov", UN, ALL, L, "data movement", "dst = src")
_row("MOV_IMM", 0x06, "mov_imm", [_dst(), Operand("value", K.IMM)], ALL, L, "data movement",
     "dst = the immediate value (rounded or wrapped to ty)")
_row("CVT", 0x07, "cvt", [_dst(T.DST_TY), _reg("src", T.SRC_TY)], ALL, L, "data movement",
     "dst = src converted from src_ty to dst_ty (see docs/semantics.md, Conversions)", type_fields=("src_ty", "dst_ty"))

# --- arithmetic ----------------------------------------------------------------
_row("ADD", 0x10, "add", BIN, ALL, L, "arithmetic", "dst = lhs + rhs")
_row("SUB", 0x11, "sub", BIN, ALL, L, "arithmetic", "dst = lhs - rhs")
_row("MUL", 0x12, "mul", BIN, ALL, L, "arithmetic", "dst = lhs * rhs")
_row("DIV", 0x13, "div", BIN, ALL, L, "arithmetic",
     "dst = lhs / rhs; integers truncate toward zero, trap DIVISION_BY_ZERO and INTEGER_OVERFLOW (MIN / -1)",
     effects=INTEGER_DIVISION)
_row("REM", 0x14, "rem", BIN, ALL, L, "arithmetic",
     "dst = lhs - trunc(lhs / rhs) * rhs (sign of lhs; fmod for floats); integer traps as DIV",
     effects=INTEGER_DIVISION)
_row("MAD", 0x15, "mad", ABC, ALL, L, "arithmetic", "dst = a * b + c, rounded twice")
_row("FMA", 0x16, "fma", ABC, FLOATS, L, "arithmetic", "dst = a * b + c, rounded once")
_row("FMS", 0x17, "fms", ABC, FLOATS, L, "arithmetic", "dst = a * b - c, rounded once")
_row("MIN", 0x18, "min", BIN, ALL, L, "arithmetic", "dst = min(lhs, rhs); NaN propagates; -0 < +0")
_row("MAX", 0x19, "max", BIN, ALL, L, "arithmetic", "dst = max(lhs, rhs); NaN propagates; -0 < +0")
_row("ABS", 0x1A, "abs", UN, ALL, L, "arithmetic", "dst = |src| (integers wrap: |MIN| = MIN)")
_row("NEG", 0x1B, "neg", UN, ALL, L, "arithmetic", "dst = -src (integers wrap)")
_row("RCP", 0x1C, "rcp", UN, FLOATS, L, "arithmetic", "dst = 1 / src")
_row("RSQRT", 0x1D, "rsqrt", UN, FLOATS, L, "arithmetic", "dst = 1 / sqrt(src)")
_row("CLAMP", 0x1E, "clamp", [_dst(), _reg("src"), _reg("min"), _reg("max")], ALL, L, "arithmetic",
     "dst = min(max(src, min), max), with MIN/MAX's NaN rules")
_row("LERP", 0x1F, "lerp", [_dst(), _reg("a"), _reg("b"), _reg("t")], FLOATS, L, "arithmetic",
     "dst = a + t * (b - a), each step rounded")
_row("SIGN", 0x20, "sign", UN, ALL, L, "arithmetic", "dst = -1, 0 or +1 by the sign of src (NaN -> NaN, ±0 -> ±0)")
_row("FLOOR", 0x21, "floor", UN, FLOATS, L, "arithmetic", "dst = the largest integer <= src")
_row("CEIL", 0x22, "ceil", UN, FLOATS, L, "arithmetic", "dst = the smallest integer >= src")
_row("ROUND", 0x23, "round", UN, FLOATS, L, "arithmetic", "dst = src rounded to the nearest integer, ties to even")
_row("TRUNC", 0x24, "trunc", UN, FLOATS, L, "arithmetic", "dst = src rounded toward zero")

# --- logic ---------------------------------------------------------------------
INTEGERS = INTS | EXTENDED
_row("AND", 0x30, "and", BIN, INTEGERS, L, "logic", "dst = lhs & rhs")
_row("OR", 0x31, "or", BIN, INTEGERS, L, "logic", "dst = lhs | rhs")
_row("XOR", 0x32, "xor", BIN, INTEGERS, L, "logic", "dst = lhs ^ rhs")
_row("NOT", 0x33, "not", UN, INTEGERS, L, "logic", "dst = ~src")
_row("SHL", 0x34, "shl", [_dst(), _reg("src"), _reg("amount", T.INT32)], INTEGERS, L, "logic",
     "dst = src << (amount mod bits)")
_row("SHR", 0x35, "shr", [_dst(), _reg("src"), _reg("amount", T.INT32)], INTEGERS, L, "logic",
     "dst = src >> (amount mod bits); arithmetic on signed, logical on unsigned")
_row("SETcc", 0x36, "set", [Operand("pred", K.PRED, None, W), _reg("lhs"), _reg("rhs"),
                            Operand("cond", K.ENUM, Condition, in_suffix=True)], ALL, L, "logic",
     "pred = lhs cond rhs")
_row("SEL", 0x37, "sel", [_dst(), Operand("pred", K.PRED), _reg("true_val"), _reg("false_val")], ALL, L, "logic",
     "dst = pred ? true_val : false_val")

# --- control -------------------------------------------------------------------
_row("BRA", 0x40, "bra", [Operand("target", K.LABEL), Operand("pred", K.OPT_PRED, in_suffix=True),
                          Operand("negate", K.FLAG, in_suffix=True)], NONE, C, "control",
     "jump to target; with pred, only where pred (or, negated, where not pred) holds",
     defaults={"pred": None, "negate": False})
_row("CALL", 0x41, "call", [Operand("target", K.LABEL)], NONE, C, "control",
     "push the return address and jump to target (no recursion)")
_row("RET", 0x42, "ret", [], NONE, C, "control", "return to after the last CALL; with no CALL pending, end the lane")
_row("LOOP", 0x43, "loop", [_reg("count", T.INT32, RW), Operand("body", K.LABEL)], NONE, C, "control",
     "if count != 0: count -= 1 and jump to body while count != 0")
_row("EXIT", 0x44, "exit", [], NONE, C, "control", "end the lane")

# --- synchronization -----------------------------------------------------------
_row("BarSync", 0x48, "bar.sync", [Operand("id", K.UINT, 8)], NONE, S, "sync",
     "wait until every lane of the block reaches this barrier (uniform control flow only)",
     effects={"barrier": True})
_row("MemFence", 0x49, "memfence", [Operand("scope", K.ENUM, MemoryScope, in_suffix=True)], NONE, S, "sync",
     "order this lane's memory accesses at the given scope", effects={"order_free": True})  # its own accesses

# --- Atlas ---------------------------------------------------------------------
_row("ClsGet", 0x50, "cls.get", [_dst(Type.U8), _reg("src", T.INT)], NONE, L, "atlas",
     "dst:u8 = classify(low byte of src)")
_row("MIRROR", 0x51, "mirror", [_dst(Type.U8), _reg("src", T.INT)], NONE, L, "atlas",
     "dst:u8 = mirror(src); src >= 96 traps INVALID_CLASS", effects=CLASS_CHECKED)
_row("UnityTest", 0x52, "unity.test", [Operand("pred", K.PRED, None, W), _reg("src", T.INT)], NONE, L, "atlas",
     "pred = src in {1, 4}")
_row("NbrCount", 0x53, "nbr.count", [_dst(Type.U32), _reg("class_id", T.INT)], NONE, L, "atlas",
     "dst:u32 = degree(class_id); class_id >= 96 traps INVALID_CLASS", effects=CLASS_CHECKED)
_row("NbrGet", 0x54, "nbr.get", [_dst(Type.U8), _reg("class_id", T.INT), _reg("index", T.INT)], NONE, L, "atlas",
     "dst:u8 = neighbours(class_id)[index] ascending; index >= degree gives 255", effects=CLASS_CHECKED)
_row("ResAccum", 0x55, "res.accum", [_reg("class_id", T.INT), _reg("value")], frozenset({Type.F32, Type.F64}), L,
     "atlas", "resonance accumulator[class_id] += value (read by backend.resonance_accumulator())",
     effects={"writes": {"atlas"}, "traps": {TrapCode.INVALID_CLASS}})
_row("PhaseGet", 0x56, "phase.get", [_dst(Type.U32)], NONE, L, "atlas", "dst:u32 = the lane's phase",
     effects={"reads": {"atlas"}})
_row("PhaseAdv", 0x57, "phase.adv", [Operand("delta", K.UINT, 32)], NONE, L, "atlas",
     "phase = (phase + delta) mod 768", effects=LANE_PHASE)
_row("PhaseWrite", 0x58, "phase.write", [_reg("src", T.INT)], NONE, L, "atlas", "phase = src mod 768",
     effects=LANE_PHASE)
_row("BoundMap", 0x59, "bound.map", [_dst(Type.U64), _reg("class_id", T.INT), _reg("page", T.INT),
                                     _reg("byte", T.INT)], NONE, L, "atlas",
     "dst:u64 = class_id*12288 + page*256 + byte; traps INVALID_CLASS / OUT_OF_BOUNDS",
     effects={"traps": {TrapCode.INVALID_CLASS, TrapCode.OUT_OF_BOUNDS}})

# --- per-lane reductions -------------------------------------------------------
for _name, _op, _mn, _what in (("ReduceAdd", 0x60, "reduce.add", "sum"),
                               ("ReduceMin", 0x61, "reduce.min", "minimum"),
                               ("ReduceMax", 0x62, "reduce.max", "maximum"),
                               ("ReduceMul", 0x63, "reduce.mul", "product")):
    _row(_name, _op, _mn, [_dst(), _addr("src_array", GADDR, R, "count"), Operand("count", K.UINT, 32)], SCALARS, L,
         "reduction", f"dst = the {_what} of count values of type ty from src_array, in index order")

# --- transcendentals -----------------------------------------------------------
for _name, _op, _what in (("EXP", 0x70, "e**src"), ("LOG", 0x71, "ln(src)"), ("LOG2", 0x72, "log2(src)"),
                          ("LOG10", 0x73, "log10(src)"), ("SQRT", 0x74, "sqrt(src), correctly rounded"),
                          ("SIN", 0x75, "sin(src)"), ("COS", 0x76, "cos(src)"), ("TAN", 0x77, "tan(src)"),
                          ("TANH", 0x78, "tanh(src)"), ("SIGMOID", 0x79, "1 / (1 + e**-src)"),
                          ("GELU", 0x7A, "0.5*src*(1 + tanh(sqrt(2/pi)*(src + 0.044715*src**3)))"),
                          ("SWISH", 0x7B, "src * sigmoid(src)")):
    _row(_name, _op, _name.lower(), UN, FLOATS, L, "transcendental", f"dst = {_what}")

# --- pools ---------------------------------------------------------------------
_row("PoolAlloc", 0x80, "pool.alloc", [_dst(Type.U32), Operand("size", K.UINT, 32)], NONE, CO, "pool",
     "once per launch: allocate a zeroed pool of size bytes; dst:u32 = its handle (uniform)",
     effects={"writes": {"pool"}, "traps": {TrapCode.POOL_EXHAUSTED}})
_row("PoolFree", 0x81, "pool.free", [_reg("handle", T.INT32)], NONE, CO, "pool",
     "once per launch: free the pool named by handle (lane 0's value)",
     effects={"writes": {"pool"}, "traps": {TrapCode.INVALID_HANDLE}})
_row("PoolLoad", 0x82, "pool.load", [_dst(), _reg("pool", T.INT32), _reg("offset", T.INT)], ALL, L, "pool",
     "dst = the value of type ty at byte offset of pool", effects={"reads": {"pool"}, "traps": ADDRESS_TRAPS["global"]})
_row("PoolStore", 0x83, "pool.store", [_reg("pool", T.INT32), _reg("offset", T.INT), _reg("src")], ALL, L, "pool",
     "store src (type ty) at byte offset of pool", effects={"writes": {"pool"}, "traps": ADDRESS_TRAPS["global"]})

# --- cooperative ---------------------------------------------------------------
_row("ParallelMap", 0x90, "pmap", [_addr("dst_array", GADDR, W, "count"), _addr("src_array", GADDR, R, "count"),
                                   Operand("count", K.UINT, 32),
                                   Operand("operation", K.ENUM, MapOperation, in_suffix=True)],
     SCALARS, CO, "cooperative", "once per launch: dst_array[i] = operation(src_array[i]) for i < count",
     default_type=Type.F32)
_row("ParallelMapBinary", 0x91, "pmap2", [_addr("dst_array", GADDR, W, "count"), _addr("src_a", GADDR, R, "count"),
                                          _addr("src_b", GADDR, R, "count"), Operand("count", K.UINT, 32),
                                          Operand("operation", K.ENUM, BinaryMapOperation, in_suffix=True)],
     SCALARS, CO, "cooperative", "once per launch: dst_array[i] = operation(src_a[i], src_b[i]) for i < count",
     default_type=Type.F32)
_row("ParallelReduce", 0x92, "preduce", [_dst(), _addr("src_array", GADDR, R, "count"), Operand("count", K.UINT, 32),
                                         Operand("operation", K.ENUM, ReduceOperation, in_suffix=True)],
     SCALARS, CO, "cooperative", "once per launch: dst (uniform) = operation over src_array[0:count]",
     default_type=Type.F32)

# --- kernels (run on compiled backends by their default expansion: atlas_web/lowering/expansions.py) -------
_row("LayerScale", 0x93, "layerscale", [_addr("output", GADDR, W, "rows*n"), _addr("input", GADDR, R, "rows*n"),
                                        _addr("scale", GADDR, R, "n"), Operand("n", K.UINT, 32),
                                        Operand("rows", K.UINT, 32)],
     FLOATS, CO, "kernel", "once per launch: output[r*n+i] = input[r*n+i] * scale[i] for r < rows, i < n "
     "(f16/bf16 computed in f32: the product is exact there, so rounded once)",
     default_type=Type.F32, defaults={"rows": 1})

# --- matrix kernels (docs/semantics.md, Matrix kernels): row-major; ld 0 and stride 0 mean packed --------------
#: the stored shape of A (k x m when transposed) and of B (n x k when transposed)
_A_SHAPE = "k if trans_a else m, m if trans_a else k"
_B_SHAPE = "n if trans_b else k, k if trans_b else n"
_SHAPE = (Operand("m", K.UINT, 32), Operand("n", K.UINT, 32), Operand("k", K.UINT, 32))
_LAYOUT = (Operand("trans_a", K.FLAG), Operand("trans_b", K.FLAG), Operand("lda", K.UINT, 32),
           Operand("ldb", K.UINT, 32), Operand("ldc", K.UINT, 32))
_LAYOUT_DEFAULTS = {"trans_a": False, "trans_b": False, "lda": 0, "ldb": 0, "ldc": 0}
_GEMM_DEFAULTS = {"alpha": 1.0, "beta": 0.0, **_LAYOUT_DEFAULTS}
#: a leading dimension is 0 (packed) or at least the stored row's length
_GEMM_REQUIRES = (Requirement("lda", "lda == 0 or lda >= (m if trans_a else k)", "lda is shorter than a row of a"),
                  Requirement("ldb", "ldb == 0 or ldb >= (k if trans_b else n)", "ldb is shorter than a row of b"),
                  Requirement("ldc", "ldc == 0 or ldc >= n", "ldc is shorter than a row of c"))
_GEMM_MEANING = ("C = alpha*op(A)@op(B) + beta*C, op(X) = X or its transpose; A m x k (stored k x m when trans_a), "
                 "B k x n (n x k when trans_b), C m x n; beta == 0 does not read C")


def _matrices(c_element: object, ab_element: object, c_memory: Access = RW) -> list[Operand]:
    """c, a and b of one matrix product, with their extents and element types."""
    return [_addr("c", GADDR, c_memory, "matrix(m, n, ldc)", c_element),
            _addr("a", GADDR, R, f"matrix({_A_SHAPE}, lda)", ab_element),
            _addr("b", GADDR, R, f"matrix({_B_SHAPE}, ldb)", ab_element)]


def _scaling(storage: object) -> tuple[Operand, Operand]:
    return Operand("alpha", K.FLOAT, storage), Operand("beta", K.FLOAT, storage)


_row("GEMM", 0x94, "gemm", [*_matrices(T.TY, T.TY), *_SHAPE, *_scaling(T.TY), *_LAYOUT],
     frozenset({Type.F32, Type.F64}), CO, "matrix", "once per launch: " + _GEMM_MEANING,
     default_type=Type.F32, defaults=_GEMM_DEFAULTS, requires=_GEMM_REQUIRES)
_row("BatchedGEMM", 0x95, "bgemm",
     [_addr("c", GADDR, RW, "matrices(batch, stride_c, m, n, ldc)"),
      _addr("a", GADDR, R, f"matrices(batch, stride_a, {_A_SHAPE}, lda)"),
      _addr("b", GADDR, R, f"matrices(batch, stride_b, {_B_SHAPE}, ldb)"), Operand("batch", K.UINT, 32),
      *_SHAPE, *_scaling(T.TY), *_LAYOUT,
      Operand("stride_a", K.UINT, 32), Operand("stride_b", K.UINT, 32), Operand("stride_c", K.UINT, 32)],
     frozenset({Type.F32, Type.F64}), CO, "matrix",
     "once per launch, for each item i < batch (X_i starts stride_x elements after X_{i-1}; 0: rows*ld, packed): "
     + _GEMM_MEANING.replace("A", "A_i").replace("B", "B_i").replace("C", "C_i"),
     default_type=Type.F32, defaults={**_GEMM_DEFAULTS, "stride_a": 0, "stride_b": 0, "stride_c": 0},
     requires=(*_GEMM_REQUIRES, Requirement("stride_c", "batch <= 1 or stride_c == 0 or stride_c >= matrix(m, n, ldc)",
                                            "the items of c would overlap")))
_row("MixedPrecisionGEMM", 0x96, "mpgemm", [*_matrices(Type.F32, T.TY), *_SHAPE, *_scaling(Type.F32), *_LAYOUT],
     frozenset({Type.F16, Type.BF16}), CO, "matrix",
     "once per launch: GEMM with A and B of type ty (f16, bf16), accumulated in at least f32, C and alpha, beta f32: "
     + _GEMM_MEANING, default_type=Type.F16, defaults=_GEMM_DEFAULTS, requires=_GEMM_REQUIRES)
_row("QuantizedGEMM", 0x97, "qgemm",
     [*_matrices(T.TY, Type.I8, W), Operand("a_scale", K.FLOAT, Type.F32), Operand("b_scale", K.FLOAT, Type.F32),
      Operand("c_scale", K.FLOAT, Type.F32), *_SHAPE, *_LAYOUT],
     frozenset({Type.I8, Type.F32}), CO, "matrix",
     "once per launch: acc = op(A)@op(B) of i8 A and B summed in i32 (wrapping); C of type ty: f32: f32(acc) * "
     "(a_scale*b_scale); i8: f32(acc) * (a_scale*b_scale/c_scale) rounded half to even and saturated (NaN: 0), "
     "each step rounded to f32 (docs/semantics.md, Matrix kernels)",
     default_type=Type.I8, defaults=_LAYOUT_DEFAULTS, requires=_GEMM_REQUIRES)

_row("SparseGEMM", 0x98, "spgemm",
     [_addr("c", GADDR, RW, "matrix(m, n, ldc)"), _addr("a_values", GADDR, R, "a_ptr[m]"),
      _addr("a_indices", GADDR, R, "a_ptr[m]", Type.U32), _addr("a_ptr", GADDR, R, "m + 1", Type.U32),
      _addr("b", GADDR, R, "matrix(k, n, ldb)"), *_SHAPE, *_scaling(T.TY), Operand("ldb", K.UINT, 32),
      Operand("ldc", K.UINT, 32)],
     frozenset({Type.F32, Type.F64}), CO, "matrix",
     "once per launch: C = alpha*A@B + beta*C with A m x k in CSR (row i: a_values[e] at column a_indices[e] for "
     "a_ptr[i] <= e < a_ptr[i+1]; a_values and a_indices hold a_ptr[m] elements, read at launch); a_ptr "
     "decreasing or a used column index >= k traps INVALID_SPARSE",
     default_type=Type.F32, defaults={"alpha": 1.0, "beta": 0.0, "ldb": 0, "ldc": 0},
     requires=(Requirement("ldb", "ldb == 0 or ldb >= n", "ldb is shorter than a row of b"), _GEMM_REQUIRES[2]),
     effects={"traps": {TrapCode.INVALID_SPARSE}})

# --- tensor contraction (docs/semantics.md, Tensor contraction): one GEMM over reordered axes --------------
_SHAPES_AB = "shape_a, shape_b, contract_dims"
_row("TensorContract", 0x99, "tcontract",
     [_addr("output", GADDR, RW, f"output_size({_SHAPES_AB})"), _addr("a", GADDR, R, "size(shape_a)"),
      _addr("b", GADDR, R, "size(shape_b)"), Operand("shape_a", K.DIMS, 1), Operand("shape_b", K.DIMS, 1),
      Operand("contract_dims", K.DIMS, 2), *_scaling(T.TY)],
     frozenset({Type.F32, Type.F64}), CO, "contraction",
     "once per launch: output = alpha*tensordot(A, B, contract_dims) + beta*output for row-major A of shape_a and "
     "B of shape_b, summing over each pair (axis of A, axis of B) of contract_dims; output's axes are A's unpaired "
     "axes in order, then B's; beta == 0 does not read output",
     default_type=Type.F32, defaults={"alpha": 1.0, "beta": 0.0},
     requires=(Requirement("contract_dims", f"axes_in_rank({_SHAPES_AB})", "a pair names an axis past its rank"),
               Requirement("contract_dims", "axes_once(contract_dims)", "an axis appears in two pairs"),
               Requirement("contract_dims", f"paired_sizes_equal({_SHAPES_AB})", "a pair's axes differ in size")))

# --- normalization kernels (docs/semantics.md, Normalization kernels): statistics in at least f32 -----------
#: eps: a float immediate stored in f64 whatever ty (a backend computing in f32 rounds it once)
_EPS = Operand("eps", K.FLOAT, Type.F64)
#: every normalization's eps: a negative one makes a row's v + eps negative (NaN) or zero (infinite scale)
_EPS_REQUIRES = (Requirement("eps", "eps >= 0", "eps is negative or NaN (it is added to a variance)"),)
_NORM_TYPES = FLOATS
_NCS = "batch*channels*spatial"
_ROWS_NORM = {"rows": 1}


def _norm_row(name, opcode, mnemonic, arrays, shape, summary, defaults=None, requires=()):
    """A normalization row: its arrays, shape operands, eps, then the operands with defaults (``rows``)."""
    rows = [Operand(name, K.UINT, 32) for name in (defaults or {})]
    _row(name, opcode, mnemonic, [*arrays, *shape, _EPS, *rows], _NORM_TYPES, CO, "normalization",
         "once per launch: " + summary + "; f16/bf16 computed in f32, rounded once",
         default_type=Type.F32, defaults=defaults, requires=(*_EPS_REQUIRES, *requires))


_norm_row("LayerNorm", 0x9C, "layernorm",
          [_addr("output", GADDR, W, "rows*n"), _addr("input", GADDR, R, "rows*n"), _addr("gamma", GADDR, R, "n"),
           _addr("beta", GADDR, R, "n")], [Operand("n", K.UINT, 32)],
          "for each of rows rows x of n elements: output[i] = (x[i] - mean(x)) / sqrt(var(x) + eps) * gamma[i] "
          "+ beta[i] (var: the mean of squared deviations)", defaults=_ROWS_NORM)
_norm_row("RMSNorm", 0x9D, "rmsnorm",
          [_addr("output", GADDR, W, "rows*n"), _addr("input", GADDR, R, "rows*n"), _addr("weight", GADDR, R, "n")],
          [Operand("n", K.UINT, 32)],
          "for each of rows rows x of n elements: output[i] = x[i] / sqrt(mean(x**2) + eps) * weight[i]",
          defaults=_ROWS_NORM)
_norm_row("BatchNorm", 0x9E, "batchnorm",
          [_addr("output", GADDR, W, _NCS), _addr("input", GADDR, R, _NCS), _addr("gamma", GADDR, R, "channels"),
           _addr("beta", GADDR, R, "channels"), _addr("mean", GADDR, R, "channels"),
           _addr("variance", GADDR, R, "channels")],
          [Operand("batch", K.UINT, 32), Operand("channels", K.UINT, 32), Operand("spatial", K.UINT, 32)],
          "inference form over input[b, c, s] (batch x channels x spatial, row-major): output = (input - mean[c]) "
          "/ sqrt(variance[c] + eps) * gamma[c] + beta[c]")
_norm_row("GroupNorm", 0x9F, "groupnorm",
          [_addr("output", GADDR, W, _NCS), _addr("input", GADDR, R, _NCS), _addr("gamma", GADDR, R, "channels"),
           _addr("beta", GADDR, R, "channels")],
          [Operand("batch", K.UINT, 32), Operand("channels", K.UINT, 32), Operand("groups", K.UINT, 32),
           Operand("spatial", K.UINT, 32)],
          "over input[b, c, s] (batch x channels x spatial, row-major), each item's channels in groups of "
          "channels/groups consecutive channels: output = (input - mean) / sqrt(var + eps) * gamma[c] + beta[c] "
          "with mean and var over the group's (channels/groups)*spatial elements",
          requires=(Requirement("groups", "groups > 0 and channels % groups == 0",
                                "channels is not a multiple of groups"),))

# --- softmax kernels (docs/semantics.md, Softmax kernels): max-subtracted, computed in at least f32 ------------
_SOFTMAX_ARRAYS = [_addr("output", GADDR, W, "rows*n"), _addr("input", GADDR, R, "rows*n"), Operand("n", K.UINT, 32),
                   Operand("rows", K.UINT, 32)]


def _softmax_row(name, opcode, mnemonic, summary):
    """A softmax row: output, input, n, then rows (default 1); types the floats, F32 by default."""
    _row(name, opcode, mnemonic, _SOFTMAX_ARRAYS, FLOATS, CO, "softmax",
         "once per launch, for each of rows rows x of n elements, m = max(x): " + summary
         + "; f16/bf16 computed in f32, rounded once", default_type=Type.F32, defaults={"rows": 1})


_softmax_row("Softmax", 0x9A, "softmax", "output[i] = exp(x[i] - m) / sum_j exp(x[j] - m)")
_softmax_row("LogSoftmax", 0x9B, "logsoftmax", "output[i] = (x[i] - m) - log(sum_j exp(x[j] - m))")

# --- attention kernels (docs/semantics.md, Attention kernels): each array's layout follows its row's field order --
_U32 = functools.partial(Operand, kind=K.UINT, rule=32)
_BSHD = "batch*seq_len*heads*head_dim"
_row("RoPE", 0xA0, "rope",
     [_addr("output", GADDR, W, _BSHD), _addr("input", GADDR, R, _BSHD), _addr("freqs", GADDR, R, "head_dim // 2"),
      *(_U32(n) for n in ("batch", "seq_len", "heads", "head_dim", "position")), Operand("interleaved", K.FLAG)],
     FLOATS, CO, "attention",
     "once per launch: rotary embedding of input[b, s, h, :] (batch x seq_len x heads x head_dim, row-major): "
     "pair p < head_dim/2 (elements p and p + head_dim/2, or 2p and 2p+1 when interleaved) rotated by the angle "
     "(position + s) * freqs[p]; computed in binary64 (f16/bf16/f32: in at least f32), rounded once",
     default_type=Type.F32, defaults={"position": 0, "interleaved": False},
     requires=(Requirement("head_dim", "head_dim % 2 == 0", "head_dim is odd (RoPE rotates pairs)"),))
_row("KVCacheUpdate", 0xA1, "kvcache",
     [_addr("cache", GADDR, RW, "batch*heads*(max_seq if max_seq else position + 1)*head_dim"),
      _addr("new_kv", GADDR, R, "batch*heads*head_dim"),
      *(_U32(n) for n in ("position", "batch", "heads", "head_dim", "max_seq"))],
     SCALARS, CO, "attention",
     "once per launch: cache[b, h, position, :] = new_kv[b, h, :] (cache batch x heads x max_seq x head_dim, "
     "max_seq 0: position + 1); position >= max_seq (max_seq > 0) traps OUT_OF_BOUNDS; a copy, bit for bit",
     default_type=Type.F32, defaults={"max_seq": 0})
#: effective kv heads, keys and positions per kv head of the attention rows (0 means: as the row says)
_KV_HEADS, _KV_LEN = "(kv_heads if kv_heads else heads)", "(kv_len if kv_len else seq_len)"
_KV = f"batch*{_KV_HEADS}*(max_seq if max_seq else {_KV_LEN})*head_dim"
_BHSD = "batch*heads*seq_len*head_dim"
_ATTENTION_ARRAYS = [_addr("output", GADDR, W, _BHSD), _addr("query", GADDR, R, _BHSD), _addr("key", GADDR, R, _KV),
                     _addr("value", GADDR, R, _KV)]
_ATTENTION_SHAPE = [_U32(n) for n in ("batch", "heads", "seq_len", "head_dim")]
_ATTENTION_OPTIONS = [_U32("kv_len"), Operand("causal", K.FLAG), _U32("kv_heads"), _U32("max_seq")]
_ATTENTION_DEFAULTS = {"kv_len": 0, "causal": False, "kv_heads": 0, "max_seq": 0}
_ATTENTION_REQUIRES = (
    Requirement("kv_heads", "kv_heads == 0 or heads % kv_heads == 0", "heads is not a multiple of kv_heads"),
    Requirement("max_seq", f"max_seq == 0 or max_seq >= {_KV_LEN}", "max_seq is shorter than kv_len"),
    Requirement("causal", f"not causal or {_KV_LEN} >= seq_len", "a causal query would see no key (kv_len < seq_len)"))
_ATTENTION_MEANING = (
    "output[b, h] = softmax(Q K^T / sqrt(head_dim)) V per item b and head h: query and output batch x heads x "
    "seq_len x head_dim, key and value batch x kv_heads x max_seq x head_dim (kv_heads 0: heads; max_seq 0: "
    "kv_len), their first kv_len (0: seq_len) positions used, head h reading kv head h / (heads / kv_heads); "
    "causal: query i sees key j <= i + kv_len - seq_len; f16/bf16 computed in f32, rounded once")
_row("Attention", 0xA2, "attention", [*_ATTENTION_ARRAYS, *_ATTENTION_SHAPE, *_ATTENTION_OPTIONS],
     FLOATS, CO, "attention", "once per launch: " + _ATTENTION_MEANING,
     default_type=Type.F32, defaults=_ATTENTION_DEFAULTS, requires=_ATTENTION_REQUIRES)
_row("FlashAttention", 0xA3, "flashattention",
     [*_ATTENTION_ARRAYS, *_ATTENTION_SHAPE, _U32("block_size"), *_ATTENTION_OPTIONS],
     FLOATS, CO, "attention",
     "once per launch: Attention's result, computed in tiles of block_size keys with an online softmax (extra "
     "memory O(block_size * head_dim)): " + _ATTENTION_MEANING,
     default_type=Type.F32, defaults=_ATTENTION_DEFAULTS,
     requires=(Requirement("block_size", "block_size > 0", "block_size is 0"), *_ATTENTION_REQUIRES))


# --- convolution and FFT kernels (docs/semantics.md, Convolution and FFT kernels) -----------------------------
#: a pair (PyTorch's ``stride=(sh, sw)``) is two UINT operands, ``<name>_h`` and ``<name>_w``, as the seed's own
#: kernel_h/kernel_w and height/width are
_CONV_OH = "conv_out(height, padding_h, dilation_h, kernel_h, stride_h)"
_CONV_OW = "conv_out(width, padding_w, dilation_w, kernel_w, stride_w)"
_CONV_SHAPE = ("batch", "in_channels", "out_channels", "height", "width", "kernel_h", "kernel_w",
               "stride_h", "stride_w", "padding_h", "padding_w")
_CONV_DEFAULTS = {"dilation_h": 1, "dilation_w": 1, "groups": 1, "has_bias": False,
                  "bias": Address.BufferOffset(1)}
_row("Conv2D", 0xA4, "conv2d",
     [_addr("output", GADDR, W, f"batch*out_channels*{_CONV_OH}*{_CONV_OW}"),
      _addr("input", GADDR, R, "batch*in_channels*height*width"),
      _addr("kernel", GADDR, R, "out_channels*(in_channels // groups)*kernel_h*kernel_w"),
      *(Operand(name, K.UINT, 32) for name in _CONV_SHAPE),
      Operand("dilation_h", K.UINT, 32), Operand("dilation_w", K.UINT, 32), Operand("groups", K.UINT, 32),
      Operand("has_bias", K.FLAG), _addr("bias", GADDR, R, "out_channels if has_bias else 0")],
     FLOATS, CO, "convolution",
     "once per launch: NCHW 2-D cross-correlation as PyTorch's conv2d: output[b, o, i, j] = bias[o] (has_bias) + "
     "sum over c < in_channels/groups, p < kernel_h, q < kernel_w of input[b, g*(in_channels/groups) + c, "
     "i*stride_h - padding_h + p*dilation_h, j*stride_w - padding_w + q*dilation_w] * kernel[o, c, p, q], "
     "g = o // (out_channels/groups), positions outside the input reading 0; output height "
     + _CONV_OH + ", width likewise; f16/bf16 computed in f32, rounded once",
     default_type=Type.F32, defaults=_CONV_DEFAULTS,
     requires=(Requirement("kernel_h", "kernel_h > 0 and kernel_w > 0", "the kernel is empty"),
               Requirement("stride_h", "stride_h > 0 and stride_w > 0", "a stride is 0"),
               Requirement("dilation_h", "dilation_h > 0 and dilation_w > 0", "a dilation is 0"),
               Requirement("groups", "groups > 0 and in_channels % groups == 0 and out_channels % groups == 0",
                           "in_channels and out_channels are not multiples of groups"),
               Requirement("padding_h", "height + 2*padding_h >= dilation_h*(kernel_h - 1) + 1 and "
                           "width + 2*padding_w >= dilation_w*(kernel_w - 1) + 1",
                           "the dilated kernel is larger than the padded input (no output)")))
_row("FFT", 0xA5, "fft",
     [_addr("output", GADDR, W, "2*n*batch"), _addr("input", GADDR, R, "2*n*batch"), Operand("n", K.UINT, 32),
      Operand("inverse", K.FLAG), Operand("batch", K.UINT, 32)],
     frozenset({Type.F32, Type.F64}), CO, "convolution",
     "once per launch: for each of batch complex vectors x of n (re, im) pairs (interleaved, 2*n values of ty): "
     "output[k] = sum over j < n of x[j] * exp(-2*pi*i*j*k/n), or with inverse exp(+2*pi*i*j*k/n) / n (NumPy's "
     "fft and ifft); any n up to 2^24 (a power of two: radix-2; another n: Bluestein's algorithm)",
     default_type=Type.F32, defaults={"batch": 1},
     requires=(Requirement("n", "n > 0", "n is 0 (an FFT has at least one element)"),
               Requirement("n", "n <= 16777216", "n is above 2^24 (16,777,216), the longest FFT")))

# --- collectives (docs/semantics.md, Collectives; atlas_web.distributed runs a group of several devices) ----------
#: ``devices``: the group's size (0: every device of the executor); one backend alone is a group of one device
_DEVICES = (Requirement("devices", "devices <= 1", "a group of several devices runs under "
                        "atlas_web.distributed.MultiDeviceExecutor (one backend is one device)"),)
_row("AllReduce", 0xA8, "allreduce",
     [_addr("buffer", GADDR, RW, "n"), Operand("n", K.UINT, 32),
      Operand("reduction", K.ENUM, ReduceOperation, in_suffix=True), Operand("devices", K.UINT, 32)],
     SCALARS, CO, "collective",
     "once per launch: buffer[i] = reduction over the devices d of the group (in rank order, d = 0, 1, ...) of "
     "device d's buffer[i], for i < n, on every device; on one device the identity",
     default_type=Type.F32, defaults={"devices": 0}, requires=_DEVICES)
_row("AllGather", 0xA9, "allgather",
     [_addr("output", GADDR, W, "n*(devices if devices else 1)"), _addr("input", GADDR, R, "n"),
      Operand("n", K.UINT, 32), Operand("devices", K.UINT, 32)],
     SCALARS, CO, "collective",
     "once per launch: output[d*n + i] = device d's input[i] for every device d of the group, on every device; "
     "on one device output[0:n] = input[0:n] (the reference copies bytes; a compiled backend's copy may change "
     "a NaN's payload)",
     default_type=Type.F32, defaults={"devices": 0}, requires=_DEVICES)
_row("Broadcast", 0xAA, "broadcast",
     [_addr("buffer", GADDR, RW, "n"), Operand("n", K.UINT, 32), Operand("root", K.UINT, 32),
      Operand("devices", K.UINT, 32)],
     SCALARS, CO, "collective",
     "once per launch: buffer[0:n] = device root's buffer[0:n] on every device of the group, bit for bit; on one "
     "device (root 0) the identity",
     default_type=Type.F32, defaults={"root": 0, "devices": 0},
     requires=(*_DEVICES, Requirement("root", "root < (devices if devices else 1)", "root is not a device of the "
                                      "group")))
_row("ReduceScatter", 0xAB, "reducescatter",
     [_addr("output", GADDR, W, "n"), _addr("input", GADDR, R, "n*(devices if devices else 1)"),
      Operand("n", K.UINT, 32), Operand("reduction", K.ENUM, ReduceOperation, in_suffix=True),
      Operand("devices", K.UINT, 32)],
     SCALARS, CO, "collective",
     "once per launch: device d's output[i] = reduction over the devices e of the group (in rank order) of device "
     "e's input[d*n + i], for i < n; on one device output[0:n] = input[0:n] (copied as AllGather copies)",
     default_type=Type.F32, defaults={"devices": 0}, requires=_DEVICES)

#: every instruction, in opcode order
OPCODE_TABLE: tuple[OpcodeInfo, ...] = tuple(sorted(_ROWS, key=lambda r: r.opcode))

#: the instructions that shape the lane graph (jumps, calls, returns, ends, the barrier): a backend lowers them
#: as its control structure, not with a lane rule
STRUCTURAL_INSTRUCTIONS = frozenset(r.name for r in OPCODE_TABLE if r.kind is ExecKind.CONTROL or r.effects.barrier)

assert _MAY_FLUSH_SUBNORMALS <= {r.name for r in OPCODE_TABLE}, "a may-flush name that is no row"
del _name, _op, _mn, _what  # the loop variables above; _row and _ROWS stay private

