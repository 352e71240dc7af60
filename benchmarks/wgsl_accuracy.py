"""Accuracy of the WGSL transcendentals on this device: the builtins and lib_math's implementations.

For every transcendental of the Atlas ISA (and ParallelMapBinary's Pow and Atan2) it evaluates,
in f32 on the WebGPU device, the WGSL builtin and our implementation over a sweep of inputs,
and measures the largest error in ulp against the reference (binary64 with NumPy, rounded once
to f32, as ``atlas_web.reference`` does). Not a test: it prints the table, and with ``--write``
regenerates ``webgpu_backend/wgsl/accuracy.py``, which ``ulp_tolerance`` and docs/backends.md
read. It measures candidate implementations of one library (the WGSL builtin and ours) to choose
between them; the backend itself, every operation and type end to end, is measured against the
reference by the one tool for every backend, ``python -m atlas_web.accuracy webgpu``. ``--fit`` prints the polynomial coefficients lib_math uses (weighted least squares on
Chebyshev nodes for relative error, iterated towards minimax).

    python3 benchmarks/wgsl_accuracy.py [--samples N] [--write] [--fit]
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from atlas_web.reference.numeric_transcendentals import gelu, sigmoid, swish  # noqa: E402
from webgpu_backend import default_driver  # noqa: E402
from webgpu_backend.wgsl import CodeWriter, ShaderFeatures  # noqa: E402
from webgpu_backend.wgsl.accuracy import BUILTIN_LIMIT_ULP  # noqa: E402
from webgpu_backend.wgsl.library import HelperSet  # noqa: E402
from webgpu_backend.wgsl.rules_math import MATH_FUNCTIONS, math_expression  # noqa: E402

ACCURACY_MODULE = Path(__file__).resolve().parent.parent / "webgpu_backend" / "wgsl" / "accuracy.py"

#: op -> the binary64 reference function
REFERENCE = {
    "EXP": np.exp, "LOG": np.log, "LOG2": np.log2, "LOG10": np.log10, "SIN": np.sin, "COS": np.cos, "TAN": np.tan,
    "TANH": np.tanh, "SIGMOID": sigmoid, "SWISH": swish, "GELU": gelu, "POW": np.power, "ATAN2": np.arctan2,
}
#: op -> a description of its sweep (the inputs are drawn by _sweep)
SWEEPS = {
    "EXP": "x uniform in [-104, 89] and log-uniform |x| in [2^-30, 2^4]",
    "LOG": "x log-uniform in [2^-149, 2^128), and 1 + u with |u| log-uniform in [2^-24, 2^-1]",
    "LOG2": "as LOG", "LOG10": "as LOG",
    "SIN": "x uniform in [-100, 100] and log-uniform |x| in [2^-30, 2^127]", "COS": "as SIN", "TAN": "as SIN",
    "TANH": "x uniform in [-12, 12] and log-uniform |x| in [2^-30, 2^4]",
    "SIGMOID": "x uniform in [-110, 110] and normal(0, 3)", "SWISH": "as SIGMOID", "GELU": "as SIGMOID",
    "POW": "x log-uniform in [2^-20, 2^20], y uniform in [-25, 25] (finite, nonzero results)",
    "*": "inputs and results restricted to zero and normal f32 values",
    "ATAN2": "y, x uniform in [-100, 100], and log-uniform magnitudes in [2^-60, 2^60] with random signs",
}


def _log_uniform(rng, lo: float, hi: float, n: int, signed: bool = True) -> np.ndarray:
    x = np.exp2(rng.uniform(lo, hi, n))
    return x * rng.choice([-1.0, 1.0], n) if signed else x


def _sweep(op: str, n: int, rng) -> list[np.ndarray]:
    half = n // 2
    if op == "EXP":
        return [np.concatenate([rng.uniform(-104, 89, half), _log_uniform(rng, -30, 4, n - half)])]
    if op in ("LOG", "LOG2", "LOG10"):
        near_one = 1 + _log_uniform(rng, -24, -1, n - half)
        return [np.concatenate([_log_uniform(rng, -149, 127.99, half, signed=False), near_one])]
    if op in ("SIN", "COS", "TAN"):
        return [np.concatenate([rng.uniform(-100, 100, half), _log_uniform(rng, -30, 127, n - half)])]
    if op == "TANH":
        return [np.concatenate([rng.uniform(-12, 12, half), _log_uniform(rng, -30, 4, n - half)])]
    if op in ("SIGMOID", "SWISH", "GELU"):
        return [np.concatenate([rng.uniform(-110, 110, half), rng.normal(0, 3, n - half)])]
    if op == "POW":
        x = _log_uniform(rng, -20, 20, n, signed=False)
        y = rng.uniform(-25, 25, n)
        return [x, y]
    y = np.concatenate([rng.uniform(-100, 100, half), _log_uniform(rng, -60, 60, n - half)])
    x = np.concatenate([rng.uniform(-100, 100, half), _log_uniform(rng, -60, 60, n - half)])
    return [y, x]


def ulp_errors(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    """Distance in f32 ulp (NaN = NaN; infinities equal only themselves)."""
    g = got.view(np.int32).astype(np.int64)
    w = want.view(np.int32).astype(np.int64)
    g = np.where(g < 0, -(g & 0x7FFFFFFF), g)
    w = np.where(w < 0, -(w & 0x7FFFFFFF), w)
    d = np.abs(g - w).astype(np.float64)
    d[np.isnan(got) & np.isnan(want)] = 0
    d[np.isnan(got) ^ np.isnan(want)] = math.inf
    return d


def _shader(op: str, arity: int, implementation: str, features: ShaderFeatures) -> str:
    helpers = HelperSet()
    w = CodeWriter(helpers, features)
    args = tuple(f"input{k}[i]" for k in range(arity))
    expression = math_expression(w, op, args, implementation)
    inputs = "".join(f"@group(0) @binding({k + 2}) var<storage, read> input{k}: array<f32>;\n" for k in range(arity))
    return f"""{features.enable_directives}struct Launch {{ zero: u32, }}
