"""LaunchConfig shapes and their constructors, and ExecutionParams: what they build, and ExecutionFailed or
ProgramError naming the argument for anything else (never a ZeroDivisionError, TypeError or IndexError)."""

from __future__ import annotations

import math

import pytest

from atlas_web import ExecutionFailed, ExecutionParams, LaunchConfig, ProgramError, Register, Type
from atlas_web.launch import MAX_LANES


def test_linear_uses_blocks_of_at_most_the_block_size():
    config = LaunchConfig.linear(1000)
    assert (config.grid, config.block, config.total_threads) == ((4, 1, 1), (256, 1, 1), 1024)
    assert LaunchConfig.linear(10, block_size=64).block == (10, 1, 1)
    assert LaunchConfig.linear(10, 4, shared_memory=32).shared_memory == 32


def test_grid_2d_covers_width_by_height():
    config = LaunchConfig.grid_2d(100, 20)
    assert (config.grid, config.block) == ((7, 2, 1), (16, 16, 1))
    assert LaunchConfig.grid_2d(3, 5, (8, 2)).block == (3, 2, 1)
    assert LaunchConfig.grid_2d(3, 5, block=[2, 2], shared_memory=8).shared_memory == 8


def test_shapes_accept_ints_and_short_tuples():
    config = LaunchConfig(grid=4, block=(2, 3))
    assert (config.grid, config.block, config.num_blocks, config.block_lanes) == ((4, 1, 1), (2, 3, 1), 4, 6)


@pytest.mark.parametrize("make, match", [
    (lambda: LaunchConfig.linear(0), "linear: total_threads must be a positive int, got 0"),
    (lambda: LaunchConfig.linear(True), "linear: total_threads must be a positive int, got True"),
    (lambda: LaunchConfig.linear(2.5), "linear: total_threads must be a positive int, got 2.5"),
    (lambda: LaunchConfig.linear(10, block_size=0), "linear: block_size must be a positive int, got 0"),
    (lambda: LaunchConfig.linear(10, block_size=-1), "linear: block_size must be a positive int, got -1"),
    (lambda: LaunchConfig.linear(10, block_size="x"), "linear: block_size must be a positive int, got 'x'"),
    (lambda: LaunchConfig.linear(MAX_LANES + 1), f"at most {MAX_LANES} lanes"),
    (lambda: LaunchConfig.grid_2d(0, 5), "grid_2d: width must be a positive int, got 0"),
    (lambda: LaunchConfig.grid_2d(5, "a"), "grid_2d: height must be a positive int, got 'a'"),
    (lambda: LaunchConfig.grid_2d(5, 5, (0, 1)), r"grid_2d: block must be two positive ints, got \(0, 1\)"),
    (lambda: LaunchConfig.grid_2d(5, 5, (1,)), r"grid_2d: block must be two positive ints, got \(1,\)"),
    (lambda: LaunchConfig.grid_2d(5, 5, 4), "grid_2d: block must be two positive ints, got 4"),
    (lambda: LaunchConfig(grid=(1.5,)), "LaunchConfig.grid must be 1 to 3 ints"),
    (lambda: LaunchConfig(grid="abc"), "LaunchConfig.grid must be 1 to 3 positive ints, got 'abc'"),
    (lambda: LaunchConfig(block=(1, 1, 1, 1)), "LaunchConfig.block must be 1 to 3 positive ints"),
    (lambda: LaunchConfig(shared_memory=-1), "LaunchConfig.shared_memory must be an int in 0..2\\*\\*32-1, got -1"),
    (lambda: LaunchConfig(grid=(1 << 16, 1 << 16), block=2), f"at most {MAX_LANES} lanes"),
])
def test_bad_shapes_raise_execution_failed_naming_the_argument(make, match):
    with pytest.raises(ExecutionFailed, match=match):
        make()


