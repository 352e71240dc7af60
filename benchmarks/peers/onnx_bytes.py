"""The few protobuf encodings the peers benchmarks need to write their one-node ONNX models by hand (no onnx
package): varints and fields. Standard library only; every function returns new bytes."""

from __future__ import annotations

__all__ = ["varint", "field"]


def varint(value: int) -> bytes:
    """``value`` (>= 0) as a protobuf base-128 varint."""
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def field(number: int, payload: bytes | int | str) -> bytes:
    """One protobuf field: a varint for an int, length-delimited for bytes and str (UTF-8)."""
    if isinstance(payload, int):
        return varint(number << 3) + varint(payload)
    data = payload.encode() if isinstance(payload, str) else payload
    return varint(number << 3 | 2) + varint(len(data)) + data
