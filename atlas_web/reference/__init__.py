"""The reference backend: ``CpuBackend`` ("cpu"), the executable specification of the Atlas ISA (NumPy)."""

from __future__ import annotations

from .backend import CpuBackend

__all__ = ["CpuBackend"]
