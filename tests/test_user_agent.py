"""atlas_web.user_agent: the browser named from its user agent, as the browser backends describe their engine."""

from __future__ import annotations

from atlas_web.user_agent import browser_name


def test_the_browser_and_its_major_version_come_from_the_user_agent():
    chrome = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/140.0.7339.80 Safari/537.36"
    assert browser_name(chrome) == "Chrome 140"
    assert browser_name(chrome.replace("Chrome/", "HeadlessChrome/")) == "HeadlessChrome 140"
    assert browser_name("Mozilla/5.0 (X11; Linux x86_64; rv:131.0) Gecko/20100101 Firefox/131.0") == "Firefox 131"


def test_an_unrecognised_or_missing_user_agent_is_shown_as_it_is():
    assert browser_name("Mozilla/5.0 SomethingNew/3") == "Mozilla/5.0 SomethingNew/3"
    assert browser_name("") == "unknown browser"
