"""webdemo.controller natively: the messages the page's Web Worker answers and posts."""

from __future__ import annotations

import asyncio
import json

import examples
from webdemo import controller, session


def _controller():
    events = []
    ctl = controller.Controller(events.append, session.DemoSession(choices=("auto", "cpu")))
    return ctl, events


def test_first_result_posts_the_examples_and_their_round_trips_as_json():
    ctl, events = _controller()
    ctl.first_result()
    assert [e["event"] for e in events] == ["examples", "checks", "charts"]
    assert [name for name, _ in events[0]["examples"]] == list(examples.EXAMPLE_MODULES)
    assert [row["example"] for row in events[1]["rows"]] == list(examples.EXAMPLE_MODULES)
    assert all(row["ok"] for row in events[1]["rows"])
    json.dumps(events)  # what crosses to the page is plain JSON
    ctl.probe()
    assert [e["name"] for e in events[-1]["entries"]] == ["auto", "cpu"]


def test_run_posts_its_steps_and_answers_with_code_timings_and_charts():
    ctl, events = _controller()
    text = ctl.session.program_text("collatz", 30)
    answer = asyncio.run(ctl.handle("run", {"text": text, "example": "collatz", "size": "30", "backend": "cpu"}))
    assert answer["status"] == "ok" and "first launch" in answer["timing"] and "warm launch" in answer["timing"]
    assert [name for name, _ in answer["charts"]] == ["collatz"]
    steps = [e["text"] for e in events if e["event"] == "progress"]
    assert steps == ["starting cpu", "first launch on cpu", "warm launch on cpu", "reading the outputs"]
    assert answer["outputs"][0][0] == "out"


def test_run_all_posts_each_row_as_it_is_done():
    ctl, events = _controller()
    answer = asyncio.run(ctl.handle("run_all", {"size": 12}))
    rows = [e for e in events if e["event"] == "row"]
    assert answer["rows"] == len(rows) == len(examples.EXAMPLE_MODULES)
    assert [(r["row"]["example"], r["done"], r["total"]) for r in rows] == \
        [(name, k + 1, 5) for k, name in enumerate(examples.EXAMPLE_MODULES)]
    assert all(r["row"]["ok"] and " / " in r["row"]["launch"] for r in rows)


def test_bad_input_and_unknown_actions_are_answers_not_exceptions():
    ctl, _ = _controller()
    assert "size must be a whole number" in asyncio.run(ctl.handle("run_all", {"size": "0"}))["input_error"]
    assert "size must be" in asyncio.run(ctl.handle("program_text", {"example": "collatz", "size": "x"}))["input_error"]
    assert "unknown action 'nope'" in asyncio.run(ctl.handle("nope", {}))["internal_error"]
    broken = asyncio.run(ctl.handle("run", {"size": "4"}))  # a request missing its fields is a bug: shown
    assert broken["internal_error"].startswith("internal error: KeyError")


def test_transformer_answers_the_numpy_models_tokens_and_its_speed():
    from atlas_web.kernels.transformer import TransformerConfig, init_weights
    from atlas_web.registry import get_backend
    from tests.kernels.numpy_transformer import NumpyTransformer
    from webdemo.transformer import DEMO_PROMPT, TransformerDemo

    config = TransformerConfig(vocab=300, d_model=64, layers=2, heads=4, kv_heads=2, intermediate=128, max_seq=16)
    events = []
    demo = TransformerDemo(config=config, seed=3)
    ctl = controller.Controller(events.append, session.DemoSession(choices=("auto", "cpu")), demo)
    try:
        answer = asyncio.run(ctl.handle("transformer", {"backend": "auto", "tokens": "5"}))
        with get_backend("cpu") as cpu:
            weights = {k: v.to_host() for k, v in init_weights(config, 3, cpu).items()}
        expected, gaps = NumpyTransformer(config, weights).generate(list(DEMO_PROMPT), 5)
        assert min(gaps) > 1e-3 and answer["tokens"] == expected and answer["backend"] == "cpu"
        assert answer["tokens_per_second"] > 0 and answer["first_seconds"] > 0 and "tokens/s" in answer["message"]
        assert [e["text"] for e in events if e["event"] == "progress"] == ["generating 5 tokens on cpu…"]
        json.dumps(answer)
        assert "between 1 and 14" in asyncio.run(ctl.handle("transformer", {"backend": "cpu", "tokens": "15"}))[
            "input_error"]
        assert "not a whole number" in asyncio.run(ctl.handle("transformer", {"backend": "cpu", "tokens": "x"}))[
            "input_error"]
    finally:
        demo.close()


def test_a_transformer_run_that_fails_is_an_internal_error_not_the_inputs():
    """Only the token count is the user's input: an ArrayError raised by the run itself (here: two generations
    that disagree, a backend bug) is answered as an internal error, not as an input error."""
    from atlas_web.errors import ArrayError
    from webdemo.transformer import TransformerDemo

    class Disagreeing(TransformerDemo):
        async def run(self, backend, new_tokens, prompt=(1, 2, 3)):
            self.check_count(new_tokens, prompt)
            raise ArrayError(f"the transformer on {backend} generated [1] after [2]")

    ctl = controller.Controller(lambda event: None, session.DemoSession(choices=("auto", "cpu")),
                                Disagreeing(factory=lambda name: None))
    answer = asyncio.run(ctl.handle("transformer", {"backend": "cpu", "tokens": "3"}))
    assert "input_error" not in answer and "generated [1] after [2]" in answer["internal_error"]
    assert "not between 1 and 62" in asyncio.run(ctl.handle("transformer", {"backend": "cpu", "tokens": "63"}))[
        "input_error"]
