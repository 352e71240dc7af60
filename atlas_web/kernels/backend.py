"""``KernelBackend``: the LLM inference kernels (the torchless seed's trait) over any atlas-web backend.

Tensors are ``atlas_web.numpy`` float32 arrays on the backend's device (``tensor`` makes one from host
data). Each method runs the kernel instruction where the device ``supports`` it for F32 (GEMM for the
matrix products, RMSNorm, Softmax, RoPE, Attention: one launch, the instruction's
contract in docs/semantics.md), else the same function composed of array operations (rounded after
each operation in float32). Methods named "in place" or "into" write the given array's buffer (every
array sharing it, its reshapes, sees the new values); the others return a new array. Everything runs
eagerly (not under ``jit``). Errors: ArrayError naming the method and the shapes that do not fit;
UnsupportedOperation, AtlasTrap or ExecutionFailed from a launch. See docs/kernels.md.
"""

from __future__ import annotations

from typing import Any, Callable

from .. import numpy as anp
from ..backend import Backend
from ..errors import ArrayError
from ..isa.types import Type
from ..launch import as_int
from ..numpy.array import Array
from .launch import copy_into, copy_rows, run_instruction


__all__ = ["KernelBackend"]


def index_operand(what: str, name: str, value: Any) -> int:
    """``value`` as a Python int (an int or NumPy integer; not a bool, a float or a 0-d array of floats):
    a decoding position or length must not be truncated into another row. Raises ArrayError naming
    ``what`` and ``name``."""
    number = as_int(value)
    if number is None:
        kind = f"the bool {value!r}" if isinstance(value, bool) else f"{value!r} ({type(value).__name__})"
        raise ArrayError(f"{what}: {name} must be an integer, not {kind}")
    return number


F32 = Type.F32


