"""Conformance cases as plain data for a run inside the browser, and the runner that executes them there.

Native side: ``job_of(case)`` turns a conformance case (run by ``harness.run_case``,
``control_cases.run_preset_case`` or ``memory_cases.run_pool_case``) into a JSON-able dict: the
program as bytecode built for the handles a fresh backend hands out (2, 3, ...: buffers, then host
pools), the buffers, the pools, the launch shape, preset registers and budget, what the case needs,
and the op whose tolerance the comparison uses. ``encode_jobs`` / ``decode_results`` carry them
as base64 JSON (NaN and infinities included).

Browser side (standard library and atlas_web only: the test executes this file's source inside
Pyodide): ``run_jobs(new_backend, encoded)`` runs every job on a fresh backend from
``new_backend()`` (closed afterwards) through ``execute_async`` and returns what the native
harness compares: the output bytes, the trap, the 96 resonance sums, the backend's tolerance,
and for a case the backend cannot run whether it raised UnsupportedOperation.
"""

from __future__ import annotations

import base64
import enum
import json
from typing import Any

__all__ = ["job_of", "encode_jobs", "decode_results", "run_jobs", "FIRST_HANDLE"]

#: the first handle a fresh backend hands out (the next allocations get the following ones)
FIRST_HANDLE = 2


def _b64(data: bytes) -> str:
    return base64.b64encode(bytes(data)).decode("ascii")


def _op_of(op: Any) -> list:
    """How a case's ``op`` travels: an enum member by class and name, else an instruction name."""
    if isinstance(op, enum.Enum):
        return ["enum", type(op).__name__, op.name]
    name = getattr(getattr(op, "INFO", None), "name", None)
    return ["name", name if name is not None else str(op)]


def job_of(case: Any) -> dict:
    """The job of ``case``, its program built for the handles of a fresh backend."""
    handles = list(range(FIRST_HANDLE, FIRST_HANDLE + len(case.buffers) + len(getattr(case, "pools", ()))))
    presets = getattr(case, "presets", None)
    ty = case.ty
    operation = getattr(case, "operation", None)
    return {
        "name": case.name,
        "program": _b64(case.program(handles).to_bytes()),
        "handles": handles,
        "buffers": [{"data": _b64(buf.data), "output": buf.output} for buf in case.buffers],
        "pools": list(getattr(case, "pools", ())),
        "grid": list(case.config.grid), "block": list(case.config.block), "shared": case.config.shared_memory,
        "presets": None if presets is None else
        [[reg.index, preset_ty.name, value] for reg, (preset_ty, value) in presets(handles).items()],
        "budget": getattr(case, "budget", None),
        "needs": [[name, need_ty.name if need_ty is not None else None] for name, need_ty in case.needs],
        "operation": None if operation is None else _op_of(operation),
        "op": _op_of(case.op),
        "ty": ty.name if ty is not None else None,
    }


def encode_jobs(jobs: list[dict]) -> str:
    return base64.b64encode(json.dumps(jobs).encode()).decode("ascii")


def decode_results(text: str) -> list[dict]:
    """The results ``run_jobs`` returned, with output bytes decoded."""
    results = json.loads(base64.b64decode(text))
    for result in results:
        result["outputs"] = [base64.b64decode(out) for out in result["outputs"]]
        if result["trap"] is not None:
            result["trap"] = tuple(result["trap"])
    return results


# ---- the browser side --------------------------------------------------------------------------------

def _resolve_op(encoded: list) -> Any:
    from atlas_web.isa import enums
    return getattr(getattr(enums, encoded[1]), encoded[2]) if encoded[0] == "enum" else encoded[1]


async def _run_job(backend: Any, job: dict) -> dict:
    from atlas_web import AtlasTrap, LaunchConfig, Program, UnsupportedOperation
    from atlas_web.isa import Register, Type
    from atlas_web.launch import ExecutionParams

    ty = Type[job["ty"]] if job["ty"] else None
    supported = all(backend.supports(name, Type[t] if t else None) for name, t in job["needs"])
    if job["operation"] is not None and hasattr(backend, "supports_operation"):
        supported = supported and bool(backend.supports_operation(_resolve_op(job["operation"]), ty))
    result: dict[str, Any] = {"name": job["name"], "supported": supported, "unsupported_raised": False,
                              "trap": None, "outputs": [], "resonance": None, "tolerance": 0.0, "error": None}
    sizes = [len(base64.b64decode(buf["data"])) for buf in job["buffers"]]
    try:
        handles = []
        for buf, size in zip(job["buffers"], sizes):
            handle = int(backend.allocate_buffer(max(size, 1)))
            backend.copy_to_buffer(handle, base64.b64decode(buf["data"]))
            handles.append(handle)
        pools = [int(backend.allocate_pool(size)) for size in job["pools"]]
        if handles + pools != job["handles"]:
            raise AssertionError(f"the backend handed out handles {handles + pools}, the program expects "
                                 f"{job['handles']}")
        presets = {Register(index): (Type[name], value) for index, name, value in job["presets"] or ()}
        config = LaunchConfig(grid=tuple(job["grid"]), block=tuple(job["block"]), shared_memory=job["shared"])
        try:
            await backend.execute_async(Program.from_bytes(base64.b64decode(job["program"])),
                                        ExecutionParams(config, registers=presets, budget=job["budget"]))
        except AtlasTrap as trap:
            result["trap"] = [int(trap.code), trap.instruction_index, trap.lane]
            result["message"] = str(trap)
        except UnsupportedOperation:
            result["unsupported_raised"] = True
            return result
        result["outputs"] = [_b64(bytes(backend.copy_from_buffer(h))[:size])
                             for h, buf, size in zip(handles, job["buffers"], sizes) if buf["output"]]
        result["resonance"] = list(backend.resonance_accumulator())
        if ty is not None and ty.is_float():
            result["tolerance"] = float(backend.ulp_tolerance(_resolve_op(job["op"]), ty))
    except Exception as exc:  # any other error is a finding: report it with the case
        result["error"] = f"{type(exc).__name__}: {exc}"
    return result


async def run_jobs(new_backend: Any, encoded: str) -> str:
    """Run the jobs of ``encode_jobs`` in order, each on a fresh backend ``new_backend()`` that is closed
    afterwards; the results as base64 JSON."""
    results = []
    for job in json.loads(base64.b64decode(encoded)):
        backend = new_backend()
        try:
            results.append(await _run_job(backend, job))
        finally:
            backend.close()
    return base64.b64encode(json.dumps(results).encode()).decode("ascii")
