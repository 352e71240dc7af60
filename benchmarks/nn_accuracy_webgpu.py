"""The measured accuracy of the webgpu backend's NN kernels in F32, F16 and BF16 against the reference backend
(issue 11): Softmax, LogSoftmax, LayerNorm, RMSNorm, BatchNorm, GroupNorm, RoPE, Attention, FlashAttention and
Conv2D, each on one representative random case per type (inputs drawn in float64, then made representable in the
type; the same bytes to both backends). The reference (``cpu``) computes in binary64 and rounds each output once
to the type (docs/semantics.md); both outputs are values of the type, so an error is a whole number of ulps: 0 is
the correctly rounded result, 1 a value near a rounding boundary that the kernel's f32 error tipped the other
way.

Printed per kernel and type, over the outputs: their count and largest magnitude, the largest absolute error, the
largest relative error (over outputs of magnitude at least the type's smallest normal) and the largest error in
ulps of the type at the reference's value. In F32 an output the formula brings near zero by cancellation
(LayerNorm's ``... + beta``, a weighted sum of signed values) has a tiny ulp: its ulp figure is large while its
absolute error is not (the contract bounds the error by the row's magnitudes, not the output's). F16 and BF16
are computed in f32 and rounded once, so their errors stay at 0-1 ulp wherever the f32 error is far below a
half-type ulp.

Run ``PYTHONPATH=. python benchmarks/nn_accuracy_webgpu.py [--types F32 F16 BF16] [--seed 7]`` (the webgpu
backend natively: lavapipe where there is no GPU). Not a test.
"""

from __future__ import annotations

import argparse

import numpy as np

from atlas_web import LaunchConfig, ProgramBuilder
from atlas_web.isa import (Address, Attention, BatchNorm, Conv2D, FlashAttention, GroupNorm, LayerNorm, LogSoftmax,
                           RMSNorm, RoPE, Softmax, Type)
from atlas_web.isa.extents import array_operands
from atlas_web.registry import get_backend
from tests.conformance.matrix_cases import decode_array, encode_array
from tests.conformance.norm_cases import ulp_of

_SMALLEST_NORMAL = {Type.F32: 2.0 ** -126, Type.F16: 2.0 ** -14, Type.BF16: 2.0 ** -126}


