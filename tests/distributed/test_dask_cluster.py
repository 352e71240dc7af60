"""DistributedExecutor on a real Dask LocalCluster of 2 worker processes on 127.0.0.1, one wasm backend per
worker: DataParallel and the collectives against NumPy and the in-process MultiDeviceExecutor (bit for bit), a
trap on one shard, a killed worker (a clear error naming it, no buffer changed; then a retry on the restarted
cluster). One cluster for the module (it takes seconds to start)."""

from __future__ import annotations

import os
import pickle
import signal

import dask.array as da
import numpy as np
import pytest
from distributed.protocol import deserialize, serialize

import atlas_web.numpy as anp

from atlas_web import AtlasTrap, LaunchConfig, Program, ProgramError, TrapCode
from atlas_web.distributed import DataParallel, Hybrid, PipelineParallel, Replicated, Sharded, Stage
from atlas_web.distributed.dask_arrays import map_blocks
from atlas_web.distributed.dask_chunks import to_atlas, to_numpy
from atlas_web.distributed.dask_cluster import DistributedExecutor, Payload, WorkerLost   # the test extra's dask
from atlas_web.distributed.dask_launch import Resident, drop_resident
from atlas_web.isa import GEMM, AllGather, AllReduce, Address, ReduceOperation, Type

from .helpers import N, X, Y, divide_program, executor, square_program, two_stages, two_stages_expected


BLOCK = 4


@pytest.fixture(scope="module")
def cluster():
    with DistributedExecutor(backend="wasm", n_workers=2) as executor:
        yield executor


