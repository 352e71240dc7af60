"""The transformer example in the demo page (Chromium, the page's worker: Pyodide and WasmBackend on V8):
"Generate" gives the tokens the same generation gives natively on wasm (the same code: webdemo.transformer;
natively the tokens equal the NumPy model's, tests/test_webdemo_controller.py and tests/kernels), and a
tokens/s figure. Every wait is bounded."""

from __future__ import annotations

import json

from webdemo.transformer import DEMO_PROMPT, TransformerDemo

NEW_TOKENS = 6


def test_generate_in_the_page_gives_the_native_tokens(demo):
    page, log = demo
    page.wait_for_selector("#backend-status[data-state=probed]", timeout=180_000)
    chosen, errors = page.input_value("#backend"), len(log.errors)
    try:
        _generate_and_compare(page)
    finally:
        page.select_option("#backend", chosen)   # the page is shared: leave the picker as it was
    assert log.errors[errors:] == []   # nothing on the console (the page's other tests check it too)


def _generate_and_compare(page):
    page.select_option("#backend", "wasm")
    page.fill("#transformer-count", str(NEW_TOKENS))
    result = page.locator("#transformer-result")
    runs = int(result.get_attribute("data-runs") or 0)
    page.click("#transformer-run")
    page.wait_for_function(f"document.getElementById('transformer-result').dataset.runs === '{runs + 1}'",
                           timeout=400_000)
    assert result.get_attribute("data-state") == "done", result.inner_text()
    assert result.get_attribute("data-backend") == "wasm"
    assert float(result.get_attribute("data-tokens-per-second")) > 0
    page_tokens = json.loads(page.locator("#transformer-tokens").get_attribute("data-tokens"))

    native = TransformerDemo()   # the page's model natively (synchronous: Playwright's loop runs on this thread)
    try:
        tokens = native.model("wasm")[0].generate(list(DEMO_PROMPT), NEW_TOKENS)
    finally:
        native.close()
    assert page_tokens == tokens and len(page_tokens) == NEW_TOKENS

    page.fill("#transformer-count", "63")   # past max_seq: an answer on the page, not an exception
    page.click("#transformer-run")
    page.wait_for_function(f"document.getElementById('transformer-result').dataset.runs === '{runs + 2}'",
                           timeout=60_000)
    assert result.get_attribute("data-state") == "input error"
    assert "not between 1 and 62" in result.inner_text()
