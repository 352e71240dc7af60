"""Attention and FlashAttention (F32, F64; F16 and BF16 computed in f32): the cooperative rules, on the GEMM kernel machinery (``coop_gemm_kernel``)
and the row functions of ``coop_attention_rows``.

The cooperative function checks output, query, key and value over their extents (in operand order: handle,
bounds, alignment; a trap writes nothing), then for each item ``b`` and head ``h`` (kv head ``h / (heads /
kv_heads)``, its keys and values ``max_seq`` positions apart) walks the queries in blocks of ``br`` rows:

* **Attention** (two passes over a block of rows): the scores ``Q K^T / sqrt(d)`` of the block against every key,
  one GEMM driver (``trans_b``: K is read as stored, alpha = 1/sqrt(d) rounded to the type), into a ``br x kv_len``
  scratch; each row's softmax over the keys it sees by ``coop_softmax``'s row function (max-subtracted, in
  place); then ``P V``: one GEMM into the output rows (not causal), or (causal) key blocks of ``bk`` keys: a block
  every row of the query block sees by a GEMM accumulating into the output (beta 1), the diagonal block row by
  row over the keys each row sees (``attention_axpy_<t>``), blocks no row sees skipped.
* **FlashAttention** (one pass, online softmax): the output rows start at 0 and each row's running maximum and
  sum at (-inf, 0); for each key block of ``block_size`` keys that some row of the query block sees: the block's
  scores (a GEMM into a ``br x block_size`` scratch), each row's online step (``attention_online_row_<t>``: new
  maximum, rescale of the row's sum and output by one factor, the weights in place), then ``P V`` accumulated as
  above (a GEMM for a block the whole query block sees, row by row on the diagonal); at the end each output row
  times ``1 / sum``. ``br = min(seq_len, block_size)``: its extra memory is the scores tile, two numbers per row
  and the GEMM's packing scratch (``attention_scratch_bytes``), whatever seq_len and kv_len.

F16 and BF16 compute in f32: the GEMM's packing converts Q and K (exactly), each key block's values are converted
into the scratch before its P V, and each query block's output rows are accumulated in the scratch and rounded
once to the type at the end of the block.

The heads (item * heads + head) are the units of a driver (``coop_gemm.threaded_units``): natively, when the
scores and P V take at least PARALLEL_GEMM_THRESHOLD multiply-adds, ranges of heads run on the host's threads
through ``env.parallel_gemm``, each with scratch of its own, each head by the same code: the bits of one thread.

Hidden keys (causal) are never weighted: their scores are computed with the block's but not read, and their
values are not read. Every sum is in the type (f32, f64) in some order, one or two roundings per product: within
the contract's bound (docs/semantics.md, Attention kernels), which covers the tiles and the online rescaling.
"""

from __future__ import annotations

import math

from atlas_web.isa.extents import array_operands
from atlas_web.isa.types import Type

from ..encoding.types import ValType
from ..thread_policy import PARALLEL_GEMM_THRESHOLD
from .coop_attention_rows import axpy_rows, online_row, scale_row
from .coop_context import COOP_OK, CoopContext
from .coop_gemm import THREADED_ROWS, threaded_units, unit_block_bytes, units_parallel
from .coop_gemm_kernel import ELEMENTS, GemmShape, build_gemm_driver, round16, scratch_bytes
from .coop_ops import load_scalar, store_scalar
from .coop_softmax import softmax_row
from .rules import cooperative_rule

__all__ = ["ATTENTION_TYPES", "attention_tiles", "attention_scratch_bytes", "attention_parallel",
           "attention_launch_scratch", "ROW_BLOCK", "KEY_BLOCK"]

I32 = ValType.I32
ATTENTION_TYPES = frozenset({Type.F16, Type.BF16, Type.F32, Type.F64})
_HALVES = (Type.F16, Type.BF16)
#: Attention's query rows per block and (causal) keys per P.V block
ROW_BLOCK = 64
KEY_BLOCK = 64


def _shape(instr) -> tuple[int, int, int, int, int, int, int]:
    """(batch, heads, seq_len, head_dim, kv_heads, kv_len, max_seq), zero defaults resolved."""
    kv_len = instr.kv_len or instr.seq_len
    return (instr.batch, instr.heads, instr.seq_len, instr.head_dim, instr.kv_heads or instr.heads, kv_len,
            instr.max_seq or kv_len)


