"""The transformer example (atlas_web/kernels/transformer.py) on one of the page's backends: the model made
once per backend (weights drawn on the device from a fixed seed: the same bits everywhere), then greedy
generation timed. Runs natively and in the page's worker (Pyodide); the tokens are the same on both for
the same backend (tests/web/test_browser_transformer.py) and equal the NumPy model's natively
(tests/kernels/test_transformer.py).

A run's figures: the first generation on a backend (it draws the weights' programs, compiles each
program of a decoding step once: the position is a launch register, not a program per position) and a
warm generation after it; tokens/s is ``new_tokens`` over the warm generation's wall time (the prompt's
steps included). Standard library only.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable

from atlas_web.errors import ArrayError
from atlas_web.kernels import KernelBackend
from atlas_web.kernels.transformer import Transformer, TransformerConfig, init_weights

__all__ = ["DEMO_CONFIG", "DEMO_PROMPT", "DEMO_SEED", "TransformerRun", "TransformerDemo", "max_new_tokens"]

#: the issue's model: 2 layers, d_model 256, 4 heads over 2 KV heads, SwiGLU 512, vocab 1000, 64 positions
DEMO_CONFIG = TransformerConfig()
DEMO_PROMPT = (1, 2, 3)
DEMO_SEED = 7


def max_new_tokens(config: TransformerConfig = DEMO_CONFIG, prompt: tuple[int, ...] = DEMO_PROMPT) -> int:
    """The most tokens a generation after ``prompt`` can add within max_seq positions."""
    return config.max_seq - len(prompt) + 1


@dataclass(frozen=True)
class TransformerRun:
    """One generation: the backend, the new tokens, the first run's and the warm run's seconds."""

    backend: str
    tokens: list[int]
    first_seconds: float
    warm_seconds: float

    @property
    def tokens_per_second(self) -> float:
        return len(self.tokens) / self.warm_seconds if self.warm_seconds > 0 else float("inf")


class TransformerDemo:
    """Models kept per backend name (``factory`` makes a backend by name: the registry's ``get_backend``)."""

    def __init__(self, factory: Callable[[str], Any] | None = None, config: TransformerConfig = DEMO_CONFIG,
                 seed: int = DEMO_SEED) -> None:
        if factory is None:
            from atlas_web.registry import get_backend as factory
        self._factory, self.config, self.seed = factory, config, seed
        self._models: dict[str, Transformer] = {}

    def model(self, backend: str) -> tuple[Transformer, bool]:
        """(the model on ``backend``, whether it was made now). Raises what the factory raises."""
        model = self._models.get(backend)
        if model is not None:
            return model, False
        device = self._factory(backend)
        kb = KernelBackend(device)
        model = self._models[backend] = Transformer(kb, self.config, init_weights(self.config, self.seed, device))
        return model, True

    def check_count(self, new_tokens: int, prompt: tuple[int, ...] = DEMO_PROMPT) -> None:
        """Raise ArrayError unless ``new_tokens`` new tokens after ``prompt`` fit within max_seq positions."""
        limit = max_new_tokens(self.config, prompt)
        if not 1 <= new_tokens <= limit:
            raise ArrayError(f"new tokens: {new_tokens} is not between 1 and {limit} (max_seq "
                             f"{self.config.max_seq}, a prompt of {len(prompt)})")

    async def run(self, backend: str, new_tokens: int, prompt: tuple[int, ...] = DEMO_PROMPT) -> TransformerRun:
        """Generate ``new_tokens`` after ``prompt`` on ``backend``, twice when the model is new (the first
        timed as the cold run). Raises ArrayError for a count past max_seq, and what a launch raises."""
        self.check_count(new_tokens, prompt)
        start = time.perf_counter()
        model, made = self.model(backend)
        tokens = await model.generate_async(list(prompt), new_tokens)
        first = time.perf_counter() - start
        if not made:
            return TransformerRun(backend, tokens, first, first)
        start = time.perf_counter()
        again = await model.generate_async(list(prompt), new_tokens)
        warm = time.perf_counter() - start
        if again != tokens:
            raise ArrayError(f"the transformer on {backend} generated {again} after {tokens}")
        return TransformerRun(backend, tokens, first, warm)

    def close(self) -> None:
        """Close the backends the models run on."""
        for model in self._models.values():
            model.kb.device.close()
        self._models.clear()
