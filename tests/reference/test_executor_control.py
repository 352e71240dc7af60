"""Reference executor control flow: divergence and reconvergence, loops, LOOP, CALL/RET, EXIT, the budget."""

from __future__ import annotations

import numpy as np
import pytest

from atlas_web import ExecutionFailed, LaunchConfig, TrapCode
from atlas_web.isa import (
    ADD, AND, BRA, CALL, EXIT, LOOP, MOV_IMM, RET, Address, BarSync, BinaryMapOperation, Condition,
    ParallelMapBinary, Predicate, SETcc, Type,
)
from atlas_web.reference import CpuBackend
from atlas_web.reference.exec_store import MemoryStore
from atlas_web.reference.executor import prepare, run_program

from .executor_helpers import decode, lane_pointer, pointer, prog, r, run, trap_of

COVERS = [("BRA", None), ("CALL", None), ("RET", None), ("LOOP", None), ("EXIT", None),
          ("AND", Type.U32), ("SETcc", Type.U32), ("BarSync", None)]

U32, U64 = Type.U32, Type.U64
P0 = Predicate(0)
LANES = 8


@pytest.fixture
def backend():
    return CpuBackend()


def _store(value_reg: int, ty: Type = U32, out_reg: int = 50) -> list:
    """Store ``value_reg`` at out[lane] (the u64 pointer preset in ``out_reg``)."""
    from atlas_web.isa import STG
    return [*lane_pointer(r(51), r(out_reg), ty.size_bytes(), r(52)),
            STG(dst=Address.RegisterIndirect(r(51)), src=r(value_reg), ty=ty)]


def _run_and_read(backend, program, lanes=LANES, ty=U32, outputs=1, **kwargs):
    bufs = [backend.allocate_buffer(lanes * ty.size_bytes()) for _ in range(outputs)]
    registers = {r(50 + 3 * k): (U64, pointer(b)) for k, b in enumerate(bufs)}
    registers.update(kwargs.pop("registers", {}))
    run(backend, program, lanes, registers=registers, **kwargs)
    results = [decode(ty, backend.copy_from_buffer(b)) for b in bufs]
    return results[0] if outputs == 1 else results


def _parity_program() -> list:
    return [MOV_IMM(dst=r(1), value=1, ty=U32),                                 # 0
            AND(dst=r(2), lhs=r(255), rhs=r(1), ty=U32),                        # 1
            SETcc(pred=P0, lhs=r(2), rhs=r(1), cond=Condition.EQ, ty=U32),      # 2: odd lanes
            BRA(target="odd", pred=P0),                                           # 3
            MOV_IMM(dst=r(3), value=100, ty=U32),                                 # 4
            BRA(target="join"),                                                   # 5
            MOV_IMM(dst=r(3), value=200, ty=U32),                                 # 6: odd
            ADD(dst=r(4), lhs=r(3), rhs=r(255), ty=U32)]                          # 7: join


def test_divergent_branches_reconverge(backend):
    program = prog(*_parity_program(), *_store(4), odd=6, join=7)
    assert _run_and_read(backend, program) == [(200 if i % 2 else 100) + i for i in range(LANES)]


def test_reconverged_lanes_execute_the_join_once_as_one_group():
    program = prog(*_parity_program(), odd=6, join=7)
    prepared = prepare(program)
    seen = []
    join = prepared.plans[7]
    original = join.rule

    def spy(step):
        seen.append(step.count)
        return original(step)

    join.rule = spy
    run_program(program, None, LaunchConfig.linear(LANES), MemoryStore(), budget=100, registers={},
                accumulator=np.zeros(96), prepared=prepared)
    assert seen == [LANES]


