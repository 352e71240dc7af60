"""A second load of the demo page with a warm cache (files revalidated, compiled wasm cached) reaches its first
result too; the cold and warm timings go to artifacts/timings.json (measured, not asserted: benchmarks are
not tests)."""

from __future__ import annotations

import json

from .conftest import open_page


def test_a_warm_reload_boots_again_and_reports_its_timings(browser, site_url, demo_page, artifacts):
    cold = demo_page.evaluate("window.atlasWeb.timings")
    page, log = open_page(browser, site_url + "index.html", "window.atlasWeb && window.atlasWeb.ready")
    try:
        warm = page.evaluate("window.atlasWeb.timings")
        rows = page.eval_on_selector_all("#checks-body tr", "rows => rows.map(r => r.dataset.ok)")
    finally:
        page.close()
    (artifacts / "timings.json").write_text(json.dumps({"cold_ms": cold, "warm_ms": warm}, indent=2))
    print(f"page load to first result: cold {cold['firstResult']} ms, warm {warm['firstResult']} ms")
    assert 0 < warm["pyodide"] <= warm["wheels"] <= warm["firstResult"]
    assert rows == ["true"] * 5
    assert log.errors == []