def attention_tiles(instr) -> tuple[int, int, int]:
    """(query rows per block, keys per key block, the scores' row length in the scratch)."""
    _, _, seq, _, _, kv, _ = _shape(instr)
    if instr.INFO.name == "FlashAttention":
        br, bk = max(1, min(seq, instr.block_size)), max(1, min(kv, instr.block_size))
        return br, bk, bk
    return max(1, min(seq, ROW_BLOCK)), max(1, min(kv, KEY_BLOCK)), max(1, kv)


def _compute(ty: Type) -> Type:
    return Type.F32 if ty in _HALVES else ty


def _scores_shape(instr, n: int) -> GemmShape:
    """Q K^T: F16/BF16 Q and K converted to f32 (exactly) while packed."""
    br, _, lds = attention_tiles(instr)
    d = instr.head_dim
    return GemmShape(_compute(instr.ty), br, n, d, False, True, d, d, lds, 1.0 / math.sqrt(d), 0.0,
                     instr.ty if instr.ty in _HALVES else None)


def _pv_shape(instr, k: int, beta: float) -> GemmShape:
    """P V: P in the scratch; F16/BF16 V read from its f32 copy in the scratch."""
    br, _, lds = attention_tiles(instr)
    d = instr.head_dim
    return GemmShape(_compute(instr.ty), br, d, k, False, False, lds, d, d, 1.0, beta)


def _gemm_shapes(instr) -> dict[str, GemmShape]:
    """The GEMM drivers of the instruction, by name suffix: scores and P.V over whole and last key blocks."""
    batch, heads, seq, dim, _, kv, _ = _shape(instr)
    _, bk, _ = attention_tiles(instr)
    shapes: dict[str, GemmShape] = {}
    if batch * heads * seq * dim == 0:   # nothing computed
        return shapes
    if instr.INFO.name == "Attention":
        shapes["scores"] = _scores_shape(instr, kv)
        if not instr.causal:
            shapes["pv"] = _pv_shape(instr, kv, 0.0)
    else:
        shapes[f"scores_{bk}"] = _scores_shape(instr, bk)
        if kv % bk:
            shapes[f"scores_{kv % bk}"] = _scores_shape(instr, kv % bk)
    if instr.INFO.name == "FlashAttention" or instr.causal:
        shapes[f"pv_{bk}"] = _pv_shape(instr, bk, 1.0)
        if kv % bk:
            shapes[f"pv_{kv % bk}"] = _pv_shape(instr, kv % bk, 1.0)
    return shapes


def _layout(instr) -> tuple[int, int, int, int, int]:
    """Byte offsets in the scratch of (the row states, F16/BF16: the f32 output rows, the f32 values, the GEMM
    scratch, the end)."""
    br, bk, lds = attention_tiles(instr)
    size = _compute(instr.ty).size_bytes()
    states = round16(br * lds * size)
    outputs = states + round16(br * 2 * size)
    values = outputs
    if instr.ty in _HALVES:   # the block's output rows, and a key block's values (Attention not causal: all kv_len)
        keys = lds if instr.INFO.name == "Attention" and not instr.causal else bk
        values = outputs + round16(br * instr.head_dim * 4)
        gemm = values + round16(keys * instr.head_dim * 4)
    else:
        gemm = values
    return states, outputs, values, gemm, gemm + max((scratch_bytes(s) for s in _gemm_shapes(instr).values()),
                                                      default=16)


def attention_scratch_bytes(instr) -> int:
    """Scratch bytes of the kernel: the scores of a block of rows, two values per row (F16/BF16: the block's
    output rows and a key block's values in f32), the GEMM packing scratch."""
    return _layout(instr)[-1]


