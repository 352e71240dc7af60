"""How a workgroup walks one row (a Softmax row, a norm's statistics group): how many invocations it takes
for a row of ``n`` elements, and the refusal of a row longer than the engine lets one invocation loop over.
Shared by the kernels that give each row one workgroup (softmax, norm). Standard library only."""

from __future__ import annotations

from ..emitter import ShaderFeatures
from ..rules import unsupported
from .conv2d import KINDS

__all__ = ["WORKGROUP", "LONG_ROW", "LONG_WORKGROUP", "row_workgroup", "check_loop_limit"]

#: invocations per workgroup (few: SwiftShader and llvmpipe switch through every invocation at each barrier)
WORKGROUP = 16
#: rows longer than this take LONG_WORKGROUP invocations (llvmpipe's loop limit, 60,000 iterations per
#: invocation, then allows rows of 3.84M elements instead of 960K)
LONG_ROW = 1 << 19
LONG_WORKGROUP = 64


def row_workgroup(n: int) -> int:
    """Invocations per workgroup for a row (or a norm's group) of ``n`` elements walked by one workgroup."""
    return LONG_WORKGROUP if n > LONG_ROW else WORKGROUP


def check_loop_limit(name: str, kind: str, what: str, n: int, workgroup: int, features: ShaderFeatures) -> None:
    """Raise UnsupportedOperation (naming instruction ``name`` of element kind ``kind``) when a ``what`` ("row",
    "group") of ``n`` elements walked by ``workgroup`` invocations takes more loop iterations per invocation than
    the engine allows (``features.loop_limit``; 0: no limit)."""
    if features.loop_limit and -(-n // workgroup) > features.loop_limit:
        ty = next(t for t, k in KINDS.items() if k == kind)
        raise unsupported(name, ty, f"a {what} of {n} elements takes more than the engine's "
                          f"{features.loop_limit} loop iterations per invocation ({workgroup} per workgroup)")
