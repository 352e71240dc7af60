"""DataParallel over 2-D grids and 2-D device meshes, and Hybrid (data + pipeline parallel in one call): against
NumPy and a one-device run, bit for bit, over mixes of cpu and wasm devices; the element runs each device holds
against a NumPy model of the launch's special registers; the lowest global lane's trap across a mesh."""

from __future__ import annotations

import numpy as np
import pytest

from atlas_web import AtlasTrap, LaunchConfig, Program, ProgramError, TrapCode
from atlas_web.distributed import DataParallel, Hybrid, Sharded, Tiled
from atlas_web.distributed.mesh import lane_runs, position_runs, split_grid
from atlas_web.isa import (ADD, CVT, LDG, MUL, STG, Address, AllGather, AllReduce, Broadcast, ReduceOperation,
                           ReduceScatter, Register, Type)
from atlas_web.isa.registers import SpecialRegister as S

from .helpers import N, X, Y, divide_program, executor, square_program, two_stages, two_stages_expected

OFF_X, OFF_Y = Register(5), Register(6)


def _special(name: S) -> Register:
    return Register(int(name))


def _model(config: LaunchConfig) -> dict[str, np.ndarray]:
    """Per lane of ``config`` (in GLOBAL_LANE_ID order): its x and y position (NumPy model of the specials)."""
    (gx, gy, gz), (bx, by, bz) = config.grid, config.block
    lane = np.arange(config.total_threads)
    block, within = lane // config.block_lanes, lane % config.block_lanes
    x = (block % gx) * bx + within % bx
    y = ((block // gx) % gy) * by + (within // bx) % by
    z = (block // (gx * gy)) * bz + within // (bx * by)
    return {"x": x, "y": y, "z": z}


@pytest.mark.parametrize("grid,block,mesh", [((5, 3, 1), (2, 3, 1), (2, 2, 1)), ((4, 2, 3), (3, 1, 2), (3, 1, 2)),
                                             ((6, 1, 1), (4, 1, 1), (4, 1, 1)), ((3, 5, 1), (2, 2, 1), (1, 3, 1))])
def test_each_device_holds_its_lanes_in_its_own_order(grid, block, mesh):
    config = LaunchConfig(grid=grid, block=block)
    whole = _model(config)
    width, height = grid[0] * block[0], grid[1] * block[1]
    position = (whole["z"] * height + whole["y"]) * width + whole["x"]
    seen_lanes, seen_positions = [], []
    for part in split_grid(config, mesh):
        launch = part.launch(config)
        local = _model(launch)
        lanes = np.array([part.global_lane(config, lane) for lane in range(launch.total_threads)])
        # the device's lane (x, y, z) is the global lane at its position offset by the device's first block
        assert (whole["x"][lanes] == local["x"] + part.origin[0] * block[0]).all()
        assert (whole["y"][lanes] == local["y"] + part.origin[1] * block[1]).all()
        assert (whole["z"][lanes] == local["z"] + part.origin[2] * block[2]).all()
        held = np.concatenate([np.arange(first, first + count) for first, count in lane_runs(part, config, 2)])
        assert (held == np.stack([2 * lanes, 2 * lanes + 1], axis=1).reshape(-1)).all()
        local_position = (local["z"] * (launch.grid[1] * block[1]) + local["y"]) * (launch.grid[0] * block[0]) \
            + local["x"]
        tile = np.concatenate([np.arange(first, first + count) for first, count in position_runs(part, config, 1)])
        assert (tile[local_position] == position[lanes]).all()
        seen_lanes.append(lanes)
        seen_positions.append(tile)
    assert sorted(np.concatenate(seen_lanes)) == list(range(config.total_threads))
    assert sorted(np.concatenate(seen_positions)) == list(range(config.total_threads))


def _position_program() -> Program:
    """out[p] = in[p]^2 + 1000 * global x + global y (u32) at the lane's position p = y * width + x, width =
    GRID_DIM_X * BLOCK_DIM_X: written for one device; OFF_X, OFF_Y hold the device's first block per axis."""
    u32, u64 = Type.U32, Type.U64
    r = Register

    def mad(dst, a, b, c):
        return [MUL(dst=dst, lhs=a, rhs=b, ty=u32), ADD(dst=dst, lhs=dst, rhs=c, ty=u32)]
    return Program([
        *mad(r(20), _special(S.BLOCK_IDX_X), _special(S.BLOCK_DIM_X), _special(S.LANE_IDX_X)),      # local x
        *mad(r(21), _special(S.BLOCK_IDX_Y), _special(S.BLOCK_DIM_Y), _special(S.LANE_IDX_Y)),      # local y
        MUL(dst=r(22), lhs=_special(S.GRID_DIM_X), rhs=_special(S.BLOCK_DIM_X), ty=u32),           # local width
        *mad(r(23), r(21), r(22), r(20)),                                                          # position
        CVT(dst=r(24), src=r(23), src_ty=u32, dst_ty=u64), MUL(dst=r(24), lhs=r(24), rhs=r(25), ty=u64),
        ADD(dst=r(26), lhs=X, rhs=r(24), ty=u64), ADD(dst=r(27), lhs=Y, rhs=r(24), ty=u64),
        LDG(dst=r(28), src=Address.RegisterIndirect(r(26)), ty=u32), MUL(dst=r(28), lhs=r(28), rhs=r(28), ty=u32),
        ADD(dst=r(29), lhs=_special(S.BLOCK_IDX_X), rhs=OFF_X, ty=u32),
        *mad(r(29), r(29), _special(S.BLOCK_DIM_X), _special(S.LANE_IDX_X)),                       # global x
        ADD(dst=r(30), lhs=_special(S.BLOCK_IDX_Y), rhs=OFF_Y, ty=u32),
        *mad(r(30), r(30), _special(S.BLOCK_DIM_Y), _special(S.LANE_IDX_Y)),                       # global y
        *mad(r(29), r(29), r(31), r(30)), ADD(dst=r(28), lhs=r(28), rhs=r(29), ty=u32),
        STG(dst=Address.RegisterIndirect(r(27)), src=r(28), ty=u32)], {})


def _position_run(close, names, mesh, config, x):
    ex = executor(close, names)
    xs, ys = ex.array(x.reshape(-1), Type.U32, Tiled()), ex.empty(x.size, Type.U32, Tiled())
    ex.execute_distributed(_position_program(), DataParallel(
        config, pointers={X: xs, Y: ys}, mesh=mesh, block_offset=(OFF_X, OFF_Y),
        registers={Register(25): (Type.U64, 4), Register(31): (Type.U32, 1000)}))
    return ys.read()


@pytest.mark.parametrize("names,mesh", [(("cpu", "wasm", "wasm", "cpu"), (2, 2)), (("wasm", "cpu", "cpu"), (1, 3)),
                                        (("cpu", "wasm"), (2, 1))], ids=lambda v: "+".join(map(str, v)))
def test_a_2d_program_on_a_device_mesh_matches_one_device_and_numpy(names, mesh, close):
    config = LaunchConfig.grid_2d(10, 9, block=(2, 3))      # grid (5, 3): uneven splits on both axes
    x = np.random.default_rng(5).integers(0, 1 << 32, size=(9, 10), dtype=np.uint64).astype(np.uint32)
    got = _position_run(close, names, mesh, config, x)
    yy, xx = np.mgrid[0:9, 0:10].astype(np.uint32)
    assert got == (x * x + np.uint32(1000) * xx + yy).astype(np.uint32).tobytes()
    assert got == _position_run(close, ("cpu",), None, config, x)


def test_sharded_buffers_and_a_collective_on_a_2d_mesh(close):
    config = LaunchConfig(grid=(2, 2, 1), block=(2, 2, 1))     # one block per device of the 2 x 2 mesh
    x = np.random.default_rng(6).standard_normal(config.total_threads).astype(np.float32)
    ex = executor(close, ("wasm", "cpu", "cpu", "wasm"))
    xs, ys = ex.array(x, Type.F32, Sharded()), ex.empty(x.size, Type.F32, Sharded())
    program = square_program(Type.F32, AllReduce(buffer=Address.BufferOffset(ys.handle), n=4,
                                                 reduction=ReduceOperation.Sum, ty=Type.F32))
    ex.execute_distributed(program, DataParallel(config, pointers={X: xs, Y: ys}, mesh=(2, 2)))
    squares = (x * x).reshape(4, 4)    # rank r runs block r (x fastest), whose lanes are global lanes 4r..4r+3
    total = squares[0]
    for part in squares[1:]:
        total = (total + part).astype(np.float32)
    assert ys.read() == np.tile(total, 4).tobytes()


def test_trap_on_a_2d_mesh_is_the_lowest_global_lane(close):
    config = LaunchConfig(grid=(3, 2, 1), block=(2, 2, 1))
    x = np.arange(1, config.total_threads + 1, dtype=np.int32)
    x[[21, 7]] = 0      # lane 7 lies in block 1, on mesh device 0 (blocks x 0..1, y 0); lane 21 in block 5
    for names, mesh in ((("cpu",), None), (("wasm", "cpu", "cpu", "wasm"), (2, 2)), (("cpu", "wasm"), (1, 2))):
        ex = executor(close, names)
        xs, ys = ex.array(x, Type.I32, Sharded()), ex.empty(x.size, Type.I32, Sharded())
        with pytest.raises(AtlasTrap) as trap:
            ex.execute_distributed(divide_program(), DataParallel(config, pointers={X: xs, Y: ys}, mesh=mesh))
        assert (trap.value.code, trap.value.lane) == (TrapCode.DIVISION_BY_ZERO, 7)
        assert ys.read() == bytes(x.nbytes)


def test_mesh_refusals(close):
    ex = executor(close, ("cpu", "cpu"))
    xs = ex.empty(16, Type.F32, Tiled())
    config = LaunchConfig(grid=(2, 2, 1), block=(2, 2, 1))
    with pytest.raises(ProgramError, match="holds 3 devices"):
        ex.execute_distributed(square_program(Type.F32), DataParallel(config, pointers={X: xs, Y: xs}, mesh=(3,)))
    with pytest.raises(ProgramError, match="must hold 32"):
        ex.execute_distributed(square_program(Type.F32), DataParallel(
            LaunchConfig(grid=(2, 2, 1), block=(4, 2, 1)), pointers={X: xs, Y: xs}, mesh=(1, 2)))
    with pytest.raises(ProgramError, match="block_offset"):
        DataParallel(config, block_offset=(Register(1), 2))
    with pytest.raises(ProgramError, match="chunk"):
        Tiled(0)


@pytest.mark.parametrize("micro_batches", [1, 2])
def test_hybrid_runs_a_pipeline_per_replica_group(micro_batches, close):
    x = np.arange(1, N + 1, dtype=np.int32)
    ex = executor(close, ("cpu", "wasm", "wasm", "cpu"))
    stages, out = two_stages(ex, x, N // (2 * micro_batches))     # stage 0 on group rank 0, stage 1 on group rank 1
    ex.execute_distributed(None, Hybrid(stages, micro_batches, replicas=2))
    assert out.read() == two_stages_expected(x)


def test_hybrid_trap_and_refusals(close):
    x = np.arange(1, N + 1, dtype=np.int32)
    x[[13, 6]] = 0       # piece 3 (replica 1) and piece 1 (replica 0): the divide stage traps first in piece 1
    ex = executor(close, ("cpu", "wasm", "cpu", "wasm"))
    stages, out = two_stages(ex, x, N // 4)
    with pytest.raises(AtlasTrap) as trap:
        ex.execute_distributed(None, Hybrid(stages, 2, replicas=2))
    assert (trap.value.code, trap.value.lane) == (TrapCode.DIVISION_BY_ZERO, 2)    # lane 6 - 4 within piece 1
    assert out.read() == bytes(4 * N)
    with pytest.raises(ProgramError, match="3 equal replica groups"):
        ex.execute_distributed(None, Hybrid(stages, 2, replicas=3))
    with pytest.raises(ProgramError, match="each replica's group has 1"):
        ex.execute_distributed(None, Hybrid(stages, 1, replicas=4))
    with pytest.raises(ProgramError, match="replicas"):
        Hybrid(stages, 1, replicas=0)


def test_collectives_within_the_rows_of_a_2d_mesh(close):
    config = LaunchConfig(grid=(2, 2, 1), block=(4, 1, 1))      # one block per device; rows: ranks {0, 1}, {2, 3}
    x = np.random.default_rng(9).standard_normal(config.total_threads).astype(np.float32)
    ex = executor(close, ("cpu", "wasm", "wasm", "cpu"))
    xs, ys = ex.array(x, Type.F32, Sharded()), ex.empty(x.size, Type.F32, Sharded())
    gathered = ex.empty(2 * x.size, Type.F32, Sharded(chunk=2))    # each device: its row's 2 x 4 squares
    scattered = ex.empty(x.size, Type.F32, Sharded())
    f32 = Type.F32
    program = square_program(f32, AllGather(output=Address.BufferOffset(gathered.handle),
                                            input=Address.BufferOffset(ys.handle), n=4, devices=2, ty=f32),
                             ReduceScatter(output=Address.BufferOffset(scattered.handle),
                                           input=Address.BufferOffset(gathered.handle), n=4, devices=2,
                                           reduction=ReduceOperation.Sum, ty=f32),
                             AllReduce(buffer=Address.BufferOffset(ys.handle), n=4, reduction=ReduceOperation.Max,
                                       devices=2, ty=f32),
                             Broadcast(buffer=Address.BufferOffset(xs.handle), n=4, root=1, devices=2, ty=f32))
    ex.execute_distributed(program, DataParallel(config, pointers={X: xs, Y: ys}, mesh=(2, 2)))
    squares = (x * x).reshape(2, 2, 4)                             # row, rank within the row, element
    rows = squares.reshape(2, 8)
    assert gathered.read() == np.repeat(rows, 2, axis=0).tobytes()
    summed = (rows + rows).astype(np.float32)                      # both devices of a row gathered the same
    assert scattered.read() == summed.tobytes()
    assert ys.read() == np.repeat(np.maximum(squares[:, 0], squares[:, 1]), 2, axis=0).tobytes()
    assert xs.read() == np.repeat(x.reshape(2, 2, 4)[:, 1], 2, axis=0).tobytes()
    with pytest.raises(ProgramError, match="group of 3"):
        ex.execute_distributed(Program([AllReduce(buffer=Address.BufferOffset(ys.handle), n=4, devices=3,
                                                  reduction=ReduceOperation.Sum)], {}),
                               DataParallel(config, mesh=(2, 2)))
