"""How a step's arrays are bound: at their own offsets where the device allows, and which source
reads through which binding (WebGPU forbids two bindings of one buffer where one is writable).
Standard library only."""

from __future__ import annotations

__all__ = ["binding_plan", "shared_sources", "ROLE_BINDINGS"]

#: kernel binding -> the array operand role bound there (3-5: array<u32> views, 7-9: vec4 views)
ROLE_BINDINGS = {3: "dst", 4: "src_a", 5: "src_b", 7: "dst", 8: "src_a", 9: "src_b"}


def binding_plan(operands: dict, nbytes: int, bind_alignment: int) -> tuple[bool, tuple[str, str]]:
    """(whether each array is bound at its own offset, KernelSpec.sources) for ``operands`` (role ->
    (buffer, byte offset)) of ``nbytes`` each. Bound where every offset meets the device's binding
    alignment: the shader then adds no base offset. A source whose binding would alias a writable
    one reads through that binding: only at the same offset when bound, else with run-time offsets
    over whole chunks."""
    if all(byte % bind_alignment == 0 and buffer.size - byte >= 16 for buffer, byte in operands.values()):
        sources = _sources(operands, -(-nbytes // 16) * 16, bound=True)
        if sources is not None:
            return True, sources
    return False, _sources(operands, nbytes, bound=False)


def shared_sources(operands: dict) -> tuple[str, str]:
    """KernelSpec.sources for arrays bound as whole chunks (run-time offsets): a source in the buffer of an
    array placed before it reads through that array's binding."""
    return _sources(operands, 0, bound=False)


def _sources(operands: dict, span: int, bound: bool) -> tuple[str, str] | None:
    placed = [("dst", *operands["dst"])] if "dst" in operands else []
    out = []
    for role, key in (("a", "src_a"), ("b", "src_b")):
        if key not in operands:
            out.append("rw")
            continue
        buffer, byte = operands[key]
        shared = [(name, at) for name, other, at in placed
                  if other is buffer and (not bound or (at < byte + span and byte < at + span))]
        if shared:
            if bound and shared[0][1] != byte:
                return None
            out.append(shared[0][0])
            continue
        writable = "dst" in operands and buffer is operands["dst"][0]
        out.append("rw" if writable else "ro")
        placed.append((role, buffer, byte))
    return out[0], out[1]
