"""The measured accuracy of the normalization kernels (LayerNorm, RMSNorm, BatchNorm, GroupNorm) on every compiled
backend here (issue 11): over the conformance suite's generated cases (tests/conformance/norm_cases.py; the NaN and
infinity fills left out: those are compared exactly), the largest share of the conformance allowance an output
uses, ``|got - numpy| / (2 * bound + 1 ulp of ty)`` (the contract's bound, docs/semantics.md, Normalization
kernels; 1 means at the edge), per backend, row and type. docs/backends.md quotes these figures.
Run ``PYTHONPATH=. python benchmarks/norms_accuracy.py``. Not a test.
"""

from __future__ import annotations

import numpy as np

from atlas_web.errors import UnsupportedOperation
from tests.conformance.backends import compiled_backends
from tests.conformance.matrix_cases import decode_array, encode_array
from tests.conformance.norm_cases import BOUNDS, NUMPY, norm_cases, run_norm, ulp_of, unit_roundoff

_SMALLEST_SUBNORMAL = {True: 2.0 ** -1074, False: 2.0 ** -149}


def allowance_used(case, inputs: dict, got: np.ndarray) -> float:
    """The largest ``|got - numpy| / (2 * bound + ulp)`` over the finite outputs of one case (0 when empty)."""
    if got.size == 0:
        return 0.0
    with np.errstate(all="ignore"):
        want = NUMPY[case.info.name](case.fields, inputs)
        eta = _SMALLEST_SUBNORMAL[case.ty.name == "F64"]
        bound = BOUNDS[case.info.name](case.fields, inputs, unit_roundoff(case.ty), eta)
        rounded = decode_array(case.ty, encode_array(case.ty, want))
        share = np.abs(got - want) / (2 * bound + ulp_of(case.ty, np.maximum(np.abs(rounded), np.abs(got))))
    finite = np.isfinite(share)
    return float(share[finite].max()) if finite.any() else 0.0


def main() -> None:
    worst: dict[tuple[str, str, str], float] = {}
    for backend_name, backend in sorted(compiled_backends().items()):
        for case in norm_cases():
            if case.fill == "specials":
                continue
            try:
                inputs, got, trap = run_norm(backend, case)
            except UnsupportedOperation:
                continue
            assert trap is None, (backend_name, case, trap)
            key = (backend_name, case.info.name, case.ty.name)
            worst[key] = max(worst.get(key, 0.0), allowance_used(case, inputs, got))
    print("largest share of the conformance allowance (2 * bound + 1 ulp) used, over the generated cases")
    for (backend_name, row, ty), share in sorted(worst.items()):
        print(f"  {backend_name:<7} {row:<10} {ty:<5} {share:6.3f}")


if __name__ == "__main__":
    main()
