"""Run generated programs on the reference and on every backend that supports them; compare; minimize.

A program is compared buffer by buffer: inputs and exact outputs bit for bit, inexact outputs within the
backend's documented ``ulp_tolerance`` for the ops that wrote them (tests/conformance/harness.py's rule);
traps by (code, instruction index, lane), and after a trap every input buffer must be unchanged.
A mismatch is first checked against KNOWN_ISSUES (tests/fuzz/known_issues.py) and then minimized by delta
debugging over the program's instructions (text lines) to a short repro printed as text assembly.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from atlas_web import AtlasError, AtlasTrap, ExecutionFailed, Program, ProgramError

from tests.conformance.values import decode, ulp_distance

from .generator import FuzzCase
from .known_issues import known_issue

__all__ = ["Outcome", "run", "mismatches", "minimize", "repro_text", "check", "POINTER"]


@dataclass
class Outcome:
    """Every buffer's bytes after the launch, and the trap (code, index, lane) or None."""

    buffers: list[bytes]
    #: (code, instruction index, lane), or ("ExecutionFailed", message) for a launch that failed
    trap: tuple | None


#: stand-in handles a minimized program's text is written with (replaced by the real ones at each run)
SENTINELS = 900_000


def _with_handles(text: str, handles: list[int]) -> Program:
    for k in reversed(range(len(handles))):
        fake = SENTINELS + k
        text = text.replace(f"buf{fake}", f"buf{handles[k]}").replace(str(fake << 32), str(handles[k] << 32))
    return Program.from_text(text)


def run(backend, case: FuzzCase, text: str | None = None) -> Outcome:
    """Allocate the case's buffers in order, launch the case's program (or ``text``, written with the
    SENTINELS handles), read every buffer back, free them."""
    handles = []
    for buf in case.buffers:
        h = backend.allocate_buffer(max(len(buf.data), 1))
        backend.copy_to_buffer(h, buf.data)
        handles.append(int(h))
    try:
        prog = case.build(handles) if text is None else _with_handles(text, handles)
        trap = None
        try:
            backend.execute_program(prog, case.config)
        except AtlasTrap as t:
            trap = (int(t.code), t.instruction_index, t.lane)
        except ExecutionFailed as e:  # a failed launch is an outcome to compare (the reference never fails one)
            trap = ("ExecutionFailed", str(e)[:200])
        out = [bytes(backend.copy_from_buffer(h)[:len(b.data)]) for h, b in zip(handles, case.buffers)]
    finally:
        for h in handles:
            backend.free_buffer(h)
    return Outcome(out, trap)


def _tolerance(backend, key) -> float:
    if key is None or key == "exact":
        return 0.0
    return max((backend.ulp_tolerance(op, ty) for op, ty in key), default=0.0)


def mismatches(backend, case: FuzzCase, want: Outcome, got: Outcome) -> list[str]:
    """What differs between the reference's outcome and a backend's (empty when they agree)."""
    if want.trap != got.trap:
        return [f"trap: reference {want.trap}, backend {got.trap}"]
    problems = []
    for k, (buf, key, w, g) in enumerate(zip(case.buffers, case.tolerance_ops, want.buffers, got.buffers)):
        if key is None:  # an input: as the reference left it, and unchanged after a trap
            if g != w or (want.trap is not None and g != buf.data):
                problems.append(f"input buffer {k} {'changed by a trapped launch' if g == w else 'differs'}")
            continue
        if want.trap is not None:
            continue  # outputs after a trap are unspecified; inputs are checked above
        if w == g:
            continue
        ulps = _tolerance(backend, key)
        for i, (a, b) in enumerate(zip(decode(buf.ty, w), decode(buf.ty, g))):
            bad = (ulp_distance(a, b, buf.ty) > ulps) if buf.ty.is_float() else a != b
            if bad:
                problems.append(f"buffer {k} ({buf.ty.name}) element {i}: reference {a!r}, backend {b!r}"
                                f" (tolerance {ulps} ulp from {key})")
                break
    return problems


def check(reference, backend, case: FuzzCase) -> tuple[list[str], str | None]:
    """(mismatches, known issue or None) of ``case`` on ``backend``."""
    want, got = run(reference, case), run(backend, case)
    problems = mismatches(backend, case, want, got)
    if not problems:
        return [], None
    return problems, known_issue(backend, case, problems)


#: the lines tests/conformance/case_tools.lane_pointer writes (registers r230-r233, r240: scratch)
POINTER = re.compile(r"\s*(cvt\.u64\.u32 r230|mov_imm\.u64 r23[13]|mul\.u64 r232|or\.u64 r240|add\.u64 r232),")


def _lines(program: Program) -> list[str]:
    return program.to_text().splitlines()


def minimize(reference, backend, case: FuzzCase, max_rounds: int = 200) -> Program:
    """The shortest program (by ddmin over text lines) that still mismatches on ``backend``."""
    handles = [SENTINELS + k for k in range(len(case.buffers))]
    lines = _lines(case.build(handles))

    def kind(problems: list[str]) -> str | None:
        """What a mismatch is about ("trap", "buffer 8 (U8)", "input buffer 3 ..."): a candidate must keep it,
        or ddmin drifts to another mismatch (e.g. a cut pointer that makes lanes write an input)."""
        return problems[0].split(" element")[0].split(":")[0] if problems else None

    want_kind = kind(mismatches(backend, case, run(reference, case), run(backend, case)))

    def fails(candidate: list[str]) -> bool:
        text = "\n".join(candidate)
        try:
            return kind(mismatches(backend, case, run(reference, case, text), run(backend, case, text))) == want_kind
        except (ProgramError, AtlasError):
            return False

    # the per-lane pointer lines stay: without them lanes write each other's bytes (a race, not a bug)
    keep = [i for i, line in enumerate(lines) if POINTER.match(line)]
    cut = [i for i in range(len(lines)) if i not in keep]

    def text_of(kept_cut: list[int]) -> list[str]:
        chosen = set(keep) | set(kept_cut)
        return [line for i, line in enumerate(lines) if i in chosen]

    n, rounds = 2, 0
    while len(cut) >= 1 and rounds < max_rounds:
        chunk = max(1, len(cut) // n)
        reduced = False
        for start in range(0, len(cut), chunk):
            rounds += 1
            candidate = cut[:start] + cut[start + chunk:]
            if fails(text_of(candidate)):
                cut, n, reduced = candidate, max(n - 1, 2), True
                break
        if not reduced:
            if chunk == 1:
                break
            n = min(len(cut), 2 * n)
    lines = text_of(cut)
    return Program.from_text("\n".join(lines))  # written with handles SENTINELS + k


def repro_text(backend_name: str, case: FuzzCase, program: Program, problems: list[str]) -> str:
    """The repro as text: assembly, launch, inputs (handles in allocation order), what differed."""
    out = [f"# backend {backend_name}, case {case.name}", program.to_text(),
           f"# launch {case.config}"]
    for k, buf in enumerate(case.buffers):
        role = "input" if case.tolerance_ops[k] is None else "output"
        vals = decode(buf.ty, buf.data)
        out.append(f"# buf{SENTINELS + k}: {role} {buf.ty.name} x{len(vals)} = {vals[:16]}{' ...' if len(vals) > 16 else ''}")
    out += [f"# {p}" for p in problems]
    return "\n".join(out)
