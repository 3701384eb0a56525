"""A real browser as a contender: Debian's Chromium, headless, one WebRTC call per media flow
through the link emulator (docs/browser.md)."""

from ratelab.browser.run import BrowserOptions, run_browser

__all__ = ["BrowserOptions", "run_browser"]
