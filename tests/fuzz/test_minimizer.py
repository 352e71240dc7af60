"""The minimizer cuts a mismatching program down to the instructions the mismatch needs."""

from __future__ import annotations

from atlas_web import AtlasTrap
from atlas_web.reference import CpuBackend

from .campaign import POINTER, check, minimize, repro_text
from .generator import generate


class _WrongOnXor(CpuBackend):
    """The reference, except that a program with an XOR fails with a made-up trap (a planted bug)."""

    def execute_program(self, program, config, *args, **kwargs):
        if any(i.INFO.name == "XOR" for i in program.instructions):
            raise AtlasTrap(1, 0, 0, "planted")
        return super().execute_program(program, config, *args, **kwargs)


def test_minimizer_keeps_only_what_the_mismatch_needs():
    reference, wrong = CpuBackend(), _WrongOnXor()
    case = next(c for c in (generate(s, lambda n, t: False) for s in range(200))
                if any(n == "XOR" for n, _ in c.needs) and len(c.build(list(range(2, 2 + len(c.buffers))))) > 30)
    problems, known = check(reference, wrong, case)
    assert problems and known is None
    program = minimize(reference, wrong, case)
    # what is left besides the per-lane pointer setup (kept: cutting it makes lanes race) is the XOR
    left = [line for line in program.to_text().splitlines() if line.strip() and not POINTER.match(line)]
    assert len(left) <= 2 and any("xor" in line for line in left), left
    assert "xor" in repro_text("planted", case, program, problems)
