"""Measured ulp errors of the webgpu backend against the reference (generated; do not edit by hand).

Written by ``python -m atlas_web.accuracy webgpu --write``: (operation key, type name) -> the largest
error in units in the last place seen over its inputs. Operations absent here were measured bit-exact.
"""

MEASURED_ULPS: dict[tuple[str, str], float] = {
    ('COS', 'F32'): 2.0,
    ('EXP', 'F32'): 1.0,
    ('GELU', 'F32'): 2.0,
    ('LOG', 'F32'): 1.0,
    ('LOG10', 'F32'): 2.0,
    ('LOG2', 'F32'): 1.0,
    ('ParallelMap.Cos', 'F32'): 2.0,
    ('ParallelMap.Exp', 'F32'): 1.0,
    ('ParallelMap.Gelu', 'F32'): 2.0,
    ('ParallelMap.Log', 'F32'): 1.0,
    ('ParallelMap.Sigmoid', 'F32'): 2.0,
    ('ParallelMap.Sin', 'F32'): 2.0,
    ('ParallelMap.Swish', 'F32'): 2.0,
    ('ParallelMap.Tan', 'F32'): 3.0,
    ('ParallelMap.Tanh', 'F32'): 1.0,
    ('ParallelMapBinary.Atan2', 'F32'): 2.0,
    ('ParallelMapBinary.Pow', 'F32'): 2.0,
    ('SIGMOID', 'F32'): 2.0,
    ('SIN', 'F32'): 2.0,
    ('SWISH', 'F32'): 2.0,
    ('TAN', 'F32'): 3.0,
    ('TANH', 'F32'): 1.0,
}
