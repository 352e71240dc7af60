"""Softmax and LogSoftmax rows on the wasm backend natively (wasmtime), against NumPy, in one run (issue 11).

Softmax of ``--rows`` x ``--n`` (default 1024 x 1024) f32 logits: the wasm kernel (``coop_softmax``) on one thread
and on the default thread count, against NumPy written the usual way, ``e = np.exp(x - x.max(1, keepdims=True));
e / e.sum(1, keepdims=True)`` (float32, one thread of BLAS; NumPy's ufuncs are single-threaded anyway), and
LogSoftmax against ``d - np.log(np.exp(d).sum(1, keepdims=True))``. Each result is checked against NumPy in
float64 (max error printed). Timings are wall time of one launch (the program compiled and the buffers filled
before), the sides interleaved, best of ``--repeats``; the machine may be shared: say so with the figures.
With ``--webgpu``: the webgpu backend natively (wgpu-py; Mesa lavapipe where there is no GPU, a CPU emulation:
compare webgpu with webgpu only): the Softmax kernel (``webgpu_backend/wgsl/kernels/softmax.py``, one workgroup
per row) against a per-lane program with one lane per row (``PER_LANE``: a max loop, an exp-sum loop, a divide
loop; launched in 64-lane blocks), first launch (pipeline creation included) and best warm launch (each launch
followed by a read of one word of the output: a launch returns once submitted).
Run ``PYTHONPATH=. python benchmarks/softmax.py [--rows 1024] [--n 1024] [--repeats 7] [--webgpu]``. Not a test.
"""

from __future__ import annotations

import argparse
import os

for _name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_name, "1")

import numpy as np  # noqa: E402  (after the thread settings)

import time  # noqa: E402

from atlas_web import Address, LaunchConfig, Program, ProgramBuilder  # noqa: E402
from atlas_web.isa import EXIT, LogSoftmax, Softmax  # noqa: E402
from wasm_backend import WasmBackend  # noqa: E402

from benchmarks.gemm import best_of  # noqa: E402


#: softmax of row r = global lane id of a rows x n f32 matrix in buffer 2 into buffer 3, one lane per row
PER_LANE = """\
    mov_imm.u32 r10, {rows}
    set.ge.u32 p0, r255, r10
    bra.p0 @done
    mov_imm.u32 r11, {row_bytes}
    mul.u32 r1, r255, r11          ; the row's first byte
    add.u32 r20, r1, r11           ; past its last
    mov_imm.u32 r12, 2
    mov_imm.u32 r13, 3
    mov_imm.u32 r21, 4
    ldg.f32 r2, [r12 + r1]         ; m
    mov.u32 r3, r1
max_loop:
    ldg.f32 r4, [r12 + r3]
    max.f32 r2, r2, r4
    add.u32 r3, r3, r21
    set.lt.u32 p1, r3, r20
    bra.p1 @max_loop
    mov_imm.f32 r5, 0.0            ; s
    mov.u32 r3, r1
sum_loop:
    ldg.f32 r4, [r12 + r3]
    sub.f32 r4, r4, r2
    exp.f32 r4, r4
    stg.f32 [r13 + r3], r4
    add.f32 r5, r5, r4
    add.u32 r3, r3, r21
    set.lt.u32 p1, r3, r20
    bra.p1 @sum_loop
    mov.u32 r3, r1
div_loop:
    ldg.f32 r4, [r13 + r3]
    div.f32 r4, r4, r5
    stg.f32 [r13 + r3], r4
    add.u32 r3, r3, r21
    set.lt.u32 p1, r3, r20
    bra.p1 @div_loop
done:
    exit
"""


class KernelSoftmax:
    """One Softmax/LogSoftmax launch over ``x`` on ``backend``; ``result()`` reads the output."""

    def __init__(self, backend, cls, x: np.ndarray) -> None:  # launched once when made
        self.backend = backend
        rows, n = x.shape
        self.src = int(backend.allocate_buffer(x.nbytes))
        self.dst = int(backend.allocate_buffer(x.nbytes))
        backend.copy_to_buffer(self.src, x.tobytes())
        builder = ProgramBuilder()
        builder.add(cls(output=Address.BufferOffset(self.dst), input=Address.BufferOffset(self.src), n=n, rows=rows))
        builder.add(EXIT())
        self.program, self.shape = builder.build(), x.shape
        self()

    def __call__(self) -> None:
        self.backend.execute_program(self.program, LaunchConfig())

    def result(self) -> np.ndarray:
        return np.frombuffer(bytes(self.backend.copy_from_buffer(self.dst)), np.float32).reshape(self.shape)


