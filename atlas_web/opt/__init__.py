"""The program optimizer (issue 12): a pass manager over shared analyses, bit-exact passes, a source map.

``ProgramOptimizer(level).optimize(program) -> OptimizedProgram`` (``atlas_web.opt.manager``), also
``Program.optimize(level)``; the compile pipeline (``atlas_web.pipeline``) runs it for every backend at the
level the backend or the launch asks for (``optimize=0/1/2``), and re-maps traps through the source map.
The passes are in ``atlas_web.opt.passes``, the constant evaluation in ``atlas_web.opt.fold``, the analyses
in ``atlas_web.opt.analysis``; ``atlas_web.opt.fusion`` says which adjacent cooperative maps a backend may
run as one pass (at level 1 and above). Standard library only (imports in Pyodide without NumPy).
"""

from __future__ import annotations

from .manager import LEVELS, MAX_ROUNDS, OptimizedProgram, ProgramOptimizer
from .passes import EXACT, PASSES

__all__ = ["ProgramOptimizer", "OptimizedProgram", "LEVELS", "MAX_ROUNDS", "PASSES", "EXACT"]