def _square_with_collectives(ex, x):
    k, n = len(ex.devices), x.size // len(ex.devices)
    xs, ys = ex.array(x, Type.F32, Sharded()), ex.empty(x.size, Type.F32, Sharded())
    gathered = ex.empty(x.size, Type.F32, Replicated())
    program = square_program(Type.F32, AllGather(output=Address.BufferOffset(gathered.handle),
                                                 input=Address.BufferOffset(ys.handle), n=n, ty=Type.F32),
                             AllReduce(buffer=Address.BufferOffset(ys.handle), n=n, reduction=ReduceOperation.Sum,
                                       ty=Type.F32))
    run = getattr(ex, "execute_cluster", ex.execute_distributed)
    run(program, DataParallel(LaunchConfig(grid=(k * n // BLOCK, 1, 1), block=(BLOCK, 1, 1)),
                              pointers={X: xs, Y: ys}))
    return ys.read(), gathered.read()


def test_cluster_has_two_workers_on_localhost(cluster):
    assert len(cluster.devices) == 2
    assert all(device.address.startswith("tcp://127.0.0.1:") for device in cluster.devices)


def test_data_parallel_on_the_cluster_matches_numpy(cluster):
    x = np.random.default_rng(1).standard_normal(6 * BLOCK).astype(np.float32)
    xs, ys = cluster.array(x, Type.F32, Sharded()), cluster.empty(x.size, Type.F32, Sharded())
    cluster.execute_cluster(square_program(Type.F32), DataParallel(LaunchConfig(grid=(6, 1, 1), block=(BLOCK, 1, 1)),
                                                                   pointers={X: xs, Y: ys}))
    assert ys.read() == (x * x).tobytes()


def test_collectives_on_the_cluster_match_local_devices(cluster, close):
    x = np.random.default_rng(2).standard_normal(4 * BLOCK).astype(np.float32)
    local = executor(close, ("cpu", "wasm"))
    assert _square_with_collectives(cluster, x) == _square_with_collectives(local, x)


def test_pipeline_and_hybrid_on_the_cluster_match_numpy_one_task_per_stage_launch(cluster):
    x = np.arange(1, N + 1, dtype=np.int32)
    stages, out = two_stages(cluster, x, N // 4)
    before = sum(device.tasks for device in cluster.devices)
    cluster.execute_cluster(None, PipelineParallel(stages, 4))
    assert out.read() == two_stages_expected(x)
    assert sum(device.tasks for device in cluster.devices) - before == 2 * 4     # 2 stages x 4 micro-batches
    single = tuple(Stage(stage.program, stage.config, 0, stage.pointers) for stage in stages)   # a group of 1
    out.write(bytes(4 * N))
    cluster.execute_cluster(None, Hybrid(single, micro_batches=2, replicas=2))    # one pipeline per worker
    assert out.read() == two_stages_expected(x)


def test_trap_on_one_shard_is_reported_at_its_global_lane(cluster):
    x = np.arange(1, 4 * BLOCK + 1, dtype=np.int32)
    x[13] = 0
    xs, ys = cluster.array(x, Type.I32, Sharded()), cluster.empty(x.size, Type.I32, Sharded())
    with pytest.raises(AtlasTrap) as trap:
        cluster.execute_cluster(divide_program(), DataParallel(LaunchConfig(grid=(4, 1, 1), block=(BLOCK, 1, 1)),
                                                               pointers={X: xs, Y: ys}))
    assert (trap.value.code, trap.value.lane) == (TrapCode.DIVISION_BY_ZERO, 13)
    assert ys.read() == bytes(x.nbytes)


def test_killed_worker_fails_clearly_then_retries(cluster):
    x = np.arange(8, dtype=np.float32)
    xs, ys = cluster.array(x, Type.F32, Sharded()), cluster.empty(8, Type.F32, Sharded())
    strategy = DataParallel(LaunchConfig(grid=(2, 1, 1), block=(BLOCK, 1, 1)), pointers={X: xs, Y: ys})
    victim = cluster.devices[1].address
    pid = cluster.client.run(os.getpid, workers=[victim])[victim]
    os.kill(pid, signal.SIGKILL)
    with pytest.raises(WorkerLost, match=victim.replace(".", r"\.")):
        cluster.execute_cluster(square_program(Type.F32), strategy, retries=0)
    assert ys.read() == bytes(32)
    cluster.execute_cluster(square_program(Type.F32), strategy, retries=2)
    assert ys.read() == (x * x).tobytes()
    assert victim not in {device.address for device in cluster.devices}


@anp.jit
def _shifted_relu(x):
    return anp.relu(x * 2.0 - 0.5)


def test_dask_array_map_blocks_runs_on_the_workers_atlas_backend(cluster):
    x = np.random.default_rng(4).standard_normal(10_000).astype(np.float32)
    blocks = da.from_array(x, chunks=2_500)
    y = map_blocks(_shifted_relu, blocks)
    want = np.maximum(x * np.float32(2.0) - np.float32(0.5), np.float32(0))
    got = cluster.client.compute(y).result()
    assert got.dtype == np.float32 and got.tobytes() == want.tobytes()
    total = cluster.client.compute(y.sum()).result()
    assert total == pytest.approx(float(want.astype(np.float64).sum()), rel=1e-5)


def test_payloads_travel_out_of_band():
    data = bytes(range(256)) * 64
    frames: list = []
    stream = pickle.dumps(Payload(data), protocol=5, buffer_callback=frames.append)
    assert len(stream) < 200 and len(frames) == 1 and bytes(frames[0].raw()) == data
    header, sent = serialize(Payload(data))
    assert header["serializer"] == "dask" and bytes(deserialize(header, sent).data) == data


def test_an_existing_client_with_the_cpu_backend_is_left_open(cluster):
    x = np.arange(8, dtype=np.int32)
    with DistributedExecutor(cluster.client, backend="cpu") as ex:
        xs, ys = ex.array(x, Type.I32, Sharded()), ex.empty(8, Type.I32, Sharded())
        ex.execute_cluster(square_program(Type.I32), DataParallel(LaunchConfig(grid=(2, 1, 1), block=(BLOCK, 1, 1)),
                                                                  pointers={X: xs, Y: ys}))
        assert ys.read() == (x * x).tobytes()
    assert cluster.client.status == "running"


def test_a_launch_with_collectives_is_one_task_per_worker_per_segment(cluster, close):
    x = np.random.default_rng(5).standard_normal(4 * BLOCK).astype(np.float32)
    before = cluster.tasks_submitted
    got = _square_with_collectives(cluster, x)        # 2 collectives: 3 segments on each of 2 workers, 2 combines
    assert cluster.tasks_submitted - before == 3 * 2 + 2
    assert got == _square_with_collectives(executor(close, ("wasm", "wasm")), x)
    before = cluster.tasks_submitted
    xs, ys = cluster.array(x, Type.F32, Sharded()), cluster.empty(x.size, Type.F32, Sharded())
    cluster.execute_cluster(square_program(Type.F32), DataParallel(LaunchConfig(grid=(4, 1, 1), block=(BLOCK, 1, 1)),
                                                                   pointers={X: xs, Y: ys}))
    assert cluster.tasks_submitted - before == 2 and ys.read() == (x * x).tobytes()


def test_trap_before_a_collective_on_the_cluster_changes_nothing(cluster):
    x = np.arange(1, 4 * BLOCK + 1, dtype=np.int32)
    x[[13, 14]] = 0
    xs, ys = cluster.array(x, Type.I32, Sharded()), cluster.empty(x.size, Type.I32, Sharded())
    program = Program([*divide_program().instructions,
                       AllReduce(buffer=Address.BufferOffset(ys.handle), n=2 * BLOCK, reduction=ReduceOperation.Sum,
                                 ty=Type.I32)], {})
    strategy = DataParallel(LaunchConfig(grid=(4, 1, 1), block=(BLOCK, 1, 1)), pointers={X: xs, Y: ys})
    with pytest.raises(AtlasTrap) as trap:
        cluster.execute_cluster(program, strategy)
    assert (trap.value.code, trap.value.lane) == (TrapCode.DIVISION_BY_ZERO, 13)
    assert ys.read() == bytes(x.nbytes)
    with pytest.raises(ProgramError, match="outside its buffer"):     # refused before any task is submitted
        cluster.execute_cluster(Program([AllReduce(buffer=Address.BufferOffset(ys.handle), n=2 * BLOCK + 1,
                                                   reduction=ReduceOperation.Sum, ty=Type.I32)], {}), strategy)


def test_replicated_buffers_stay_resident_on_the_workers(cluster, monkeypatch, close):
    m = inner = n = 8
    a = np.random.default_rng(6).standard_normal((m, inner)).astype(np.float32)
    b = np.random.default_rng(7).standard_normal((inner, n)).astype(np.float32)
    sent = []
    placement = cluster._placement

    def spy(buffer, rank, *args):
        handle, data = placement(buffer, rank, *args)
        if isinstance(data, Resident):
            sent.append((rank, data.data is not None))
        return handle, data
    monkeypatch.setattr(cluster, "_placement", spy)

    def gemm(ex, weights):
        sa = ex.array(a.reshape(-1), Type.F32, Sharded(chunk=m // 2 * inner))
        sc = ex.empty(m * n, Type.F32, Sharded(chunk=m // 2 * n))
        run = getattr(ex, "execute_cluster", ex.execute_distributed)
        run(Program([GEMM(c=Address.BufferOffset(sc.handle), a=Address.BufferOffset(sa.handle),
                          b=Address.BufferOffset(weights.handle), m=m // 2, n=n, k=inner, ty=Type.F32)], {}),
            DataParallel(LaunchConfig(grid=(2, 1, 1), block=(1, 1, 1))))
        return sc.read()
    local = executor(close, ("wasm", "wasm"))
    want = gemm(local, local.array(b.reshape(-1), Type.F32))
    weights = cluster.array(b.reshape(-1), Type.F32)      # Replicated
    assert [gemm(cluster, weights) for _ in range(3)] == [want] * 3
    assert sent == [(0, True), (1, True)] + [(0, False), (1, False)] * 2     # sent once, then resident
    weights.write(b.reshape(-1) * 2)                       # new bytes: sent again
    local_weights = local.array(b.reshape(-1) * 2, Type.F32)
    sent.clear()
    assert gemm(cluster, weights) == gemm(local, local_weights)
    assert sent == [(0, True), (1, True)]
    cluster.client.run(drop_resident, cluster.token)       # the workers lose their copies (as a restart would)
    sent.clear()
    assert gemm(cluster, weights) == gemm(local, local_weights)
    assert sent == [(0, False), (1, False), (0, True), (1, True)]   # answered missing, sent again
    with DistributedExecutor(cluster.client, resident=False) as plain:     # every launch sends B: same result
        assert gemm(plain, plain.array(b.reshape(-1), Type.F32)) == want


def test_atlas_arrays_as_dask_chunks_on_the_cluster(cluster):
    x = np.random.default_rng(8).standard_normal(8_000).astype(np.float32)
    chunks = to_atlas(da.from_array(x, chunks=2_000), backend="wasm")
    block = cluster.client.compute(chunks.blocks[1]).result(timeout=60)      # an atlas chunk, sent as bytes
    assert isinstance(block, anp.Array) and np.asarray(block.to_host()).tobytes() == x[2_000:4_000].tobytes()
    y = map_blocks(_shifted_relu, chunks, atlas_chunks=True)   # runs on the atlas chunks, the result stays atlas
    want = np.maximum(x * np.float32(2.0) - np.float32(0.5), np.float32(0))
    whole = cluster.client.compute(y).result(timeout=60)       # joined by anp.concatenate (concatenate_lookup)
    assert isinstance(whole, anp.Array) and np.asarray(whole.to_host()).tobytes() == want.tobytes()
    total = cluster.client.compute(y.sum()).result(timeout=60)     # per-chunk sums and their sum, on the workers
    assert isinstance(total, anp.Array)
    assert float(total.to_host()) == pytest.approx(float(want.astype(np.float64).sum()), rel=1e-5)
    top = cluster.client.compute((y + 1.0).max()).result(timeout=60)
    assert float(top.to_host()) == float(want.max() + np.float32(1))
    back = cluster.client.compute(to_numpy(y)).result(timeout=60)
    assert isinstance(back, np.ndarray) and back.tobytes() == want.tobytes()