def numpy_softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def numpy_log_softmax(x: np.ndarray) -> np.ndarray:
    d = x - x.max(axis=1, keepdims=True)
    return d - np.log(np.exp(d).sum(axis=1, keepdims=True))


class PerLaneSoftmax(KernelSoftmax):
    """The per-lane program PER_LANE over ``x`` (buffers 2 and 3 of a fresh backend), one lane per row; launched
    once when made."""

    def __init__(self, backend, x: np.ndarray) -> None:
        self.backend, self.shape = backend, x.shape
        self.src = int(backend.allocate_buffer(x.nbytes))
        self.dst = int(backend.allocate_buffer(x.nbytes))
        assert (self.src, self.dst) == (2, 3), "PER_LANE names buffers 2 and 3"
        backend.copy_to_buffer(self.src, x.tobytes())
        self.program = Program.from_text(PER_LANE.format(rows=x.shape[0], row_bytes=4 * x.shape[1]))
        self.config = LaunchConfig.linear(x.shape[0], 64)
        self()

    def __call__(self) -> None:
        self.backend.execute_program(self.program, self.config)


def _synced(side: KernelSoftmax):
    """``side``'s launch, then a read of one word of its output (a webgpu launch returns once submitted)."""
    word = bytearray(4)

    def run() -> None:
        side()
        side.backend.copy_from_buffer(side.dst, word)
    return run


def webgpu(x: np.ndarray, repeats: int) -> None:
    """The webgpu Softmax kernel against PER_LANE, each on a fresh backend: first launch and best warm one."""
    from webgpu_backend import WebGpuBackend
    want = numpy_softmax(x.astype(np.float64))
    makers = {"Softmax kernel": lambda backend: KernelSoftmax(backend, Softmax, x),
              "per-lane program, a lane per row": lambda backend: PerLaneSoftmax(backend, x)}
    sides, first = {}, {}
    for label, make in makers.items():
        start = time.perf_counter()
        sides[label] = make(WebGpuBackend())
        _synced(sides[label])()
        first[label] = time.perf_counter() - start
    best = best_of({label: _synced(side) for label, side in sides.items()}, repeats)
    base = best["per-lane program, a lane per row"]
    print(f"webgpu (native, wgpu-py) Softmax {x.shape[0]}x{x.shape[1]} f32: first launch (buffers and pipeline "
          f"included), best of {repeats} warm")
    for label, side in sides.items():
        error = float(np.max(np.abs(side.result() - want)))
        print(f"  {label:<34} first {first[label] * 1e3:9.1f} ms  warm {best[label] * 1e3:8.2f} ms  "
              f"speed vs per-lane {base / best[label]:6.2f}x  max |error| {error:.1e}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=1024)
    parser.add_argument("--n", type=int, default=1024)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--webgpu", action="store_true", help="also the webgpu kernel against a per-lane program")
    args = parser.parse_args()
    x = np.random.default_rng(11).standard_normal((args.rows, args.n)).astype(np.float32) * 4
    one, many = WasmBackend(threads=1), WasmBackend()
    threads = many.device_info()["threads"]
    for cls, reference in ((Softmax, numpy_softmax), (LogSoftmax, numpy_log_softmax)):
        name = cls.INFO.name
        kernels = {f"wasm {name}, 1 thread": KernelSoftmax(one, cls, x),
                   f"wasm {name}, {threads} threads": KernelSoftmax(many, cls, x)}
        times = best_of({**kernels, f"NumPy {name} (f32)": lambda: reference(x)}, args.repeats)
        want = reference(x.astype(np.float64))
        errors = {label: float(np.max(np.abs(k.result() - want))) for label, k in kernels.items()}
        base = times[f"NumPy {name} (f32)"]
        print(f"{name} {args.rows}x{args.n} f32: wall time, best of {args.repeats}, interleaved")
        for label, seconds in times.items():
            error = f"  max |error| {errors[label]:.1e}" if label in errors else ""
            print(f"  {label:<32} {seconds * 1e3:8.2f} ms  {args.rows * args.n / seconds / 1e6:7.1f} M elements/s"
                  f"  speed vs NumPy {base / seconds:5.2f}x{error}")
    one.close()
    many.close()
    if args.webgpu:
        webgpu(x, args.repeats)


if __name__ == "__main__":
    main()
