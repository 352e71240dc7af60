"""``atlas_web.numpy``: NumPy-style arrays on any atlas-web backend (standard library only, so it is the
array library in the browser, where there is no NumPy).

    import atlas_web.numpy as anp
    x = anp.linspace(-1, 1, 1_000_000)              # float32, on the default device
    y = anp.relu(2 * x - 0.5)
    print(anp.dot(y, x).item())

Each operation runs eagerly as one generated Atlas program on the array's device (cached by shapes and
dtypes: a warm operation only launches); ``jit`` traces a function once per signature and fuses it
(atlas_web/numpy/jit.py); the NN operations run on the kernel instructions where the device has them
(atlas_web/numpy/nn.py). Errors: ArrayError names the operation and the shapes/dtypes
that do not fit; UnsupportedOperation where the device has no instruction for a dtype. See
atlas_web/numpy/array.py for ``Array``.
"""

from __future__ import annotations

from ..errors import ArrayError
from .array import Array
from .creation import arange, array, asarray, eye, full, full_like, linspace, ones, ones_like, zeros, zeros_like
from .dtypes import DTYPES
from .elementwise import apply as _apply
from . import random
from .einsum import einsum
from .jit import jit
from .linalg import dot, matmul
from .nn import attention, conv2d, layer_norm, log_softmax, rms_norm, softmax
from .manipulation import (astype, broadcast_to, concatenate, copy, expand_dims, reshape, squeeze, stack,
                           swapaxes, transpose)
from .reductions import argmax, argmin, max, mean, min, prod, sum, var
from .runtime import default_device, set_default_device

__all__ = [
    "Array", "ArrayError", "array", "asarray", "zeros", "ones", "full", "zeros_like", "ones_like", "full_like",
    "arange", "linspace", "eye", "add", "subtract", "multiply", "divide", "power", "negative", "abs", "maximum",
    "minimum", "equal", "not_equal", "less", "less_equal", "greater", "greater_equal", "where", "exp", "log",
    "sqrt", "sin", "cos", "tanh", "sigmoid", "relu", "gelu", "silu", "astype", "sum", "prod", "max", "min",
    "mean", "var", "argmax", "argmin", "reshape", "transpose", "swapaxes", "broadcast_to", "concatenate",
    "stack", "expand_dims", "squeeze", "copy", "matmul", "dot", "einsum", "jit", "random", "softmax", "log_softmax",
    "layer_norm", "rms_norm", "attention", "conv2d", "default_device", "set_default_device",
    "float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
]

# dtype names: anp.float32 is the atlas Type, accepted wherever a dtype is
globals().update(DTYPES)


def _op(name: str, doc: str):
    def operation(*args):
        return _apply(name, *args)
    operation.__name__ = operation.__qualname__ = name
    operation.__doc__ = doc + " (elementwise, with NumPy broadcasting and Python scalars)."
    return operation


add = _op("add", "a + b")
subtract = _op("subtract", "a - b")
multiply = _op("multiply", "a * b")
divide = _op("divide", "a / b (true division: integers give float64)")
power = _op("power", "a ** b")
negative = _op("negative", "-a")
abs = _op("abs", "|a|")
maximum = _op("maximum", "the larger of a and b (NaN propagates)")
minimum = _op("minimum", "the smaller of a and b (NaN propagates)")
equal = _op("equal", "a == b, a boolean array")
not_equal = _op("not_equal", "a != b, a boolean array")
less = _op("less", "a < b, a boolean array")
less_equal = _op("less_equal", "a <= b, a boolean array")
greater = _op("greater", "a > b, a boolean array")
greater_equal = _op("greater_equal", "a >= b, a boolean array")
where = _op("where", "b where condition else c")
exp = _op("exp", "e ** a")
log = _op("log", "the natural logarithm of a")
sqrt = _op("sqrt", "the square root of a")
sin = _op("sin", "sin(a)")
cos = _op("cos", "cos(a)")
tanh = _op("tanh", "tanh(a)")
sigmoid = _op("sigmoid", "1 / (1 + e ** -a)")
relu = _op("relu", "max(a, 0)")
gelu = _op("gelu", "the GELU of a (tanh approximation)")
silu = _op("silu", "a * sigmoid(a)")