def test_bra_with_a_negated_predicate(backend):
    program = prog(MOV_IMM(dst=r(1), value=3, ty=U32),
                   SETcc(pred=P0, lhs=r(255), rhs=r(1), cond=Condition.LT, ty=U32),
                   MOV_IMM(dst=r(2), value=1, ty=U32),
                   BRA(target="skip", pred=P0, negate=True),            # lanes >= 3 jump
                   MOV_IMM(dst=r(2), value=2, ty=U32),
                   *_store(2), skip=5)
    assert _run_and_read(backend, program) == [2, 2, 2, 1, 1, 1, 1, 1]


def _triangle_program() -> list:
    """r1 = 1 + 2 + … + lane with a divergent backward BRA loop; the BRA at 7 jumps back."""
    return [MOV_IMM(dst=r(1), value=0, ty=U32),                                # 0
            MOV_IMM(dst=r(2), value=0, ty=U32),                                # 1
            MOV_IMM(dst=r(3), value=1, ty=U32),                                # 2
            SETcc(pred=P0, lhs=r(2), rhs=r(255), cond=Condition.GE, ty=U32),   # 3: loop
            BRA(target="done", pred=P0),                                         # 4
            ADD(dst=r(2), lhs=r(2), rhs=r(3), ty=U32),                           # 5
            ADD(dst=r(1), lhs=r(1), rhs=r(2), ty=U32),                           # 6
            BRA(target="loop"),                                                  # 7
            *_store(1)]                                                          # 8: done