class _Kernel:
    """The emitter of one instruction's function (see the module docstring)."""

    def __init__(self, cc, pointers: dict) -> None:
        """``cc``: the DriverContext of the driver being written; ``pointers``: the locals of the arrays."""
        self.cc, self.e, self.m, self.instr = cc, cc.e, cc.m, cc.instr
        self.p = pointers
        self.batch, self.heads, self.seq, self.dim, self.kv_heads, self.kv, self.slots = _shape(cc.instr)
        self.br, self.bk, self.lds = attention_tiles(cc.instr)
        self.el = ELEMENTS[_compute(cc.instr.ty)]
        self.size, self.shift = self.el.size, self.el.size.bit_length() - 1
        self.in_size = cc.instr.ty.size_bytes()   # of the arrays' elements
        self.halves = cc.instr.ty in _HALVES
        self.offset = self.kv - self.seq   # causal: query i sees key j <= i + offset
        self.drivers = {suffix: build_gemm_driver(self.m, f"attention_{cc.index}_{suffix}", shape)
                        for suffix, shape in _gemm_shapes(cc.instr).items()}
        self.locals = {name: cc.local(I32) for name in (
            "scratch", "states", "gscratch", "bh", "bh_end", "q", "k", "v", "o", "i0", "i_end", "rows", "j0", "j_end",
            "r", "seen", "row_s", "row_o", "acc", "vals", "ci", "c_end")}

    def __getattr__(self, name: str) -> int:
        return self.__dict__["locals"][name]

    def run(self, scratch: int, lo: int, hi: int) -> None:
        """The heads (item * heads + head) ``lo .. hi`` with ``scratch`` (attention_scratch_bytes): i32 locals."""
        e = self.e
        states, outputs, values, gemm, _ = _layout(self.instr)
        e.get(scratch).tee(self.scratch).i32(states).op("i32.add").set(self.states)
        for local, offset in ((self.acc, outputs), (self.vals, values), (self.gscratch, gemm)):
            e.get(self.scratch).i32(offset).op("i32.add").set(local)
        e.get(lo).set(self.bh)
        e.get(hi).set(self.bh_end)
        e.while_below(self.bh, self.bh_end, 1, self.head, labels=("heads_done", "heads"))

    def head(self) -> None:
        """Pointers of item b = bh / heads, head h = bh % heads, kv head h / group; then its query blocks."""
        e, d4 = self.e, self.dim * self.in_size
        group = self.heads // self.kv_heads
        for name in ("q", "o"):
            e.get(self.p[name]).get(self.bh).i32(self.seq * d4).op("i32.mul").op("i32.add").set(getattr(self, name))
        for name in ("k", "v"):   # ((b * kv_heads + h / group) * max_seq) * d
            e.get(self.p[name])
            e.get(self.bh).i32(self.heads).op("i32.div_u").i32(self.kv_heads).op("i32.mul")
            e.get(self.bh).i32(self.heads).op("i32.rem_u").i32(group).op("i32.div_u").op("i32.add")
            e.i32(self.slots * d4).op("i32.mul").op("i32.add").set(getattr(self, name))
        e.i32(0).set(self.i0)
        e.i32(self.seq).set(self.i_end)
        e.while_below(self.i0, self.i_end, self.br, self.query_block, labels=("queries_done", "queries"))

    # ---- helpers -----------------------------------------------------------------------------------------
    def rows_loop(self, body, label: str) -> None:
        """``body()`` for r < rows, with row_s (the row's scores) and row_o (its output) set."""
        e = self.e

        def one() -> None:
            e.get(self.scratch).get(self.r).i32(self.lds * self.size).op("i32.mul").op("i32.add").set(self.row_s)
            if self.halves:   # the block's f32 output rows
                e.get(self.acc).get(self.r).i32(self.dim * 4).op("i32.mul").op("i32.add")
            else:
                e.get(self.o).get(self.i0).get(self.r).op("i32.add").i32(self.dim * self.size).op("i32.mul")
                e.op("i32.add")
            e.set(self.row_o)
            body()

        e.i32(0).set(self.r)
        e.while_below(self.r, self.rows, 1, one, labels=(f"{label}_rows_done", f"{label}_rows"))

    def push_seen(self, width: int | None) -> None:
        """Push how many keys of the block at j0 (``width`` keys; None: all kv_len from 0) row r sees."""
        e = self.e
        full = self.kv if width is None else width
        if not self.instr.causal:
            e.i32(full)
            return
        # clamp(i0 + r + offset + 1 - j0, 0, full): signed, the block may lie wholly past the row
        e.get(self.i0).get(self.r).op("i32.add").i32(self.offset + 1).op("i32.add")
        if width is not None:
            e.get(self.j0).op("i32.sub")
        e.set(self.seen)
        e.get(self.seen).i32(0).get(self.seen).i32(0).op("i32.gt_s").op("select").set(self.seen)
        e.i32(full).get(self.seen).get(self.seen).i32(full).op("i32.gt_s").op("select")

    def gemm(self, suffix: str, a_push, b_push, c_push) -> None:
        a_push()
        b_push()
        c_push()
        self.e.get(self.gscratch).i32(0).get(self.rows).call(self.drivers[suffix])

    def key_block_pointer(self, base: int) -> None:
        if self.halves and base == self.v:   # the key block's values, converted to f32 by values()
            self.e.get(self.vals)
            return
        self.e.get(base).get(self.j0).i32(self.dim * self.in_size).op("i32.mul").op("i32.add")

    def convert(self, src, dst, count, into_f32: bool, label: str) -> None:
        """Copy ``count`` (pushed) elements from ``src`` to ``dst`` (pushed addresses): the type's to f32 (exact),
        or f32 to the type (rounded once)."""
        e, m, ty = self.e, self.m, self.instr.ty
        value = self.cc.local(ValType.F32)

        def one() -> None:
            wide, narrow = (dst, src) if into_f32 else (src, dst)
            if into_f32:
                wide()
                e.get(self.ci).i32(2).op("i32.shl").op("i32.add")
                narrow()
                e.get(self.ci).i32(1).op("i32.shl").op("i32.add")
                load_scalar(m, e, ty)
                e.op("f32.store", 0)
            else:
                wide()
                e.get(self.ci).i32(2).op("i32.shl").op("i32.add").op("f32.load", 0).set(value)
                narrow()
                e.get(self.ci).i32(1).op("i32.shl").op("i32.add")
                store_scalar(m, e, ty, value)

        e.i32(0).set(self.ci)
        count()
        e.set(self.c_end)
        e.while_below(self.ci, self.c_end, 1, one, labels=(f"{label}_done", label))

    def values_f32(self, width: int) -> None:
        """F16/BF16: the ``width`` values of the key block at j0 into the f32 values scratch."""
        e = self.e
        self.convert(lambda: e.get(self.v).get(self.j0).i32(self.dim * 2).op("i32.mul").op("i32.add"),
                     lambda: e.get(self.vals), lambda: e.i32(width * self.dim), True, f"values_{width}")

    def finish_block(self) -> None:
        """F16/BF16: the block's f32 output rows rounded once into the output."""
        if not self.halves:
            return
        e = self.e
        self.convert(lambda: e.get(self.acc), lambda: e.get(self.o).get(self.i0).i32(self.dim * 2).op("i32.mul")
                     .op("i32.add"), lambda: e.get(self.rows).i32(self.dim).op("i32.mul"), False, "outputs")

    def key_blocks(self, body) -> None:
        """``body(width)`` for each key block j0 some row of the query block sees (width: bk, or the last block's
        kv % bk, known when built)."""
        e, bk, tail = self.e, self.bk, self.kv % self.bk
        e.i32(0).set(self.j0)
        if self.instr.causal:   # keys up to the last row's: min(kv, i0 + rows + offset)
            e.get(self.i0).get(self.rows).op("i32.add").i32(self.offset).op("i32.add").set(self.j_end)
        else:
            e.i32(self.kv).set(self.j_end)

        def one() -> None:
            if not tail:
                body(bk)
                return
            e.get(self.j0).i32(bk).op("i32.add").i32(self.kv).op("i32.le_u")
            with e.if_():
                body(bk)
                e.else_()
                body(tail)

        e.while_below(self.j0, self.j_end, bk, one, labels=("keys_done", "keys"))

    def values(self, width: int) -> None:
        """o += P V for the key block at j0: one GEMM (beta 1) when every row sees the whole block, else row by
        row over the keys each sees."""
        e = self.e
        two_pass = self.instr.INFO.name == "Attention"   # its scores hold every key: block j0 starts at column j0
        if self.halves:
            self.values_f32(width)

        def weights(base: int) -> None:
            e.get(base)
            if two_pass:
                e.get(self.j0).i32(self.shift).op("i32.shl").op("i32.add")

        gemm = lambda: self.gemm(f"pv_{width}", lambda: weights(self.scratch),  # noqa: E731
                                 lambda: self.key_block_pointer(self.v),
                                 self.output_block)
        if not self.instr.causal:
            gemm()
            return
        e.get(self.j0).i32(width).op("i32.add").get(self.i0).i32(self.offset + 1).op("i32.add").op("i32.le_u")
        with e.if_():
            gemm()
            e.else_()
            axpy = axpy_rows(self.m, self.el)

            def one() -> None:
                weights(self.row_s)
                self.key_block_pointer(self.v)
                e.get(self.row_o)
                self.push_seen(width)
                e.i32(self.dim).call(axpy)

            self.rows_loop(one, f"axpy_{width}")

    # ---- the query block ---------------------------------------------------------------------------------
    def query_block(self) -> None:
        e = self.e
        e.i32(self.seq).get(self.i0).op("i32.sub").set(self.rows)
        e.i32(self.br).get(self.rows).get(self.rows).i32(self.br).op("i32.gt_u").op("select").set(self.rows)
        if self.instr.INFO.name == "FlashAttention":
            self.flash_block()
        else:
            self.two_pass_block()

    def output_block(self) -> None:
        if self.halves:
            self.e.get(self.acc)
            return
        self.e.get(self.o).get(self.i0).i32(self.dim * self.size).op("i32.mul").op("i32.add")

    def zero_output_block(self) -> None:
        e = self.e
        self.output_block()
        e.i32(0).get(self.rows).i32(self.dim * self.size).op("i32.mul").op("memory.fill", 0)

    def two_pass_block(self) -> None:
        e = self.e
        q_block = lambda: e.get(self.q).get(self.i0).i32(self.dim * self.in_size).op("i32.mul").op("i32.add")  # noqa: E731
        self.gemm("scores", q_block, lambda: e.get(self.k), lambda: e.get(self.scratch))
        softmax = softmax_row(self.m, self.el, False)

        def normalize() -> None:
            e.get(self.row_s).get(self.row_s)
            self.push_seen(None)
            e.call(softmax)

        self.rows_loop(normalize, "softmax")
        if not self.instr.causal:
            if self.halves:
                self.e.i32(0).set(self.j0)
                self.values_f32(self.kv)
            self.gemm("pv", lambda: e.get(self.scratch), lambda: self.key_block_pointer(self.v), self.output_block)
        else:
            self.zero_output_block()
            self.key_blocks(self.values)
        self.finish_block()

    def state(self) -> None:
        """Push the address of row r's (running maximum, running sum)."""
        self.e.get(self.states).get(self.r).i32(self.shift + 1).op("i32.shl").op("i32.add")

    def flash_block(self) -> None:
        e, t = self.e, self.el.scalar
        online, scale = online_row(self.m, self.el), scale_row(self.m, self.el)
        self.zero_output_block()

        def start() -> None:   # the row's running maximum and sum: (-inf, 0)
            for value, at in ((float("-inf"), 0), (0.0, self.size)):
                self.state()
                e.op(f"{t}.const", value).op(f"{t}.store", at)

        self.rows_loop(start, "start")

        def block(width: int) -> None:
            q_block = lambda: e.get(self.q).get(self.i0).i32(self.dim * self.in_size).op("i32.mul").op("i32.add")  # noqa: E731,E501
            self.gemm(f"scores_{width}", q_block, lambda: self.key_block_pointer(self.k), lambda: e.get(self.scratch))

            def step() -> None:
                e.get(self.row_s)
                self.push_seen(width)
                self.state()
                e.get(self.row_o).i32(self.dim)
                e.call(online)

            self.rows_loop(step, f"online_{width}")
            self.values(width)

        self.key_blocks(block)

        def finish() -> None:   # o /= l
            e.get(self.row_o).i32(self.dim).op(f"{t}.const", 1.0)
            self.state()
            e.op(f"{t}.load", self.size).op(f"{t}.div")
            e.call(scale)

        self.rows_loop(finish, "finish")
        self.finish_block()