def _cases(ty: Type, rng: np.random.Generator) -> dict:
    """kernel name -> (instruction with operand k in buffer k + 1, operand name -> input values; the output
    first, zeros)."""
    def at(k: int) -> Address:
        return Address.BufferOffset(k + 1)

    normal = rng.standard_normal
    rows, n = 64, 1000
    x = normal(rows * n) * 4
    heads, seq, dim = 4, 64, 64
    qkv = heads * seq * dim
    attention = dict(batch=1, heads=heads, seq_len=seq, head_dim=dim, ty=ty)
    batch, channels, spatial = 2, 16, 100
    conv = dict(batch=1, in_channels=8, out_channels=8, height=16, width=16, kernel_h=3, kernel_w=3, stride_h=1,
                stride_w=1, padding_h=1, padding_w=1)
    return {
        "Softmax": (Softmax(at(0), at(1), n=n, rows=rows, ty=ty), {"output": rows * n, "input": x}),
        "LogSoftmax": (LogSoftmax(at(0), at(1), n=n, rows=rows, ty=ty), {"output": rows * n, "input": x}),
        "LayerNorm": (LayerNorm(at(0), at(1), at(2), at(3), n=n, eps=1e-5, rows=rows, ty=ty),
                      {"output": rows * n, "input": x + 3, "gamma": normal(n), "beta": normal(n)}),
        "RMSNorm": (RMSNorm(at(0), at(1), at(2), n=n, eps=1e-5, rows=rows, ty=ty),
                    {"output": rows * n, "input": x, "weight": normal(n)}),
        "BatchNorm": (BatchNorm(at(0), at(1), at(2), at(3), at(4), at(5), batch=batch, channels=channels,
                                spatial=spatial, eps=1e-5, ty=ty),
                      {"output": batch * channels * spatial, "input": normal(batch * channels * spatial) * 2 + 1,
                       "gamma": normal(channels), "beta": normal(channels), "mean": normal(channels),
                       "variance": rng.uniform(0.5, 4, channels)}),
        "GroupNorm": (GroupNorm(at(0), at(1), at(2), at(3), batch=batch, channels=channels, groups=4,
                                spatial=spatial, eps=1e-5, ty=ty),
                      {"output": batch * channels * spatial, "input": normal(batch * channels * spatial) * 2 + 1,
                       "gamma": normal(channels), "beta": normal(channels)}),
        "RoPE": (RoPE(at(0), at(1), at(2), batch=1, seq_len=seq, heads=heads, head_dim=dim, ty=ty),
                 {"output": qkv, "input": normal(qkv), "freqs": 10000.0 ** (-2 * np.arange(dim // 2) / dim)}),
        "Attention": (Attention(at(0), at(1), at(2), at(3), **attention),
                      {"output": qkv, "query": normal(qkv), "key": normal(qkv), "value": normal(qkv)}),
        "FlashAttention": (FlashAttention(at(0), at(1), at(2), at(3), block_size=32, **attention),
                           {"output": qkv, "query": normal(qkv), "key": normal(qkv), "value": normal(qkv)}),
        "Conv2D": (Conv2D(at(0), at(1), at(2), ty=ty, **conv),
                   {"output": 8 * 16 * 16, "input": normal(8 * 16 * 16), "kernel": normal(8 * 8 * 9) / 3}),
    }


def _representable(ty: Type, values: np.ndarray) -> np.ndarray:
    return decode_array(ty, encode_array(ty, np.asarray(values, np.float64).astype(np.float32).astype(np.float64)))


def run(backend, instr, arrays: dict, ty: Type) -> np.ndarray:
    """The output after one launch of ``instr`` (its addresses rewritten
    to fresh buffers) with ``arrays`` (operand name -> values, the output's count as an int)."""
    handles, fields = [], {}
    for operand in array_operands(instr):
        values = arrays.get(operand.name)
        if values is None:
            continue
        raw = encode_array(ty, np.zeros(values)) if isinstance(values, int) else encode_array(ty, values)
        handle = backend.allocate_buffer(-(-len(raw) // 4) * 4 or 4)
        backend.copy_to_buffer(handle, raw.ljust(-(-len(raw) // 4) * 4, b"\0"))
        handles.append((operand.name, handle, len(raw)))
        fields[operand.name] = Address.BufferOffset(handle, 0)
    launched = type(instr)(**{**{f: getattr(instr, f) for f in instr.__dataclass_fields__}, **fields})
    backend.execute_program(ProgramBuilder().add(launched).build(), LaunchConfig())
    out = None
    for name, handle, nbytes in handles:
        if name == "output":
            out = decode_array(ty, bytes(backend.copy_from_buffer(handle))[:nbytes])
        backend.free_buffer(handle)
    return out


def errors(ty: Type, got: np.ndarray, want: np.ndarray) -> tuple[float, float, float]:
    """(largest absolute error, largest relative error over |want| >= the smallest normal, largest ulps)."""
    diff = np.abs(got - want)
    normal = np.abs(want) >= _SMALLEST_NORMAL[ty]
    relative = float((diff[normal] / np.abs(want[normal])).max()) if normal.any() else 0.0
    return float(diff.max()), relative, float((diff / ulp_of(ty, want)).max())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--types", nargs="+", default=["F32", "F16", "BF16"])
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    reference, webgpu = get_backend("cpu"), get_backend("webgpu")
    print(f"webgpu ({webgpu.device_info().get('device', '?')}) against the reference backend, one random case each "
          f"(seed {args.seed})")
    print(f"  {'kernel':<15} {'type':<5} {'outputs':>8} {'max |ref|':>10} {'max abs err':>12} {'max rel err':>12} "
          f"{'max ulp':>9}")
    for name in ("F32", "F16", "BF16"):
        if name not in args.types:
            continue
        ty = Type[name]
        for kernel, (instr, arrays) in _cases(ty, np.random.default_rng(args.seed)).items():
            arrays = {k: v if isinstance(v, int) else _representable(ty, v) for k, v in arrays.items()}
            want = run(reference, instr, arrays, ty)
            got = run(webgpu, instr, arrays, ty)
            absolute, relative, ulps = errors(ty, got, want)
            print(f"  {kernel:<15} {name:<5} {want.size:8d} {np.abs(want).max():10.3g} {absolute:12.3e} "
                  f"{relative:12.3e} {ulps:9.2f}")


if __name__ == "__main__":
    main()
