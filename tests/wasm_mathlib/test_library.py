"""MathLibrary emission: on demand, once per (op, shape), with helpers once per module; errors name what is wrong."""

from __future__ import annotations

import numpy as np
import pytest

from atlas_web.errors import UnsupportedOperation
from wasm_backend.encoding import ModuleBuilder, ValType, decode_module
from wasm_backend.errors import WasmEncodingError
from wasm_backend.mathlib import MATH_OPS, MathLibrary, Shape, math_routine, math_op, ulp_bound
from wasm_backend.mathlib.vec_builder import VecBuilder
from wasm_backend.mathlib.registry import MathOp
from wasm_backend.mathlib.shapes import FORMAT_F32
from wasm_backend.runners import create_runner

REQUIRED_OPS = {"exp", "log", "log2", "log10", "sin", "cos", "tan", "tanh", "sigmoid", "gelu", "swish", "pow",
                "atan2", "rcp", "rsqrt"}


def test_every_required_op_has_an_f64_routine_and_a_bound() -> None:
    assert REQUIRED_OPS <= set(MATH_OPS)
    for op in REQUIRED_OPS:
        assert MATH_OPS[op].routine("f64") is not None, op
        for shape in Shape:
            assert ulp_bound(op, shape) <= (2 if shape.format.name == "f32" else 1), op
    assert MATH_OPS["pow"].arity == MATH_OPS["atan2"].arity == 2


def test_functions_are_emitted_on_demand_and_once() -> None:
    mb = ModuleBuilder()
    library = MathLibrary(mb)
    assert mb.functions == ()
    first = library.function("exp", "f32x4")
    assert library.function("EXP", Shape.F32X4) == first      # Atlas names and Shape members work too
    assert len(mb.functions) == 1
    scalar = library.function("exp", "f64")                    # pulls in exp f64x2
    assert set(library.emitted) == {("exp", Shape.F32X4), ("exp", Shape.F64), ("exp", Shape.F64X2)}
    assert scalar != first and len(mb.functions) == 3
    library.function("exp", "f64x2")
    assert len(mb.functions) == 3


def test_widened_f32_calls_the_f64_function_and_helpers_are_shared() -> None:
    mb = ModuleBuilder()
    library = MathLibrary(mb)
    library.function("sin", "f32x4")
    library.function("cos", "f64")
    library.function("tan", "f32")
    names = [fb.name for fb in mb.functions]
    assert names.count("atlas_math.helper.reduce_large_f64") == 1
    assert names.count("atlas_math.helper.two_over_pi_chunk") == 1
    assert {"atlas_math.sin.f64x2", "atlas_math.cos.f64x2", "atlas_math.tan.f64x2"} <= set(names)
    module = decode_module(mb.to_bytes())
    assert not module.exports                                  # nothing is exported


def test_signatures_follow_the_shape() -> None:
    mb = ModuleBuilder()
    library = MathLibrary(mb)
    for op in ("pow", "exp"):
        for shape in Shape:
            index = library.function(op, shape)
            fb = next(f for f in mb.functions if f.index == index)
            assert fb.type.params == (shape.valtype,) * MATH_OPS[op].arity
            assert fb.type.results == (shape.valtype,)


def test_every_op_and_shape_validates_in_wasmtime_in_both_forms() -> None:
    runner = create_runner("wasmtime", budgeted=False)
    for relaxed in (False, True):
        mb = ModuleBuilder()
        library = MathLibrary(mb, relaxed_simd=relaxed)
        for op in sorted(MATH_OPS):
            for shape in Shape:
                library.function(op, shape)
        wasm = mb.to_bytes()
        runner.validate(wasm)
        assert (b"\xfd\x85\x02" in wasm) == relaxed              # f32x4.relaxed_madd appears only when asked


def test_imports_before_emission_keep_indices_right() -> None:
    mb = ModuleBuilder()
    mb.import_function("env", "host", [ValType.F64], [ValType.F64])
    library = MathLibrary(mb, prefix="m")
    index = library.function("exp", "f64")
    assert index >= 1 and mb.function_index("m.exp.f64") == index


def test_unknown_op_and_shape_raise_unsupported_operation() -> None:
    library = MathLibrary(ModuleBuilder())
    with pytest.raises(UnsupportedOperation, match="no such math op .*known: atan2"):
        library.function("erf", "f32x4")
    with pytest.raises(UnsupportedOperation, match="unknown shape .*f32x4"):
        library.function("exp", "f16x8")
    with pytest.raises(UnsupportedOperation, match="no published ulp bound"):
        ulp_bound("erf", "f32")


def test_emit_inline_writes_the_routine_into_the_caller() -> None:
    mb = ModuleBuilder()
    mb.add_memory(1, export="memory")
    library = MathLibrary(mb)
    fn = mb.add_function("twice_exp", [ValType.V128], [ValType.V128], export=True)
    library.emit_inline(fn, "exp", "f64x2", [0])
    assert library.emitted == {}                               # nothing emitted as a separate function
    runner = create_runner("wasmtime", budgeted=False)
    runner.validate(mb.to_bytes())
    with pytest.raises(UnsupportedOperation, match="only vector shapes"):
        library.emit_inline(fn, "exp", "f32", [0])
    with pytest.raises(UnsupportedOperation, match="only vector shapes"):
        library.emit_inline(fn, "sin", "f32x4", [0])          # widened: call the function instead
    with pytest.raises(UnsupportedOperation, match="takes 2 argument"):
        library.emit_inline(fn, "pow", "f64x2", [0])


def test_inline_and_called_routines_agree() -> None:
    from wasm_backend.mathlib.harness import MathHarness
    pairs = [("exp", "f32x4"), ("tanh", "f64x2"), ("pow", "f64x2")]
    called, inlined = MathHarness(pairs), MathHarness(pairs, inline=True)
    x = np.linspace(-20, 20, 1001)
    y = np.linspace(-3, 3, 1001)
    for op, shape in pairs:
        args = (np.abs(x) + 0.5, y) if op == "pow" else (x,)
        assert np.array_equal(called.evaluate(op, shape, *args), inlined.evaluate(op, shape, *args)), op


def test_registry_rejects_bad_registrations() -> None:
    with pytest.raises(ValueError, match="format must be one of"):
        math_routine("exp", "f16")
    with pytest.raises(ValueError, match="registered twice"):
        math_routine("exp", "f64")(lambda kb, x: x)
    with pytest.raises(ValueError, match="arity 2 disagrees"):
        math_routine("exp", "f32", arity=2)(lambda kb, x, y: x)
    assert isinstance(math_op("Exp"), MathOp)


def test_routine_builder_errors_name_the_problem() -> None:
    mb = ModuleBuilder()
    kb = VecBuilder(mb.add_function("f", [ValType.V128], [ValType.V128]), FORMAT_F32)
    with pytest.raises(TypeError, match="Vec or a number"):
        kb.vec("x")
    with pytest.raises(WasmEncodingError, match="no helper provider"):
        kb.helper("h", (), (), lambda fb: None)
    with pytest.raises(WasmEncodingError, match="reads a local"):
        kb.assign(kb.const(1.0), 2.0)


def test_harness_checks_the_number_of_inputs(harness) -> None:
    from wasm_backend.errors import WasmInterfaceError
    with pytest.raises(WasmInterfaceError, match="pow takes 2 input array"):
        harness.evaluate("pow", "f64x2", np.ones(3))
