"""ModelParallel and PipelineParallel against running the stages one after the other on one device (bit for
bit): two stages (square, then divide 1000 by the square, i32) on different devices; micro-batches through the
stages; a trap in a later stage changes no buffer; the refusals."""

from __future__ import annotations

import numpy as np
import pytest

from atlas_web import AtlasTrap, ExecutionFailed, LaunchConfig, Program, ProgramError, TrapCode
from atlas_web.distributed import ModelParallel, PipelineParallel, Replicated, Stage
from atlas_web.isa import AllReduce, Address, ReduceOperation, Type

from .helpers import N, X, Y, divide_program, executor, square_program, two_stages, two_stages_expected


@pytest.mark.parametrize("names", [("cpu",), ("wasm", "cpu"), ("cpu", "wasm")], ids="+".join)
def test_model_parallel_matches_sequential(names, close):
    x = np.arange(1, N + 1, dtype=np.int32)
    ex = executor(close, names)
    stages, out = two_stages(ex, x, N)
    ex.execute_distributed(None, ModelParallel(stages))
    assert out.read() == two_stages_expected(x)


@pytest.mark.parametrize("micro_batches", [1, 2, 4])
def test_pipeline_parallel_matches_sequential(micro_batches, close):
    x = np.arange(1, N + 1, dtype=np.int32)
    ex = executor(close, ("wasm", "cpu"))
    stages, out = two_stages(ex, x, N // micro_batches)
    ex.execute_distributed(None, PipelineParallel(stages, micro_batches))
    assert out.read() == two_stages_expected(x)


def test_trap_in_a_later_stage_changes_nothing(close):
    x = np.arange(N, dtype=np.int32)    # x[0] = 0: the divide stage traps at lane 0 of micro-batch 0
    ex = executor(close, ("cpu", "wasm"))
    stages, out = two_stages(ex, x, N // 2)
    with pytest.raises(AtlasTrap) as trap:
        ex.execute_distributed(None, PipelineParallel(stages, 2))
    assert (trap.value.code, trap.value.lane) == (TrapCode.DIVISION_BY_ZERO, 0)
    assert out.read() == bytes(4 * N)
    assert stages[0].pointers[Y].read() == bytes(4 * N)   # the first stage's finished output is not kept either


def test_refusals(close):
    ex = executor(close, ("cpu", "cpu"))
    x = np.arange(1, N + 1, dtype=np.int32)
    stages, _ = two_stages(ex, x, N // 2, Replicated())
    with pytest.raises(ExecutionFailed, match="read only"):
        ex.execute_distributed(None, PipelineParallel(stages, 2))
    stages, _ = two_stages(ex, x, N)
    with pytest.raises(ProgramError, match="pass program=None"):
        ex.execute_distributed(stages[0].program, ModelParallel(stages))
    with pytest.raises(ProgramError, match="names device 5"):
        first = stages[0]
        ex.execute_distributed(None, ModelParallel((Stage(first.program, first.config, 5, first.pointers),)))
    with pytest.raises(ProgramError, match="equal micro-batches"):
        ex.execute_distributed(None, PipelineParallel(stages, 3))
    reduce = Program([AllReduce(buffer=Address.BufferOffset(stages[0].pointers[X].handle), n=4,
                                reduction=ReduceOperation.Sum)], {})
    with pytest.raises(ProgramError, match="collectives run under DataParallel"):
        ex.execute_distributed(None, ModelParallel((Stage(reduce, LaunchConfig()),)))
    with pytest.raises(ProgramError, match="takes DataParallel"):
        ex.execute_distributed(reduce, "hybrid")