def test_divergent_loop(backend):
    program = prog(*_triangle_program(), loop=3, done=8)
    assert _run_and_read(backend, program) == [i * (i + 1) // 2 for i in range(LANES)]


def test_budget_counts_backward_jumps_per_lane(backend):
    program = prog(*_triangle_program(), loop=3, done=8)
    # lane 7 takes exactly 7 backward jumps
    assert _run_and_read(backend, program, budget=7) == [i * (i + 1) // 2 for i in range(LANES)]
    assert trap_of(backend, program, LANES, budget=5, registers={r(50): (U64, pointer(backend.allocate_buffer(32)))}) \
        == (TrapCode.BUDGET_EXCEEDED, 7, 6)


def test_budget_default_comes_from_the_backend_and_params_override_it():
    backend = CpuBackend(budget=2)
    program = prog(*_triangle_program(), loop=3, done=8)
    out = backend.allocate_buffer(32)
    assert trap_of(backend, program, LANES, registers={r(50): (U64, pointer(out))}) == (TrapCode.BUDGET_EXCEEDED, 7, 3)
    run(backend, program, LANES, budget=100, registers={r(50): (U64, pointer(out))})
    assert decode(U32, backend.copy_from_buffer(out)) == [i * (i + 1) // 2 for i in range(LANES)]


def test_loop_runs_its_body_count_times_and_once_for_zero(backend):
    program = prog(MOV_IMM(dst=r(1), value=0, ty=U32),
                   MOV_IMM(dst=r(3), value=1, ty=U32),
                   ADD(dst=r(2), lhs=r(255), rhs=r(1), ty=U32),       # count = lane id
                   ADD(dst=r(1), lhs=r(1), rhs=r(3), ty=U32),          # 3: body
                   LOOP(count=r(2), body="body"),
                   *_store(1), *_store(2, out_reg=53), body=3)
    runs, counts = _run_and_read(backend, program, outputs=2)
    assert runs == [max(i, 1) for i in range(LANES)]
    assert counts == [0] * LANES


def test_loop_budget_counts_each_jump_back(backend):
    program = prog(MOV_IMM(dst=r(2), value=5, ty=Type.I32),
                   MOV_IMM(dst=r(1), value=0, ty=Type.I32),           # 1: body
                   LOOP(count=r(2), body="body"), body=1)
    run(backend, program, 2, budget=4)                                  # five passes, four jumps back
    assert trap_of(backend, program, 2, budget=3) == (TrapCode.BUDGET_EXCEEDED, 2, 0)


def test_call_and_ret_nested(backend):
    program = prog(MOV_IMM(dst=r(1), value=0, ty=U32),       # 0
                   MOV_IMM(dst=r(2), value=1, ty=U32),       # 1
                   CALL(target="inc"),                       # 2
                   CALL(target="inc"),                       # 3
                   CALL(target="twice"),                     # 4
                   *_store(1),                               # 5 … 9
                   EXIT(),                                   # 10
                   ADD(dst=r(1), lhs=r(1), rhs=r(2), ty=U32),  # 11: inc
                   RET(),                                    # 12
                   CALL(target="inc"),                       # 13: twice
                   CALL(target="inc"),                       # 14
                   RET(),                                    # 15
                   inc=11, twice=13)
    assert _run_and_read(backend, program) == [4] * LANES


def test_divergent_call_and_ret_without_a_call_ends_the_lane(backend):
    program = prog(MOV_IMM(dst=r(1), value=1, ty=U32),                                # 0
                   AND(dst=r(2), lhs=r(255), rhs=r(1), ty=U32),                       # 1
                   SETcc(pred=P0, lhs=r(2), rhs=r(1), cond=Condition.EQ, ty=U32),     # 2
                   MOV_IMM(dst=r(3), value=10, ty=U32),                               # 3
                   BRA(target="after", pred=P0, negate=True),                          # 4: even lanes skip
                   CALL(target="add"),                                                 # 5
                   *_store(3),                                                         # 6 … 10: after
                   RET(),                                                              # 11: no call: ends
                   *_store(2),                                                         # 12 … never
                   ADD(dst=r(3), lhs=r(3), rhs=r(255), ty=U32),                        # 17: add
                   RET(),                                                              # 18
                   after=6, add=17)
    assert _run_and_read(backend, program) == [10 + i if i % 2 else 10 for i in range(LANES)]


def test_a_call_backwards_counts_against_the_budget(backend):
    program = prog(BRA(target="main"),                        # 0
                   MOV_IMM(dst=r(1), value=1, ty=U32),        # 1: sub
                   RET(),                                     # 2
                   CALL(target="sub"),                        # 3: main
                   CALL(target="sub"),                        # 4
                   CALL(target="sub"),                        # 5
                   sub=1, main=3)
    run(backend, program, 4, budget=3)
    assert trap_of(backend, program, 4, budget=2) == (TrapCode.BUDGET_EXCEEDED, 5, 0)


def test_exit_and_running_past_the_end(backend):
    program = prog(MOV_IMM(dst=r(1), value=4, ty=U32),
                   MOV_IMM(dst=r(2), value=7, ty=U32),
                   SETcc(pred=P0, lhs=r(255), rhs=r(1), cond=Condition.GE, ty=U32),
                   BRA(target="end", pred=P0),                 # lanes >= 4 jump to the end label
                   *_store(2),
                   EXIT(),
                   *_store(1), end=15)
    assert _run_and_read(backend, program) == [7, 7, 7, 7, 0, 0, 0, 0]


def test_lanes_waiting_at_instructions_that_cannot_all_be_reached_fail_the_launch():
    # bypasses the verifier on purpose: odd lanes wait at a cooperative instruction, even lanes at a barrier
    store = MemoryStore()
    buf = store.allocate("buffer", 64).handle
    addr = Address.BufferOffset(handle=buf, offset=0)
    program = prog(MOV_IMM(dst=r(1), value=1, ty=U32),
                   AND(dst=r(2), lhs=r(255), rhs=r(1), ty=U32),
                   SETcc(pred=P0, lhs=r(2), rhs=r(1), cond=Condition.EQ, ty=U32),
                   BRA(target="odd", pred=P0),
                   BarSync(id=0),
                   EXIT(),
                   ParallelMapBinary(dst_array=addr, src_a=addr, src_b=addr, count=4, operation=BinaryMapOperation.Add),
                   odd=6)
    with pytest.raises(ExecutionFailed, match="BarSync"):
        run_program(program, None, LaunchConfig.linear(4), store, budget=10, registers={}, accumulator=np.zeros(96))
