"""MultiDeviceExecutor: DataParallel over device mixes against the one-device reference and NumPy (bit for bit),
the collectives in programs and as executor methods (float AllReduce folded in rank order), the lowest global
lane's trap, and the refusals."""

from __future__ import annotations

import numpy as np
import pytest

from atlas_web import AtlasTrap, ExecutionFailed, ExecutionParams, LaunchConfig, Program, ProgramError, TrapCode
from atlas_web.distributed import DataParallel, Replicated, Sharded, split_blocks
from atlas_web.isa import (BRA, EXIT, GEMM, AllGather, AllReduce, Address, Broadcast, Label, ReduceOperation,
                           ReduceScatter, Type)
from atlas_web.isa.addresses import make_pointer
from atlas_web.reference import CpuBackend

from .helpers import X, Y, divide_program, executor, mixes, square_program

BLOCK = 4


def test_split_blocks_is_contiguous_in_rank_order():
    assert split_blocks(7, 3) == [(0, 3), (3, 2), (5, 2)]
    assert split_blocks(1, 3) == [(0, 1), (1, 0), (1, 0)]


@pytest.mark.parametrize("names", mixes(), ids="+".join)
@pytest.mark.parametrize("blocks", [1, 5])
def test_data_parallel_matches_one_device(names, blocks, close):
    x = np.random.default_rng(blocks).standard_normal(blocks * BLOCK).astype(np.float32)
    ex = executor(close, names)
    xs, ys = ex.array(x, Type.F32, Sharded()), ex.empty(x.size, Type.F32, Sharded())
    config = LaunchConfig(grid=(blocks, 1, 1), block=(BLOCK, 1, 1))
    ex.execute_distributed(square_program(Type.F32), DataParallel(config, pointers={X: xs, Y: ys}))
    assert ys.read() == (x * x).tobytes()
    assert xs.read() == x.tobytes()


@pytest.mark.parametrize("names", mixes(), ids="+".join)
def test_collectives_in_a_program(names, close):
    k = len(names)
    n = BLOCK   # one block per device: each device's shard holds BLOCK elements
    x = np.random.default_rng(3).standard_normal(k * n).astype(np.float32)
    ex = executor(close, names)
    config = LaunchConfig(grid=(k, 1, 1), block=(BLOCK, 1, 1))
    xs, ys = ex.array(x, Type.F32, Sharded()), ex.empty(k * n, Type.F32, Sharded())
    gathered = ex.empty(k * n, Type.F32, Replicated())
    scattered = ex.empty(k * n, Type.F32, Sharded())
    program = square_program(Type.F32, AllGather(output=Address.BufferOffset(gathered.handle),
                                                 input=Address.BufferOffset(ys.handle), n=n, ty=Type.F32),
                             ReduceScatter(output=Address.BufferOffset(scattered.handle),
                                           input=Address.BufferOffset(gathered.handle), n=n,
                                           reduction=ReduceOperation.Max, ty=Type.F32),
                             AllReduce(buffer=Address.BufferOffset(ys.handle), n=n, reduction=ReduceOperation.Sum,
                                       ty=Type.F32, devices=k),
                             Broadcast(buffer=Address.BufferOffset(xs.handle), n=n, root=k - 1, ty=Type.F32))
    ex.execute_distributed(program, DataParallel(config, pointers={X: xs, Y: ys}))
    squares = (x * x).reshape(k, n)
    total = squares[0].copy()
    for part in squares[1:]:        # rank order, rounded to f32 at every step
        total = (total + part).astype(np.float32)
    assert gathered.read() == squares.tobytes()
    # every device's gathered copy is the same, so their max is the gathered array: device d holds piece d
    assert scattered.read() == squares.tobytes()
    assert ys.read() == np.tile(total, k).tobytes()
    assert xs.read() == np.tile(x.reshape(k, n)[k - 1], k).tobytes()


