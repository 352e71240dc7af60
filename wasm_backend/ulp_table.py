"""Measured ulp errors of the wasm backend against the reference (generated; do not edit by hand).

Written by ``python -m atlas_web.accuracy wasm --write``: (operation key, type name) -> the largest
error in units in the last place seen over its inputs. Operations absent here were measured bit-exact.
"""

MEASURED_ULPS: dict[tuple[str, str], float] = {
    ('COS', 'F64'): 1.0,
    ('EXP', 'F32'): 1.0,
    ('EXP', 'F64'): 1.0,
    ('GELU', 'F32'): 1.0,
    ('GELU', 'F64'): 1.0,
    ('LOG', 'F32'): 1.0,
    ('LOG', 'F64'): 1.0,
    ('LOG10', 'F64'): 2.0,
    ('LOG2', 'F64'): 1.0,
    ('ParallelMap.Cos', 'F64'): 1.0,
    ('ParallelMap.Exp', 'F32'): 1.0,
    ('ParallelMap.Exp', 'F64'): 1.0,
    ('ParallelMap.Gelu', 'F32'): 1.0,
    ('ParallelMap.Gelu', 'F64'): 1.0,
    ('ParallelMap.Log', 'F32'): 1.0,
    ('ParallelMap.Log', 'F64'): 1.0,
    ('ParallelMap.Sigmoid', 'F32'): 1.0,
    ('ParallelMap.Sigmoid', 'F64'): 1.0,
    ('ParallelMap.Sin', 'F64'): 1.0,
    ('ParallelMap.Swish', 'F32'): 1.0,
    ('ParallelMap.Swish', 'F64'): 1.0,
    ('ParallelMap.Tan', 'F64'): 1.0,
    ('ParallelMap.Tanh', 'F32'): 1.0,
    ('ParallelMap.Tanh', 'F64'): 1.0,
    ('ParallelMapBinary.Atan2', 'F64'): 1.0,
    ('ParallelMapBinary.Pow', 'F64'): 1.0,
    ('SIGMOID', 'F32'): 1.0,
    ('SIGMOID', 'F64'): 1.0,
    ('SIN', 'F64'): 1.0,
    ('SWISH', 'F32'): 1.0,
    ('SWISH', 'F64'): 1.0,
    ('TAN', 'F64'): 1.0,
    ('TANH', 'F32'): 1.0,
    ('TANH', 'F64'): 1.0,
}
