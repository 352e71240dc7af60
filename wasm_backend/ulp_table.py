"""Measured ulp errors of the wasm backend against the reference (generated; do not edit by hand).

Written by ``python -m wasm_backend.measure_ulp``: (operation key, type name) -> the largest error in
units in the last place seen over its inputs. Operations absent here were measured bit-exact.
"""

MEASURED_ULPS: dict[tuple[str, str], float] = {}