def test_trap_is_the_lowest_global_lane_and_changes_nothing(close):
    x = np.arange(1, 5 * BLOCK + 1, dtype=np.int32)
    x[[9, 14]] = 0
    config = LaunchConfig(grid=(5, 1, 1), block=(BLOCK, 1, 1))
    single = close(CpuBackend())
    hx, hy = single.allocate_typed(x, Type.I32), single.allocate_typed(np.zeros_like(x), Type.I32)
    with pytest.raises(AtlasTrap) as one:
        single.execute_program_with_params(divide_program(), ExecutionParams(
            config, {X: (Type.U64, make_pointer(int(hx), 0)), Y: (Type.U64, make_pointer(int(hy), 0))}))
    for names, collective in ((("cpu", "wasm", "cpu"), False), (("wasm", "wasm"), False), (("wasm", "cpu"), True)):
        ex = executor(close, names)
        xs, ys = ex.array(x, Type.I32, Sharded()), ex.empty(x.size, Type.I32, Sharded())
        program = divide_program()
        if collective:   # the segmented path: a collective after the trapping segment
            program = Program([*program.instructions, AllReduce(buffer=Address.BufferOffset(ys.handle), n=BLOCK,
                                                                reduction=ReduceOperation.Sum, ty=Type.I32)], {})
        with pytest.raises(AtlasTrap) as many:
            ex.execute_distributed(program, DataParallel(config, pointers={X: xs, Y: ys}))
        got, want = many.value, one.value
        assert (got.code, got.instruction_index, got.lane) == (want.code, want.instruction_index, want.lane) \
            == (TrapCode.DIVISION_BY_ZERO, want.instruction_index, 9)
        assert ys.read() == bytes(x.nbytes)


def test_replicated_buffer_written_differently_is_refused(close):
    ex = executor(close, ("cpu", "cpu"))
    x = np.arange(8, dtype=np.float32)
    xs, ys = ex.array(x, Type.F32, Sharded()), ex.empty(8, Type.F32, Replicated())
    with pytest.raises(ExecutionFailed, match="Replicated"):
        ex.execute_distributed(square_program(Type.F32), DataParallel(LaunchConfig(grid=(2, 1, 1), block=(4, 1, 1)),
                                                                      pointers={X: xs, Y: ys}))
    assert ys.read() == bytes(32)


def test_refusals(close):
    ex = executor(close, ("cpu", "cpu"))
    buf = ex.empty(8, Type.F32, Sharded())
    config = DataParallel(LaunchConfig(grid=(2, 1, 1), block=(4, 1, 1)))
    reduce3 = AllReduce(buffer=Address.BufferOffset(buf.handle), n=4, reduction=ReduceOperation.Sum, devices=3)
    with pytest.raises(ProgramError, match="group of 3"):
        ex.execute_distributed(Program([reduce3], {}), config)
    across = Program([BRA(target=Label("end")), AllReduce(buffer=Address.BufferOffset(buf.handle), n=4,
                                                          reduction=ReduceOperation.Sum), EXIT()], {"end": 2})
    with pytest.raises(ProgramError, match="across a collective"):
        ex.execute_distributed(across, config)
    with pytest.raises(ProgramError, match="must hold 16"):
        ex.execute_distributed(Program([AllReduce(buffer=Address.BufferOffset(buf.handle), n=4,
                                                  reduction=ReduceOperation.Sum)], {}),
                               DataParallel(LaunchConfig(grid=(4, 1, 1), block=(4, 1, 1))))
    with pytest.raises(ProgramError, match="outside"):
        ex.execute_distributed(Program([AllReduce(buffer=Address.BufferOffset(buf.handle), n=5,
                                                  reduction=ReduceOperation.Sum)], {}), config)
    with pytest.raises(ProgramError, match="no DistributedBuffer"):
        ex.execute_distributed(Program([AllReduce(buffer=Address.BufferOffset(buf.handle + 9), n=4,
                                                  reduction=ReduceOperation.Sum)], {}), config)