def test_execution_params_normalize_presets_like_immediates_into_a_read_only_copy():
    presets = {Register(1): (Type.U32, -1), Register(2): (Type.F16, 1 / 3), Register(3): (Type.F32, math.nan)}
    params = ExecutionParams(LaunchConfig(), presets, budget=0)
    assert params.registers[Register(1)] == (Type.U32, 0xFFFFFFFF)
    assert params.registers[Register(2)] == (Type.F16, 0.333251953125)
    assert math.isnan(params.registers[Register(3)][1])
    presets.clear()
    assert len(params.registers) == 3
    with pytest.raises(TypeError):
        params.registers[Register(4)] = (Type.U32, 1)  # type: ignore[index]


@pytest.mark.parametrize("make, error, match", [
    (lambda: ExecutionParams(None), ExecutionFailed, "ExecutionParams.config must be a LaunchConfig, got NoneType"),
    (lambda: ExecutionParams((1, 1, 1)), ExecutionFailed, "must be a LaunchConfig, got tuple"),
    (lambda: ExecutionParams(LaunchConfig(), budget=-1), ExecutionFailed, "ExecutionParams.budget must be a non-neg"),
    (lambda: ExecutionParams(LaunchConfig(), budget=1.5), ExecutionFailed, "ExecutionParams.budget"),
    (lambda: ExecutionParams(LaunchConfig(), [1]), ProgramError, r"must map Register -> \(Type, value\)"),
    (lambda: ExecutionParams(LaunchConfig(), {1: (Type.U32, 1)}), ProgramError, "key 1 is not a Register"),
    (lambda: ExecutionParams(LaunchConfig(), {Register(255): (Type.U32, 1)}), ProgramError,
     "r255 is the special register GLOBAL_LANE_ID"),
    (lambda: ExecutionParams(LaunchConfig(), {Register(1): 5}), ProgramError, r"registers\[r1\] must be a \(Type"),
    (lambda: ExecutionParams(LaunchConfig(), {Register(1): (Type.U8, 300)}), ProgramError,
     r"registers\[r1\]: operand 'value' 300 does not fit in 8 bits"),
    (lambda: ExecutionParams(LaunchConfig(), {Register(1): (Type.F32, "x")}), ProgramError,
     r"registers\[r1\]: operand 'value' must be an int or float"),
])
def test_bad_execution_params_raise_naming_the_field(make, error, match):
    with pytest.raises(error, match=match):
        make()


def test_numpy_integers_are_accepted_where_ints_are():
    np = pytest.importorskip("numpy")
    assert LaunchConfig.linear(np.int64(300)).total_threads == 512
    assert LaunchConfig.linear(300, block_size=np.int32(100)).grid == (3, 1, 1)
    assert LaunchConfig.grid_2d(np.int64(4), np.uint8(4), (np.int64(2), 2)).grid == (2, 2, 1)
    config = LaunchConfig(grid=(np.int32(2), 1), block=np.uint16(3), shared_memory=np.int64(16))
    assert (config.grid, config.block, config.shared_memory) == ((2, 1, 1), (3, 1, 1), 16)
    assert all(type(d) is int for d in config.grid + config.block) and type(config.shared_memory) is int
    with pytest.raises(ExecutionFailed, match="must be a positive int"):
        LaunchConfig.linear(np.bool_(True))


def test_plain_params_are_shared_by_equal_configs_and_refuse_what_is_not_a_config():
    from atlas_web.launch import plain_params
    first = plain_params(LaunchConfig.linear(1000, 64))
    assert first is plain_params(LaunchConfig.linear(1000, 64))   # equal configs: one object, checked once
    assert first == ExecutionParams(LaunchConfig.linear(1000, 64)) and dict(first.registers) == {}
    assert first.budget is None and first.optimize is None
    assert plain_params(LaunchConfig()) is not first
    with pytest.raises(ExecutionFailed, match="must be a LaunchConfig, got tuple"):
        plain_params((1, 1, 1))
    with pytest.raises(ExecutionFailed, match="must be a LaunchConfig, got list"):
        plain_params([1])   # unhashable: not looked up in the cache
