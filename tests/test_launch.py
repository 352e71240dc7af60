"""LaunchConfig shapes and their constructors: what they build, and ExecutionFailed naming the argument
for anything else (never a ZeroDivisionError, TypeError or IndexError)."""

from __future__ import annotations

import pytest

from atlas_web import ExecutionFailed, LaunchConfig
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
