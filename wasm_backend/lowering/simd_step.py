"""SIMD lane mode: integer values that are the same in the four lanes of a step, or strided within it.

Loops and branches (``simd_control``) need values computed in the step body rather than in the prologue:

* ``Scalar`` — the same in the four lanes of the step (a row index ``gid >> 9``, a loop counter, a
  pointer that walks a row shared by the step's lanes): one scalar operation per step;
* ``Strided`` — lane k holds ``local + k * stride`` (a column index ``gid & 511``, a pointer that walks
  down the columns of the step's lanes): one scalar per step, a vector only when one is needed.

Rules here take over the integer ADD SUB MUL AND OR XOR SHL SHR DIV REM and integer CVT when an operand
is Scalar or Strided, or when an Affine lane id (stride 1, a known base that is a multiple of four, no
wrap over the launch's lanes) is split by a power-of-two mask, a shift of at least two bits or a
division by a multiple of four: the four lanes of a step (its first lane a multiple of four) then share
the quotient (Scalar) and have consecutive remainders (Strided). Integer DIV and REM by a nonzero
constant cannot trap and have a rule for step-uniform dividends; others keep the earlier rules (which
treat Scalar and Strided as vectors). Every result is the scalar lane rule's, lane by lane (integers
wrap at their width; unsigned and signed by the type). Raises SimdUnsupported where no rule applies.
"""

from __future__ import annotations

from atlas_web.isa.types import Type

from .simd_lanes import (
    INT_TYPES, SIMD_RULES, Affine, Const, Scalar, SimdBuilder, SimdUnsupported, Strided, Uniform, wrap,
)
from .typemap import type_info

__all__ = ["push_scalar", "lane0"]

_UNIFORM = (Const, Uniform, Scalar)
_STRIDED = (Affine, Strided)
_SCALAR_OPS = {"ADD": "add", "SUB": "sub", "MUL": "mul", "AND": "and", "OR": "or", "XOR": "xor", "SHL": "shl"}


def push_scalar(s: SimdBuilder, value, ty: Type) -> None:
    """Push a Const, Uniform or Scalar value of ``ty`` onto the step body's stack."""
    if isinstance(value, Const):
        (s.body.i64 if ty.bits == 64 else s.body.i32)(value.value)
    elif isinstance(value, (Uniform, Scalar)):
        s.body.get(value.local)
    else:
        raise SimdUnsupported("not the same in the lanes of a step")


def _affine_top(s: SimdBuilder, value: Affine, ty: Type) -> int | None:
    if not isinstance(value.base, Const) or value.stride >= 1 << (ty.bits - 1):
        return None
    top = value.base.value + (s.lanes - 1) * value.stride
    return top if top < 1 << ty.bits else None


def lane0(s: SimdBuilder, value, ty: Type) -> Strided:
    """The Strided form of an Affine or Strided value (an Affine's first lane computed in the step)."""
    if isinstance(value, Strided):
        return value
    local = s.fb.add_local(type_info(ty).valtype)
    e = s.body
    e.get(s.gid)
    if ty.bits == 64:
        e.op("i64.extend_i32_u").i64(value.stride).op("i64.mul")
    else:
        e.i32(value.stride).op("i32.mul")
    if not (isinstance(value.base, Const) and value.base.value == 0):
        push_scalar(s, value.base, ty)
        e.op(f"{type_info(ty).prefix}.add")
    e.set(local)
    return Strided(local, value.stride, _affine_top(s, value, ty))


def _scalar_op(s: SimdBuilder, ty: Type, wasm_op: str, a, b) -> Scalar:
    local = s.fb.add_local(type_info(ty).valtype)
    push_scalar(s, a, ty)
    if wasm_op.startswith("sh") and ty.bits == 64 and not isinstance(b, Const):
        push_scalar(s, b, Type.U32)  # shift amounts are INT32 registers
        s.body.op("i64.extend_i32_u")
    else:
        push_scalar(s, b, ty)
    s.body.op(f"{type_info(ty).prefix}.{wasm_op}").set(local)
    return Scalar(local)


def _bounded(ty: Type, top: int | None) -> int | None:
    return top if top is not None and top < 1 << ty.bits else None


def _strided_binary(s: SimdBuilder, ty: Type, op: str, a, b):
    """The Strided result of ``op`` on a strided and a step-uniform operand (or two strided, ADD), or None."""
    if isinstance(b, _STRIDED) and isinstance(a, _UNIFORM) and op in ("ADD", "MUL", "OR"):
        a, b = b, a
    if isinstance(a, _STRIDED) and isinstance(b, _STRIDED):
        if op != "ADD":
            return None
        x, y = lane0(s, a, ty), lane0(s, b, ty)
        return Strided(_scalar_op(s, ty, "add", Scalar(x.local), Scalar(y.local)).local, wrap(ty, x.stride + y.stride))
    if not isinstance(a, _STRIDED) or not isinstance(b, _UNIFORM):
        return None
    constant = b.value if isinstance(b, Const) else None
    x = lane0(s, a, ty)
    if op in ("ADD", "SUB"):
        top = x.top + constant if op == "ADD" and constant is not None and x.top is not None else None
        return Strided(_scalar_op(s, ty, op.lower(), Scalar(x.local), b).local, x.stride, _bounded(ty, top))
    if constant is None:
        return None
    if op in ("MUL", "SHL"):
        factor = constant if op == "MUL" else 1 << (constant % ty.bits)
        top = x.top * factor if x.top is not None else None
        return Strided(_scalar_op(s, ty, "mul", Scalar(x.local), Const(wrap(ty, factor))).local,
                       wrap(ty, x.stride * factor), _bounded(ty, top))
    if op == "OR" and x.top is not None and constant and x.top < (constant & -constant):
        # the constant's bits all lie above every lane's value: an addition
        return Strided(_scalar_op(s, ty, "or", Scalar(x.local), b).local, x.stride, _bounded(ty, x.top + constant))
    return None


