"""Browser tests: the built site in headless Debian Chromium, driven by Playwright."""