@pytest.mark.parametrize("names", [("cpu", "cpu", "cpu"), ("wasm", "cpu", "wasm")], ids="+".join)
def test_executor_collectives_fold_in_rank_order(names, close):
    k, n = len(names), 33
    parts = [np.random.default_rng(r).standard_normal(n).astype(np.float32) * 10 ** r for r in range(k)]
    ex = executor(close, names)
    handles = [int(b.allocate_typed(p, Type.F32)) for b, p in zip(ex.devices, parts)]
    ex.all_reduce(handles, n, Type.F32, ReduceOperation.Sum)
    want = ((parts[0] + parts[1]).astype(np.float32) + parts[2]).astype(np.float32)
    for backend, h in zip(ex.devices, handles):
        assert backend.copy_typed_from(h, Type.F32).tobytes() == want.tobytes()
    gathered = [int(b.allocate_buffer(4 * n * k)) for b in ex.devices]
    ex.all_gather(handles, gathered, n, Type.F32)
    assert all(bytes(b.copy_from_buffer(g)) == want.tobytes() * k for b, g in zip(ex.devices, gathered))
    for backend, h, p in zip(ex.devices, handles, parts):
        backend.copy_typed_to(h, p, Type.F32)
    ex.broadcast(handles, n, Type.F32, root=2)
    assert all(b.copy_typed_from(h, Type.F32).tobytes() == parts[2].tobytes() for b, h in zip(ex.devices, handles))
    wide = [np.random.default_rng(7 + r).standard_normal(n * k).astype(np.float32) for r in range(k)]
    local = [int(b.allocate_typed(w, Type.F32)) for b, w in zip(ex.devices, wide)]
    ex.reduce_scatter(local, handles, n, Type.F32, ReduceOperation.Sum)
    folded = ((wide[0] + wide[1]).astype(np.float32) + wide[2]).astype(np.float32)
    for rank, (backend, h) in enumerate(zip(ex.devices, handles)):
        assert backend.copy_typed_from(h, Type.F32).tobytes() == folded[rank * n:(rank + 1) * n].tobytes()
    with pytest.raises(ProgramError, match="one per device"):
        ex.all_reduce(handles[:2], n, Type.F32)


def test_sharded_gemm_rows_match_one_device(close):
    m, n, inner = 6, 5, 7
    a = np.random.default_rng(8).standard_normal((m, inner)).astype(np.float32)
    b = np.random.default_rng(9).standard_normal((inner, n)).astype(np.float32)
    single = close(CpuBackend())
    ha, hb = single.allocate_typed(a.reshape(-1), Type.F32), single.allocate_typed(b.reshape(-1), Type.F32)
    hc = single.allocate_typed(np.zeros(m * n, np.float32), Type.F32)
    single.execute_program(Program([GEMM(c=Address.BufferOffset(int(hc)), a=Address.BufferOffset(int(ha)),
                                         b=Address.BufferOffset(int(hb)), m=m, n=n, k=inner, ty=Type.F32)], {}),
                           LaunchConfig())
    ex = executor(close, ("cpu", "cpu", "cpu"))
    rows = m // 3
    sa, sb = ex.array(a.reshape(-1), Type.F32, Sharded(chunk=rows * inner)), ex.array(b.reshape(-1), Type.F32)
    sc = ex.empty(m * n, Type.F32, Sharded(chunk=rows * n))
    ex.execute_distributed(Program([GEMM(c=Address.BufferOffset(sc.handle), a=Address.BufferOffset(sa.handle),
                                         b=Address.BufferOffset(sb.handle), m=rows, n=n, k=inner, ty=Type.F32)], {}),
                           DataParallel(LaunchConfig(grid=(3, 1, 1), block=(1, 1, 1))))
    assert sc.read() == bytes(single.copy_from_buffer(int(hc)))
