"""The system Chromium, driven headless through Playwright (its Python package, with the
installed browser: nothing is downloaded at run time).

The flags make a WebRTC call between two peer connections of one page work on this host with
no camera and no user: fake media and auto-granted permissions, host candidates with their IP
addresses (no mDNS names: the emulator's routes are made of them), no timer throttling of the
headless page, and the user's field trials.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ratelab.errors import InputError, one_line

DEFAULT_PATH = "/usr/bin/chromium"
ENV = "RATELAB_CHROMIUM"

#: Flags every call gets (the y4m source and field trials are added per run).
BASE_FLAGS = (
    # Host candidates as IP addresses, not mDNS names (which the emulator could not route).
    "--disable-features=WebRtcHideLocalIpsWithMdns",
    # Loopback candidates too, for hosts whose only interface is lo.
    "--allow-loopback-in-peer-connection",
    "--use-fake-ui-for-media-stream",
    "--use-fake-device-for-media-stream",
    "--autoplay-policy=no-user-gesture-required",
    # A headless page counts as hidden: its timers (frame drawing, getStats) must not be throttled.
    "--disable-background-timer-throttling",
    "--disable-renderer-backgrounding",
    "--disable-backgrounding-occluded-windows",
    "--no-first-run",
    "--no-default-browser-check",
)


def executable() -> Path:
    """The browser to run: ``$RATELAB_CHROMIUM`` or ``/usr/bin/chromium``; one line saying how to
    get it when it is not there."""
    path = os.environ.get(ENV) or DEFAULT_PATH
    p = Path(path)
    if not p.is_file() or not os.access(p, os.X_OK):
        found = shutil.which(path) if os.sep not in path else None
        if found:
            return Path(found)
        raise InputError(ENV if os.environ.get(ENV) else "chromium", "",
                         f"no browser at {path}; install it with `apt-get install chromium` "
                         f"(or point {ENV} at a Chromium binary)")
    return p


def version(path: Path) -> str:
    """``Chromium 156.0.8078.108 ...`` as the binary prints it (empty when it cannot say)."""
    try:
        out = subprocess.run([str(path), "--version"], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return one_line(out.stdout)


def field_trials_flag(trials: dict[str, str] | str | None) -> list[str]:
    """``--force-fieldtrials=A/B/C/D/`` from ``{"A": "B", "C": "D"}`` (or the string as given)."""
    if not trials:
        return []
    if isinstance(trials, str):
        text = trials if trials.endswith("/") else trials + "/"
    else:
        for k, v in trials.items():
            if "/" in str(k) or "/" in str(v):
                raise InputError("browser", "field_trials", f"'/' in field trial {k}={v} (it separates the trials)")
        text = "".join(f"{k}/{v}/" for k, v in trials.items())
    return [f"--force-fieldtrials={text}"]


@dataclass
class Browser:
    """A launched headless Chromium and the Playwright session that drives it."""

    path: Path
    version: str
    flags: list[str]
    _pw: Any = field(repr=False, default=None)
    browser: Any = field(repr=False, default=None)

    def new_page(self):
        return self.browser.new_page()

    def close(self) -> None:
        """Close the browser and Playwright; safe to call twice, or after a crash or Ctrl-C (when
        the driver may already be gone)."""
        b, pw = self.browser, self._pw
        self.browser = self._pw = None
        for closer in ((b.close if b is not None else None), (pw.stop if pw is not None else None)):
            if closer is None:
                continue
            try:
                closer()
            except Exception:  # noqa: BLE001 - already closed, crashed, or its driver was interrupted
                pass


def playwright_module():
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        raise InputError("chromium", "", "the browser contender needs Playwright for Python: "
                         "`pip install 'ratelab[browser]'` (or `pip install playwright`; no `playwright install` needed)") from None
    return sync_playwright


def launch(extra_flags: list[str] | None = None) -> Browser:
    """Start the system Chromium headless with :data:`BASE_FLAGS` and ``extra_flags``."""
    path = executable()
    sync_playwright = playwright_module()
    flags = list(BASE_FLAGS) + list(extra_flags or [])
    pw = sync_playwright().start()
    try:
        b = pw.chromium.launch(executable_path=str(path), headless=True, args=flags)
    except Exception as exc:  # noqa: BLE001 - Playwright's launch errors are many pages long
        try:
            pw.stop()
        except Exception:  # noqa: BLE001
            pass
        raise InputError(str(path), "", f"Chromium did not start: {one_line(str(exc), 300)}") from None
    ver = version(path) or f"Chromium {b.version}"
    return Browser(path=path, version=ver, flags=flags, _pw=pw, browser=b)