def _split_lane_id(s: SimdBuilder, ty: Type, op: str, a, b):
    """Quotient (Scalar) or remainder (Strided) of a lane id by a power of two or a multiple of four, or None.

    ``a`` must be Affine with stride 1 and a constant base that is a multiple of four, without wrap over
    the launch (so the four lanes of a step, whose first lane is a multiple of four, share the quotient)."""
    if not (isinstance(a, Affine) and a.stride == 1 and isinstance(a.base, Const) and a.base.value % 4 == 0
            and isinstance(b, Const)):
        return None
    top = _affine_top(s, a, ty)
    if top is None or (ty.is_signed() and top >> (ty.bits - 1)):
        return None
    d = b.value
    if op == "AND" and d >= 3 and d & (d + 1) == 0:
        x = lane0(s, a, ty)
        return Strided(_scalar_op(s, ty, "and", Scalar(x.local), b).local, 1, d)
    if op == "SHR" and d % ty.bits >= 2:
        return _scalar_op(s, ty, "shr_u", Scalar(lane0(s, a, ty).local), b)
    if op in ("DIV", "REM") and d > 0 and d % 4 == 0 and not (ty.is_signed() and d >> (ty.bits - 1)):
        x = lane0(s, a, ty)
        result = _scalar_op(s, ty, "div_u" if op == "DIV" else "rem_u", Scalar(x.local), b)
        return result if op == "DIV" else Strided(result.local, 1, d - 1)
    return None


def _operands(instr) -> tuple[str, str]:
    name = instr.INFO.name
    return ("src", "amount") if name in ("SHL", "SHR") else ("lhs", "rhs")


def _wasm_op(op: str, ty: Type) -> str:
    if op in _SCALAR_OPS:
        return _SCALAR_OPS[op]
    sign = "s" if ty.is_signed() else "u"
    return {"SHR": f"shr_{sign}", "DIV": f"div_{sign}", "REM": f"rem_{sign}"}[op]


def _int_rule(op: str, earlier):
    def rule(s: SimdBuilder, instr) -> None:
        ty = instr.ty
        if ty not in INT_TYPES:
            if earlier is None:
                raise SimdUnsupported(f"{op} {ty.name}")
            earlier(s, instr)
            return
        lhs, rhs = _operands(instr)
        _, a = s.read(lhs)
        _, b = s.read(rhs)
        found = _split_lane_id(s, ty, op, a, b)
        if found is None and op in ("DIV", "REM"):
            # a constant nonzero divisor (not -1 for signed types) cannot trap
            if not (isinstance(b, Const) and b.value and not (ty.is_signed() and b.value == wrap(ty, -1))
                    and isinstance(a, _UNIFORM)):
                raise SimdUnsupported(f"{op} that may trap or varies in a step")
            found = _scalar_op(s, ty, _wasm_op(op, ty), a, b)
        if found is None and isinstance(a, _UNIFORM) and isinstance(b, _UNIFORM) and (
                isinstance(a, Scalar) or isinstance(b, Scalar)):
            found = _scalar_op(s, ty, _wasm_op(op, ty), a, b)
        if found is None and (isinstance(a, Strided) or isinstance(b, Strided)
                              or (isinstance(a, Affine) and isinstance(b, Scalar))
                              or (isinstance(b, Affine) and isinstance(a, Scalar))):
            found = _strided_binary(s, ty, op, a, b)
        if found is None:
            earlier(s, instr)  # Const/Uniform/Affine/Vector rules (Scalar and Strided as vectors)
            return
        s.write(found)
    return rule


def _cvt_rule(earlier):
    def rule(s: SimdBuilder, instr) -> None:
        src, dst = instr.src_ty, instr.dst_ty
        _, value = s.read("src")
        if not (src in INT_TYPES and dst in INT_TYPES and isinstance(value, (Scalar, Strided))):
            earlier(s, instr)
            return
        if src.bits == dst.bits:
            s.write(value)
            return
        if isinstance(value, Scalar):
            local = s.fb.add_local(type_info(dst).valtype)
            s.body.get(value.local)
            s.body.op("i32.wrap_i64" if src.bits == 64 else f"i64.extend_i32_{'s' if src.is_signed() else 'u'}")
            s.body.set(local)
            s.write(Scalar(local))
            return
        local = s.fb.add_local(type_info(dst).valtype)
        if src.bits == 64:
            s.body.get(value.local).op("i32.wrap_i64").set(local)
            s.write(Strided(local, wrap(dst, value.stride), value.top if value.top is not None
                            and value.top < 1 << 32 else None))
            return
        if value.top is None or value.top >= 1 << 31 or value.stride >= 1 << 31:
            raise SimdUnsupported(f"CVT {src.name} -> {dst.name} of a strided value that may wrap")
        s.body.get(value.local).op("i64.extend_i32_u").set(local)
        s.write(Strided(local, value.stride, value.top))
    return rule


for _op in ("ADD", "SUB", "MUL", "AND", "OR", "XOR", "SHL", "SHR", "DIV", "REM"):
    SIMD_RULES[_op] = _int_rule(_op, SIMD_RULES.get(_op))
SIMD_RULES["CVT"] = _cvt_rule(SIMD_RULES["CVT"])