@group(0) @binding(0) var<storage, read> launch: Launch;
@group(0) @binding(1) var<storage, read_write> output: array<f32>;
{inputs}
{helpers.render()}

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {{
    let i = gid.x + 256u * groups.x * gid.y;
    if (i >= arrayLength(&output)) {{ return; }}
{chr(10).join(w.lines)}
    output[i] = {expression};
}}"""


def measure(driver, op: str, samples: int, seed: int = 1) -> dict[str, float]:
    """Max ulp error of the builtin and of ours for ``op`` over its sweep (f32)."""
    rng = np.random.default_rng(seed)
    inputs = [a.astype(np.float32) for a in _sweep(op, samples, rng)]
    with np.errstate(all="ignore"):
        want = np.asarray(REFERENCE[op](*(a.astype(np.float64) for a in inputs))).astype(np.float32)
    # the normal range: inputs and results that are zero or normal f32 values
    tiny = np.finfo(np.float32).tiny
    keep = (want == 0) | (np.abs(want) >= tiny) | ~np.isfinite(want)
    for a in inputs:
        keep &= (a == 0) | (np.abs(a) >= tiny)
    if op == "POW":
        keep &= np.isfinite(want) & (want != 0)
    features = ShaderFeatures(shader_f16="shader-f16" in driver.features)
    n = inputs[0].size
    launch = driver.create_buffer(16)
    buffers = [driver.create_buffer(4 * n) for _ in inputs]
    for buffer, data in zip(buffers, inputs):
        driver.write_buffer(buffer, 0, data)
    out = driver.create_buffer(4 * n)
    row = {}
    for implementation in ("builtin", "ours"):
        source = _shader(op, len(inputs), implementation, features)
        layout = {0: "read-only-storage", 1: "storage", **{k + 2: "read-only-storage" for k in range(len(inputs))}}
        pipeline = driver.create_pipeline(driver.compile(source), "main", layout)
        groups = -(-n // 256)
        workgroups = (min(groups, 65535), -(-groups // 65535), 1)
        driver.dispatch(pipeline, {0: launch, 1: out, **{k + 2: b for k, b in enumerate(buffers)}}, workgroups)
        got = np.frombuffer(driver.read_buffer(out), np.float32)
        errors = ulp_errors(got[keep], want[keep])
        row[implementation] = float(errors.max())
    for buffer in (launch, out, *buffers):
        driver.destroy_buffer(buffer)
    return row


def write_module(table: dict[str, dict[str, float]], device: str, samples: int) -> None:
    """Regenerate webgpu_backend/wgsl/accuracy.py from a measured table."""
    text = ACCURACY_MODULE.read_text()
    head = text[:text.index("#: where the table was measured")]
    rows = "".join(f'    "{op}": {{"builtin": {_number(r["builtin"])}, "ours": {_number(r["ours"])}}},\n'
                   for op, r in table.items())
    sweep = "".join(f'    "{op}": "{SWEEPS[op]}",\n' for op in (*table, "*"))
    tail = text[text.index("IMPLEMENTATION: dict[str, str] = {"):]
    ACCURACY_MODULE.write_text(
        head + f'#: where the table was measured\nDEVICE = "{device}"\n'
        f"#: the sweep per op ({samples} samples each, f32)\nSWEEP: dict[str, str] = {{\n{sweep}}}\n"
        f"#: a builtin worse than this (ulp, f32) is replaced by our implementation\n"
        f"BUILTIN_LIMIT_ULP = {BUILTIN_LIMIT_ULP}\n\nMEASURED: dict[str, dict[str, float]] = {{\n{rows}}}\n\n" + tail)


def _number(value: float) -> str:
    return 'float("inf")' if math.isinf(value) else str(int(value))


def fit_coefficients() -> None:
    """Print the polynomial coefficients of lib_math (relative-error fits, float32-rounded)."""
    from math import factorial

    def series(coefficient, z, terms=40):
        out = np.zeros_like(z)
        for k in reversed(range(terms)):
            out = out * z + coefficient(k)
        return out

    def fit(fn, degree, lo, hi, n=4000):
        t = np.cos(np.pi * (np.arange(n) + 0.5) / n)
        x = (lo + hi) / 2 + (hi - lo) / 2 * t
        y = fn(x)
        basis = np.stack([x ** k for k in range(degree + 1)], 1)
        weight = 1 / np.abs(y)
        for _ in range(30):
            c, *_ = np.linalg.lstsq(basis * weight[:, None], y * weight, rcond=None)
            error = np.abs(basis @ c - y) / np.abs(y)
            weight = weight * (error / error.max()) ** 0.3 + 1e-300
            weight = weight / weight.max() / np.abs(y)
        return [float(np.float32(v)) for v in c], float(np.max(np.abs(basis @ c - y) / np.abs(y)))

    half_ln2 = math.log(2) / 2
    s_max = (math.sqrt(2) - 1) / (math.sqrt(2) + 1)
    fits = {
        "exp: (e^r - 1 - r) / r^2, |r| <= ln2/2": (lambda r: series(lambda k: 1 / factorial(k + 2), r), 5,
                                                   -half_ln2, half_ln2),
        "log: T(s)/s^2, z = s^2": (lambda z: series(lambda k: 2 / (2 * k + 3), z), 3, 0, s_max ** 2),
        "sin: (sin s - s)/s^3, z = s^2 <= (pi/4)^2": (lambda z: series(lambda k: (-1) ** (k + 1) / factorial(2 * k + 3),
                                                                       z), 3, 0, (math.pi / 4) ** 2),
        "cos: (cos s - 1 + s^2/2)/s^4": (lambda z: series(lambda k: (-1) ** k / factorial(2 * k + 4), z), 3, 0,
                                         (math.pi / 4) ** 2),
        "atan: (atan s - s)/s^3, s <= tan(pi/12)": (lambda z: series(lambda k: (-1) ** (k + 1) / (2 * k + 3), z), 3,
                                                    0, math.tan(math.pi / 12) ** 2),
    }
    for name, (fn, degree, lo, hi) in fits.items():
        coefficients, error = fit(fn, degree, lo, hi)
        print(f"{name}: {coefficients} (max relative error {error:.2e})")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=1 << 20, help="inputs per op (default 2^20)")
    parser.add_argument("--write", action="store_true", help="regenerate webgpu_backend/wgsl/accuracy.py")
    parser.add_argument("--fit", action="store_true", help="print the polynomial coefficients and stop")
    args = parser.parse_args(argv)
    if args.fit:
        fit_coefficients()
        return
    driver = default_driver()
    info = driver.adapter_info()
    device = f"{info['device']} ({info['backend']}), {info['description']}"
    print(f"device: {device}")
    print(f"{'op':8} {'builtin ulp':>12} {'ours ulp':>10}  chosen")
    table = {}
    for op in MATH_FUNCTIONS:
        row = measure(driver, op, args.samples)
        table[op] = row
        chosen = "ours" if row["builtin"] > BUILTIN_LIMIT_ULP else "builtin"
        print(f"{op:8} {row['builtin']:>12.0f} {row['ours']:>10.0f}  {chosen}")
    if args.write:
        write_module(table, device, args.samples)
        print(f"wrote {ACCURACY_MODULE}")
    driver.close()


if __name__ == "__main__":
    main()
