"""LayerScale: the cooperative rule (instead of its default expansion, one ParallelMapBinary step per row).

``output[r*n + i] = input[r*n + i] * scale[i]``: the arrays are checked over their extents in operand order
(output, input, scale: the reference's order and trap numbers; a trap writes nothing), then one function
``layer_scale_<ty>(out, x, scale, n)`` runs per row: F32 four elements a step (``f32x4.mul``), F64 two
(``f64x2.mul``), then one by one; F16/BF16 one by one in f32, where the product of two halves is exact, rounded
once to the type. Every product is the type's one rounding of the exact product: the reference's bits. Element
``i`` is read before it is written, so the output may be the input. Natively, from
PARALLEL_MAP_THRESHOLDS["arithmetic"] elements, ranges of rows run on the host's threads
(``coop_gemm.threaded_units``), the same bits.
"""

from __future__ import annotations

from atlas_web.isa.extents import array_operands
from atlas_web.isa.types import FLOAT_TYPES, Type

from ..encoding.types import ValType
from ..thread_policy import PARALLEL_MAP_THRESHOLDS
from .coop_context import COOP_OK, CoopContext
from .coop_gemm import THREADED_ROWS, threaded_units, unit_block_bytes, units_parallel
from .coop_gemm_kernel import cached_function
from .coop_norm_kernel import advance
from .coop_ops import load_scalar, store_scalar
from .rules import cooperative_rule
from .typemap import type_info

__all__ = ["LAYER_SCALE_TYPES", "layer_scale_parallel", "layer_scale_scratch"]

I32 = ValType.I32
LAYER_SCALE_TYPES = frozenset(FLOAT_TYPES)
_VECTOR = {Type.F32: "f32x4.mul", Type.F64: "f64x2.mul"}


def _row_function(m, ty: Type) -> int:
    """``layer_scale_<ty>(out, x, scale, n)``: n products."""
    size = ty.size_bytes()

    def build(fb, e) -> None:
        out, x, scale, n = range(4)
        end, block_end, s = fb.add_local(I32), fb.add_local(I32), fb.add_local(I32)
        product = fb.add_local(type_info(ty).valtype)
        e.get(scale).set(s)
        e.get(x).get(n).i32(size).op("i32.mul").op("i32.add").set(end)
        if ty in _VECTOR:
            e.get(n).i32(-(16 // size)).op("i32.and").i32(size).op("i32.mul").get(x).op("i32.add").set(block_end)

            def block() -> None:
                e.get(out).get(x).op("v128.load", 0).get(s).op("v128.load", 0).op(_VECTOR[ty]).op("v128.store", 0)
                advance(e, (out, s), 16)

            e.while_below(x, block_end, 16, block, labels=("blocks_done", "blocks"))

        def one() -> None:
            e.get(x)
            load_scalar(m, e, ty)
            e.get(s)
            load_scalar(m, e, ty)
            e.op(f"{type_info(ty).prefix}.mul").set(product)
            e.get(out)
            store_scalar(m, e, ty, product)
            advance(e, (out, s), size)

        e.while_below(x, end, size, one, labels=("tail_done", "tail"))

    return cached_function(m, f"layer_scale_{ty.name.lower()}", (I32,) * 4, build)


def layer_scale_parallel(instr) -> tuple[str, int, int] | None:
    """``("rows", rows, 1)``: ranges of rows over the threads from PARALLEL_MAP_THRESHOLDS["arithmetic"] elements (a
    product an element, as a ParallelMapBinary), else None."""
    return units_parallel(instr.rows, instr.rows * instr.n, PARALLEL_MAP_THRESHOLDS["arithmetic"])


def layer_scale_scratch(instr) -> int:
    """Per-launch scratch: the driver's parameter block (the rows need none)."""
    return unit_block_bytes(len(array_operands(instr))) + 16


@cooperative_rule("LayerScale", LAYER_SCALE_TYPES, scratch=layer_scale_scratch)
def _build(cc: CoopContext) -> None:
    instr = cc.instr
    arrays = {a.name: cc.array(a.name, a.ty, a.elements) for a in array_operands(instr)}
    if not (instr.rows and instr.n):
        cc.e.i32(COOP_OK)
        return
    threaded = "parallel_gemm" in cc.m.imports and layer_scale_parallel(instr) is not None
    threaded_units(cc, arrays, instr.rows, threaded, _rows)


def _rows(ctx, arrays: dict, _scratch: int, lo: int, hi: int) -> None:
    """The driver's body: rows lo .. hi, ``layer_scale_<ty>`` each."""
    instr, e = ctx.instr, ctx.e
    row_bytes = instr.n * instr.ty.size_bytes()
    function = _row_function(ctx.m, instr.ty)
    out, x, r = (ctx.local(I32) for _ in range(3))
    for pointer, base in ((out, "output"), (x, "input")):
        e.get(arrays[base]).get(lo).i32(row_bytes).op("i32.mul").op("i32.add").set(pointer)
    e.get(lo).set(r)

    def row() -> None:
        e.get(out).get(x).get(arrays["scale"]).i32(instr.n).call(function)
        advance(e, (out, x), row_bytes)

    e.while_below(r, hi, 1, row, labels=("rows_done", "rows"))


THREADED_ROWS["LayerScale"] = (layer_scale_parallel, lambda instr: 16)
