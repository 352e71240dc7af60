"""The KernelBackend transformer generates the NumPy model's tokens on every backend (greedy; the gap
between the two largest logits is checked to exceed the backends' accuracy, so a tie cannot decide)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from atlas_web import LaunchConfig, Program
from atlas_web.errors import ArrayError
from atlas_web.kernels import KernelBackend
from atlas_web.kernels.transformer import Transformer, TransformerConfig, init_weights
from atlas_web.registry import get_backend

from .numpy_transformer import NumpyTransformer

CONFIG = TransformerConfig(vocab=300, d_model=64, layers=2, heads=4, kv_heads=2, intermediate=128, max_seq=16)
PROMPT, NEW = [5, 17], 4


@pytest.fixture(scope="module")
def expected():
    cpu = get_backend("cpu")
    try:
        weights = {k: v.to_host() for k, v in init_weights(CONFIG, 3, cpu).items()}
    finally:
        cpu.close()
    model = NumpyTransformer(CONFIG, weights)
    tokens, gaps = model.generate(PROMPT, NEW)
    return weights, tokens, gaps, model.logits(PROMPT + tokens)


def test_tokens_equal_numpys_on_every_backend(device, expected):
    weights, tokens, gaps, logits = expected
    assert min(gaps) > 1e-3  # logits agree to ~1e-5 below: no tie can flip a token
    drawn = init_weights(CONFIG, 3, device)
    for name, w in weights.items():  # the same bits drawn on every backend
        assert drawn[name].to_host().tobytes() == w.tobytes(), name
    model = Transformer(KernelBackend(device), CONFIG, drawn)
    assert model.generate(PROMPT, NEW) == tokens
    model.reset()
    for pos, token in enumerate(PROMPT + tokens):
        np.testing.assert_allclose(model.step(token).to_host(), logits[pos], rtol=1e-4, atol=1e-4)


#: positions the compile-count test decodes: two that compile, then enough that a program per position shows
#: (all 16 of max_seq, after clearing the program cache, took 37 s on lavapipe, composed)
COUNTED_POSITIONS = 6
_FRESH = itertools.count(0x5EED)


def test_decoding_compiles_no_program_per_position(kb, expected):
    """The position reaches RoPE, the cache and Attention as launch registers: once the first two positions
    compiled every program they need (the second runs each operation the first ran; earlier tests may have
    compiled them already), the next positions compile nothing (counted by the device's compile pipeline),
    and the logits are still NumPy's; a program not run before is counted (the counter is live)."""
    weights, _tokens, _gaps, _logits = expected
    tokens = [(7 * i + 5) % CONFIG.vocab for i in range(COUNTED_POSITIONS)]
    reference = NumpyTransformer(CONFIG, weights).logits(tokens)
    model = Transformer(kb, CONFIG, weights)
    compiled = kb.device._pipeline.programs
    for pos in (0, 1):
        model.step(tokens[pos])
    warm = compiled.misses
    for pos in range(2, COUNTED_POSITIONS):
        logits = model.step(tokens[pos])
    assert compiled.misses == warm
    np.testing.assert_allclose(logits.to_host(), reference[-1], rtol=1e-4, atol=1e-4)
    kb.device.execute_program(Program.from_text(f"mov_imm.u32 r1, {next(_FRESH)}\nexit"), LaunchConfig())
    assert compiled.misses == warm + 1


def test_step_errors(device):
    model = Transformer(KernelBackend(device), CONFIG, init_weights(CONFIG, 3, device))
    with pytest.raises(ArrayError, match="token 300 is outside the vocabulary"):
        model.step(300)
    with pytest.raises(ArrayError, match="weight 'embedding' is missing"):
        Transformer(KernelBackend(device), CONFIG, {})


def test_jit_model_gives_the_same_tokens(device, expected):
    from atlas_web.kernels.transformer_jit import JitTransformer
    weights, tokens, gaps, logits = expected
    model = JitTransformer(CONFIG, init_weights(CONFIG, 3, device), device)
    assert model.generate(PROMPT, NEW) == tokens
    sequence = PROMPT + tokens
    np.testing.assert_allclose(model.logits(sequence).to_host()[0], logits[-1], rtol=1e-4, atol=1e-4)
    with pytest.raises(ArrayError, match="token 300 is outside"):
        model.logits([300])
