"""How much memory a decoder-only transformer's inference needs (the torchless seed's
``estimate_inference_memory``), and the device facts to compare it with (``DeviceInfo``).

Standard library only.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..backend import Backend
from ..errors import ArrayError

__all__ = ["MemoryEstimate", "estimate_inference_memory", "DeviceInfo", "device_info"]

GIB = 1 << 30


@dataclass(frozen=True)
class MemoryEstimate:
    """Bytes for the weights, the KV cache and one token's activations; ``total_bytes`` their sum."""

    parameters: int
    weight_bytes: int
    kv_cache_bytes: int
    activation_bytes: int

    @property
    def total_bytes(self) -> int:
        return self.weight_bytes + self.kv_cache_bytes + self.activation_bytes

    def total_gb(self) -> float:
        """``total_bytes`` in GiB (2**30 bytes)."""
        return self.total_bytes / GIB


def estimate_inference_memory(hidden: int, intermediate: int, layers: int, vocab: int, heads: int,
                              kv_heads: int, max_seq: int, bytes_per_param: int) -> MemoryEstimate:
    """The memory of a Llama/Mistral-style model (head_dim = hidden / heads, grouped KV heads, SwiGLU MLP,
    RMSNorm, untied embedding and output head) generating up to ``max_seq`` tokens:

    - parameters: embedding and output head ``2 * vocab * hidden``; per layer the projections q and o
      ``2 * hidden**2``, k and v ``2 * hidden * kv_heads * head_dim``, gate/up/down
      ``3 * hidden * intermediate``, two norms ``2 * hidden``; the final norm ``hidden``;
    - KV cache: ``2 * layers * max_seq * kv_heads * head_dim`` values;
    - activations of one decoding step: x, the normed x, q, attention output ``4 * hidden``, k and v
      ``2 * kv_heads * head_dim``, gate and up ``2 * intermediate``, the scores ``heads * max_seq``, the
      logits ``vocab``;

    every value ``bytes_per_param`` bytes. Raises ArrayError for a non-positive size or heads that do not
    divide hidden or kv_heads that do not divide heads."""
    sizes = dict(hidden=hidden, intermediate=intermediate, layers=layers, vocab=vocab, heads=heads,
                 kv_heads=kv_heads, max_seq=max_seq, bytes_per_param=bytes_per_param)
    bad = [f"{k}={v!r}" for k, v in sizes.items() if not isinstance(v, int) or isinstance(v, bool) or v <= 0]
    if bad:
        raise ArrayError(f"estimate_inference_memory: sizes must be positive integers, got {', '.join(bad)}")
    if hidden % heads or heads % kv_heads:
        raise ArrayError(f"estimate_inference_memory: heads {heads} must divide hidden {hidden} and kv_heads "
                         f"{kv_heads} must divide heads")
    kv_dim = kv_heads * (hidden // heads)
    per_layer = 2 * hidden * hidden + 2 * hidden * kv_dim + 3 * hidden * intermediate + 2 * hidden
    parameters = layers * per_layer + 2 * vocab * hidden + hidden
    kv_values = 2 * layers * max_seq * kv_dim
    activations = 4 * hidden + 2 * kv_dim + 2 * intermediate + heads * max_seq + vocab
    return MemoryEstimate(parameters, parameters * bytes_per_param, kv_values * bytes_per_param,
                          activations * bytes_per_param)


@dataclass(frozen=True)
class DeviceInfo:
    """One device as the seed describes it: ``total_memory`` and ``free_memory`` in bytes (None where the
    backend does not say), ``compute_capability`` (a GPU's (major, minor) where known, else None),
    ``unified_memory`` (True where the device computes in the host's memory: a CPU, or a GPU API run on
    the CPU)."""

    index: int
    name: str
    total_memory: int | None
    free_memory: int | None
    compute_capability: tuple[int, int] | None
    unified_memory: bool


def device_info(backend: Backend, index: int = 0) -> DeviceInfo:
    """``DeviceInfo`` from ``backend.device_info()`` (its ``max_memory``, else ``memory_limit``, less
    ``memory_used``); a new object."""
    info = backend.device_info()
    total = info.get("max_memory") or info.get("memory_limit")
    used = info.get("memory_used") or 0
    capability = info.get("compute_capability")
    return DeviceInfo(index, f"{backend.name}: {info.get('device', '')}".rstrip(": "), total,
                      None if total is None else max(total - used, 0),
                      tuple(capability) if capability else None,
                      info.get("device_type") in ("cpu", "software-gpu"))