class KernelBackend:
    """The LLM kernels on ``device`` (a started atlas-web Backend)."""

    def __init__(self, device: Backend) -> None:
        if not isinstance(device, Backend):
            raise ArrayError(f"KernelBackend needs an atlas-web Backend, got {type(device).__name__}")
        self.device = device
        #: (heads, max_seq, head_dim) -> the query and output rows of ``attention_at`` (kept: a decoding loop
        #: reuses them every step)
        self._rows: dict[tuple[int, int, int], tuple[Array, Array]] = {}

    def __repr__(self) -> str:
        return f"KernelBackend({self.name()!r})"

    def name(self) -> str:
        """The backend's name ("cpu", "wasm", "webgpu", ...)."""
        return self.device.name

    def has_kernel(self, instruction: str) -> bool:
        """Whether the device runs ``instruction`` for F32 (else the composition runs)."""
        return self.device.supports(instruction, F32)

    # ---- tensors -------------------------------------------------------------------------------------
    def tensor(self, data: Any) -> Array:
        """``data`` (an Array, NumPy array, array.array or nested lists) as a float32 array on the device;
        an Array already there is returned itself, anything else is copied."""
        return anp.asarray(data, dtype=anp.float32, device=self.device)

    def zeros(self, shape: Any) -> Array:
        """A new zero-filled float32 array on the device."""
        return anp.zeros(shape, dtype=anp.float32, device=self.device)

    def _arg(self, what: str, name: str, x: Any, ndim: int) -> Array:
        x = self.tensor(x)
        if x.ndim != ndim:
            raise ArrayError(f"{what}: {name} must have {ndim} dimension(s), got {x.describe()}")
        return x

    def _target(self, what: str, name: str, x: Any, ndim: int | None = None) -> Array:
        """An array the method writes: already a float32 Array on this device."""
        if not isinstance(x, Array) or x.dtype != F32 or x.is_bool or x.device is not self.device:
            got = x.describe() + " on " + x.device.name if isinstance(x, Array) else type(x).__name__
            raise ArrayError(f"{what}: {name} is written in place, so it must be a float32 Array on the "
                             f"{self.name()!r} device, got {got}")
        if ndim is not None and x.ndim != ndim:
            raise ArrayError(f"{what}: {name} must have {ndim} dimension(s), got {x.describe()}")
        return x

    @staticmethod
    def _distinct(what: str, out: Array, *inputs: Array) -> None:
        if any(out.buffer is a.buffer for a in inputs):
            raise ArrayError(f"{what}: the output may not share its buffer with an input")

    # ---- matrix products (GEMM) ----------------------------------------------------------------------
    def _gemm(self, what: str, c: Array, c_offset: int, a: Array, b: Array, m: int, n: int, k: int,
              alpha: float = 1.0) -> None:
        """c[c_offset:] (m x n) = alpha * a (m x k) @ b (k x n), all packed row-major."""
        if not (m and n):
            return
        if self.has_kernel("GEMM"):
            run_instruction(what, f"gemm.f32 [{{p0}}], [{{p1}}], [{{p2}}], {m}, {n}, {k}, {float(alpha)!r}, 0.0, "
                                  "false, false, 0, 0, 0", [(c, c_offset), (a, 0), (b, 0)])
            return
        product = anp.matmul(a.reshape(-1)[:m * k].reshape(m, k), b.reshape(-1)[:k * n].reshape(k, n))
        copy_into(what, c, c_offset, product * alpha if alpha != 1.0 else product)

    def matmul_vec(self, w: Any, x: Any) -> Array:
        """``w @ x`` for w (m, k) and x (k,): a new (m,) array (GEMM with n = 1)."""
        what = "matmul_vec"
        w, x = self._arg(what, "w", w, 2), self._arg(what, "x", x, 1)
        if w.shape[1] != x.shape[0]:
            raise ArrayError(f"{what}: w {w.describe()} @ x {x.describe()}: inner dimensions differ")
        out = self.zeros((w.shape[0],))
        self.matmul_vec_into(w, x, out)
        return out

    def matmul_vec_into(self, w: Any, x: Any, out: Array) -> None:
        """``out = w @ x`` in place for w (m, k), x (k,), out (m,)."""
        what = "matmul_vec_into"
        w, x, out = self._arg(what, "w", w, 2), self._arg(what, "x", x, 1), self._target(what, "out", out, 1)
        m, k = w.shape
        if x.shape != (k,) or out.shape != (m,):
            raise ArrayError(f"{what}: w {w.describe()} @ x {x.describe()} does not fit out {out.describe()}")
        self._distinct(what, out, w, x)
        self._gemm(what, out, 0, w, x, m, 1, k)

    def matmul(self, a: Any, b: Any) -> Array:
        """``a @ b`` for a (m, k) and b (k, n): a new (m, n) array."""
        what = "matmul"
        a, b = self._arg(what, "a", a, 2), self._arg(what, "b", b, 2)
        if a.shape[1] != b.shape[0]:
            raise ArrayError(f"{what}: a {a.describe()} @ b {b.describe()}: inner dimensions differ")
        out = self.zeros((a.shape[0], b.shape[1]))
        self._gemm(what, out, 0, a, b, a.shape[0], b.shape[1], a.shape[1])
        return out

    # ---- rows: RMSNorm, Softmax, SiLU -----------------------------------------------------------------
    def rmsnorm(self, x: Array, weight: Any, eps: float) -> None:
        """In place over the last axis: ``x = x / sqrt(mean(x**2) + eps) * weight`` (weight (n,))."""
        what = "rmsnorm"
        x = self._target(what, "x", x)
        if x.ndim == 0:
            raise ArrayError(f"{what}: x needs at least 1 dimension, got {x.describe()}")
        n = x.shape[-1]
        weight = self._arg(what, "weight", weight, 1)
        if weight.shape != (n,):
            raise ArrayError(f"{what}: weight {weight.describe()} does not fit x {x.describe()}")
        if not x.size:
            return
        if self.has_kernel("RMSNorm"):
            run_instruction(what, f"rmsnorm.f32 [{{p0}}], [{{p0}}], [{{p1}}], {n}, {float(eps)!r}, {x.size // n}",
                            [(x, 0), (weight, 0)])
            return
        mean_square = (x * x).mean(axis=-1, keepdims=True)
        copy_into(what, x, 0, x / anp.sqrt(mean_square + float(eps)) * weight)

    def _softmax_at(self, what: str, x: Array, offset: int, n: int, rows: int) -> None:
        if not (n and rows):
            return
        if self.has_kernel("Softmax"):
            run_instruction(what, f"softmax.f32 [{{p0}}], [{{p0}}], {n}, {rows}", [(x, offset)])
            return
        part = x.reshape(-1)[offset:offset + n * rows].reshape(rows, n)
        e = anp.exp(part - part.max(axis=-1, keepdims=True))
        copy_into(what, x, offset, e / e.sum(axis=-1, keepdims=True))

    def softmax(self, x: Array) -> None:
        """In place over the last axis: ``x = exp(x - max) / sum(exp(x - max))``."""
        x = self._target("softmax", "x", x)
        n = x.shape[-1] if x.ndim else 1
        self._softmax_at("softmax", x, 0, n, x.size // n if n else 0)

    def softmax_view(self, x: Array, length: int | None = None, offset: int = 0) -> None:
        """In place over the ``length`` elements of 1-D ``x`` from element ``offset`` (the seed's view of the
        scores seen so far); the other elements are left as they are. ``length`` None: to the end."""
        what = "softmax_view"
        x = self._target(what, "x", x, 1)
        length = x.size - offset if length is None else length
        if offset < 0 or length < 0 or offset + length > x.size:
            raise ArrayError(f"{what}: elements {offset}..{offset + length} are outside x {x.describe()}")
        self._softmax_at(what, x, offset, length, 1)

    def silu(self, x: Any) -> Array:
        """``x * sigmoid(x)``: a new array (elementwise; no kernel instruction needed)."""
        return anp.silu(self.tensor(x))

    # ---- rotary embedding -----------------------------------------------------------------------------
    def _rope_shape(self, what: str, x: Any) -> tuple[Array, int, int, int]:
        x = self._target(what, "x", x)
        if x.ndim not in (2, 3) or x.shape[-1] % 2:
            raise ArrayError(f"{what}: x must be (heads, head_dim) or (seq, heads, head_dim) with an even "
                             f"head_dim, got {x.describe()}")
        seq = x.shape[0] if x.ndim == 3 else 1
        return x, seq, x.shape[-2], x.shape[-1]

    def apply_rope(self, x: Array, cos: Any, sin: Any) -> None:
        """In place, the seed's form: x (heads, head_dim) or (seq, heads, head_dim), cos and sin
        (head_dim/2,) or (seq, head_dim/2) for each pair p = (p, p + head_dim/2):
        ``(a, b) -> (a cos - b sin, a sin + b cos)`` (array operations: the angles are given)."""
        what = "apply_rope"
        x, seq, heads, d = self._rope_shape(what, x)
        half = d // 2
        cos, sin = self.tensor(cos), self.tensor(sin)
        for name, t in (("cos", cos), ("sin", sin)):
            if t.shape not in ((half,), (seq, half)):
                raise ArrayError(f"{what}: {name} {t.describe()} does not fit x {x.describe()} (needs ({half},) "
                                 f"or ({seq}, {half}))")
        rows = x.reshape(seq, heads, d)
        cos, sin = cos.reshape(-1, 1, half), sin.reshape(-1, 1, half)
        a, b = rows[:, :, :half], rows[:, :, half:]
        rotated = anp.concatenate([a * cos - b * sin, a * sin + b * cos], axis=-1)
        copy_into(what, x, 0, rotated)

    def apply_rope_at(self, x: Array, freqs: Any, position: int) -> None:
        """In place: row s of x (seq, heads, head_dim) (or x (heads, head_dim), s = 0) rotated by the angles
        ``(position + s) * freqs[p]`` on the pairs (p, p + head_dim/2): the RoPE instruction."""
        what = "apply_rope_at"
        position = index_operand(what, "position", position)
        x, seq, heads, d = self._rope_shape(what, x)
        freqs = self._arg(what, "freqs", freqs, 1)
        if freqs.shape != (d // 2,):
            raise ArrayError(f"{what}: freqs {freqs.describe()} does not fit head_dim {d}")
        if position < 0:
            raise ArrayError(f"{what}: position {position} is negative")
        if not x.size:
            return
        if self.has_kernel("RoPE"):
            run_instruction(what, f"rope.f32 [{{p0}}], [{{p0}}], [{{p1}}], 1, {seq}, {heads}, {d}, {position}, "
                                  "false", [(x, 0), (freqs, 0)])
            return
        angles = anp.reshape(anp.arange(position, position + seq, dtype=anp.float32, device=self.device),
                             (seq, 1)) * freqs
        self.apply_rope(x, anp.cos(angles), anp.sin(angles))

    def rope_angles(self, freqs: Any, max_seq: int) -> Array:
        """The angle table (max_seq, head_dim/2) of ``apply_rope_row``: ``angles[s, p] = s * freqs[p]``
        rounded once to float32."""
        freqs = self._arg("rope_angles", "freqs", freqs, 1)
        positions = anp.reshape(anp.arange(max_seq, dtype=anp.float32, device=self.device), (max_seq, 1))
        return positions * freqs

    def apply_rope_row(self, x: Array, angles: Any, position: int) -> None:
        """In place: x (heads, head_dim) rotated by the angles of row ``position`` of ``angles`` (a
        ``rope_angles`` table) on the pairs (p, p + head_dim/2). The position is a launch register (the
        address of the table's row: the RoPE instruction at position 1 reads those angles as its
        frequencies), so a decoding loop compiles one program for every position."""
        what = "apply_rope_row"
        position = index_operand(what, "position", position)
        x = self._target(what, "x", x, 2)
        heads, d = x.shape
        angles = self._arg(what, "angles", angles, 2)
        if d % 2 or angles.shape[1] != d // 2 or not 0 <= position < angles.shape[0]:
            raise ArrayError(f"{what}: x {x.describe()} at position {position} does not fit angles "
                             f"{angles.describe()} (needs an even head_dim, (max_seq, head_dim/2) angles)")
        if not x.size:
            return
        half = d // 2
        if self.has_kernel("RoPE"):
            run_instruction(what, f"rope.f32 [{{p0}}], [{{p0}}], [{{p1}}], 1, 1, {heads}, {d}, 1, false",
                            [(x, 0), (angles, position * half)])
            return
        row = self.zeros((1, half))
        copy_rows(what, row, 0, half, angles, position * half, half, 1, half)
        self.apply_rope(x, anp.cos(row), anp.sin(row))

    # ---- attention pieces -----------------------------------------------------------------------------
    def _vector_rows(self, what: str, names: tuple[str, str, str], vector: Any, matrix: Any, target: Array,
                     rows: int | None) -> tuple[Array, Array, Array, int]:
        """A 1-D input, a 2-D input, the 1-D array written (sharing no buffer with them) and the rows used
        (None: all of the matrix's)."""
        vector, matrix = self._arg(what, names[0], vector, 1), self._arg(what, names[1], matrix, 2)
        target = self._target(what, names[2], target, 1)
        self._distinct(what, target, vector, matrix)
        return vector, matrix, target, matrix.shape[0] if rows is None else rows

    def compute_attention_scores(self, query: Any, keys: Any, scores: Array, scale: float,
                                 rows: int | None = None) -> None:
        """``scores[j] = scale * dot(query, keys[j])`` in place for the first ``rows`` (None: all) rows of
        keys (n, d), query (d,); the rest of scores is left as it is (GEMM with alpha = scale)."""
        what = "compute_attention_scores"
        query, keys, scores, rows = self._vector_rows(what, ("query", "keys", "scores"), query, keys, scores, rows)
        if query.shape != (keys.shape[1],) or not 0 <= rows <= min(keys.shape[0], scores.size):
            raise ArrayError(f"{what}: query {query.describe()}, keys {keys.describe()}, {rows} rows do not fit "
                             f"scores {scores.describe()}")
        self._gemm(what, scores, 0, keys, query, rows, 1, keys.shape[1], scale)

    def weighted_sum_rows(self, weights: Any, matrix: Any, out: Array, rows: int | None = None) -> None:
        """``out = sum_j weights[j] * matrix[j]`` in place over the first ``rows`` (None: all) rows of
        matrix (n, d); out (d,) (GEMM of the (1, rows) weights and the rows)."""
        what = "weighted_sum_rows"
        weights, matrix, out, rows = self._vector_rows(what, ("weights", "matrix", "out"), weights, matrix, out, rows)
        if out.shape != (matrix.shape[1],) or not 0 <= rows <= min(matrix.shape[0], weights.size):
            raise ArrayError(f"{what}: weights {weights.describe()}, matrix {matrix.describe()}, {rows} rows do "
                             f"not fit out {out.describe()}")
        if rows == 0:
            copy_into(what, out, 0, anp.zeros(out.shape, dtype=anp.float32, device=self.device))
            return
        self._gemm(what, out, 0, weights, matrix, 1, matrix.shape[1], rows)

    def kv_cache_update(self, cache: Array, new_kv: Any, position: int) -> None:
        """``cache[h, position] = new_kv[h]`` in place for cache (kv_heads, max_seq, head_dim) and new_kv
        (kv_heads, head_dim), bit for bit. The position is a launch register (one per-lane row copy whose
        offsets are preset; the KVCacheUpdate instruction takes it as an immediate, a program per position),
        so a decoding loop compiles it once. Raises ArrayError for a position outside the cache."""
        what = "kv_cache_update"
        position = index_operand(what, "position", position)
        cache = self._target(what, "cache", cache, 3)
        heads, max_seq, d = cache.shape
        new_kv = self.tensor(new_kv)
        if new_kv.shape != (heads, d) or not 0 <= position < max_seq:
            raise ArrayError(f"{what}: new_kv {new_kv.describe()} at position {position} does not fit cache "
                             f"{cache.describe()}")
        copy_rows(what, cache, position * d, max_seq * d, new_kv, 0, d, heads, d)

    def _decoding_attention(self, what: str, query: Any, key_cache: Any, value_cache: Any, name: str,
                            value: int, fits: Callable[[int], bool]
                            ) -> tuple[Array, Array, Array, tuple[int, int, int, int]]:
        """query (heads, head_dim), key and value caches (kv_heads, max_seq, head_dim) checked to fit each other
        (heads a multiple of kv_heads) and ``fits(max_seq)`` (operand ``name`` = ``value`` within the cache);
        (q, k, v, (heads, head_dim, kv_heads, max_seq)). Raises ArrayError."""
        q = self._arg(what, "query", query, 2)
        k, v = self._arg(what, "key_cache", key_cache, 3), self._arg(what, "value_cache", value_cache, 3)
        heads, d = q.shape
        kv_heads, max_seq, kd = k.shape
        if v.shape != k.shape or kd != d or not kv_heads or heads % kv_heads or not fits(max_seq):
            raise ArrayError(f"{what}: query {q.describe()}, key_cache {k.describe()}, value_cache "
                             f"{v.describe()} and {name} {value} do not fit")
        return q, k, v, (heads, d, kv_heads, max_seq)

    def attention(self, query: Any, key_cache: Any, value_cache: Any, kv_len: int) -> Array:
        """One decoding step's attention: query (heads, head_dim) against the first ``kv_len`` positions of
        key_cache and value_cache (kv_heads, max_seq, head_dim), head h reading kv head
        h // (heads // kv_heads), scores scaled by 1/sqrt(head_dim): a new (heads, head_dim) array (the
        Attention instruction with seq_len 1)."""
        what = "attention"
        kv_len = index_operand(what, "kv_len", kv_len)
        q, k, v, (heads, d, kv_heads, max_seq) = self._decoding_attention(
            what, query, key_cache, value_cache, "kv_len", kv_len, lambda max_seq: 1 <= kv_len <= max_seq)
        if self.has_kernel("Attention"):
            out = self.zeros((heads, d))
            run_instruction(what, f"attention.f32 [{{p0}}], [{{p1}}], [{{p2}}], [{{p3}}], 1, {heads}, 1, {d}, "
                                  f"{kv_len}, false, {kv_heads}, {max_seq}", [(out, 0), (q, 0), (k, 0), (v, 0)])
            return out
        return anp.attention(q.reshape(1, heads, 1, d), k[:, :kv_len].reshape(1, kv_heads, kv_len, d),
                             v[:, :kv_len].reshape(1, kv_heads, kv_len, d)).reshape(heads, d)

    def attention_at(self, query: Any, key_cache: Any, value_cache: Any, position: int) -> Array:
        """``attention(query, key_cache, value_cache, position + 1)`` with the position a launch register:
        the query goes to row ``position`` of a (heads, max_seq, head_dim) block (a row copy with preset
        offsets), the Attention instruction runs causally over all max_seq rows and keys (row ``position``
        sees the keys 0..position; the other rows are computed and ignored), and row ``position`` of its
        output is copied out. One program for every position (max_seq times the arithmetic of one row).
        A new (heads, head_dim) array. Raises ArrayError as ``attention``."""
        what = "attention_at"
        position = index_operand(what, "position", position)
        q, k, v, (heads, d, kv_heads, max_seq) = self._decoding_attention(
            what, query, key_cache, value_cache, "position", position, lambda max_seq: 0 <= position < max_seq)
        rows = self._rows.get((heads, max_seq, d))
        if rows is None:
            rows = self._rows[(heads, max_seq, d)] = (self.zeros((heads, max_seq, d)), self.zeros((heads, max_seq, d)))
        queries, outputs = rows
        at, stride = position * d, max_seq * d
        copy_rows(what, queries, at, stride, q, 0, d, heads, d)
        if self.has_kernel("Attention"):
            run_instruction(what, f"attention.f32 [{{p0}}], [{{p1}}], [{{p2}}], [{{p3}}], 1, {heads}, {max_seq}, "
                                  f"{d}, {max_seq}, true, {kv_heads}, {max_seq}",
                            [(outputs, 0), (queries, 0), (k, 0), (v, 0)])
        else:
            outputs = anp.attention(queries.reshape(1, heads, max_seq, d), k.reshape(1, kv_heads, max_seq, d),
                                    v.reshape(1, kv_heads, max_seq, d), causal=True)
        out = self.zeros((heads, d))
        copy_rows(what, out, 0, d, outputs, at, stride, heads, d)
        return out