def attention_parallel(instr) -> tuple[str, int, int] | None:
    """``("rows", batch * heads, 1)``: ranges of heads over the threads when the scores and P V take at least
    PARALLEL_GEMM_THRESHOLD multiply-adds in all (as a GEMM), else None."""
    batch, heads, seq, dim, _, kv, _ = _shape(instr)
    return units_parallel(batch * heads, 2 * batch * heads * seq * kv * dim, PARALLEL_GEMM_THRESHOLD)


def attention_launch_scratch(instr) -> int:
    """Per-launch scratch: the driver's parameter block, then one thread's attention_scratch_bytes."""
    return unit_block_bytes(len(array_operands(instr))) + attention_scratch_bytes(instr)


def _build(cc: CoopContext) -> None:
    instr = cc.instr
    pointers = {array.name[0] if array.name != "output" else "o": cc.array(array.name, array.ty, array.elements)
                for array in array_operands(instr)}
    batch, heads, seq, dim, _, _, _ = _shape(instr)
    if batch * heads * seq * dim == 0:
        cc.e.i32(COOP_OK)
        return
    threaded = "parallel_gemm" in cc.m.imports and attention_parallel(instr) is not None
    threaded_units(cc, pointers, batch * heads, threaded,
                   lambda ctx, arrays, scratch, lo, hi: _Kernel(ctx, arrays).run(scratch, lo, hi))


for _name in ("Attention", "FlashAttention"):
    cooperative_rule(_name, ATTENTION_TYPES, scratch=attention_launch_scratch)(_build)
    THREADED_ROWS[_name] = (attention_parallel, attention_scratch_bytes)
