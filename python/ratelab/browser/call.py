"""The Python side of the call page (``call.js``): set up each flow's two peer connections,
connect them through the emulator, prove that they did, and collect getStats samples."""

from __future__ import annotations

import time
from importlib import resources
from typing import Any

from ratelab.errors import InputError

ORIGIN = "https://ratelab.invalid"
PAGE = "<!doctype html><html><head><title>ratelab call</title></head><body></body></html>"


class BypassError(InputError):
    """The selected candidate pair does not go through the emulator."""

    def __init__(self, message: str):
        super().__init__("browser", "", "media bypassed the emulator: " + message)


def host_candidate(cands: list[dict[str, Any]], who: str) -> dict[str, Any]:
    """The UDP IPv4 host candidate a route is made of (loopback first when there is one)."""
    v4 = [c for c in cands if c.get("protocol") == "udp" and c.get("type") == "host" and str(c.get("ip", "")).count(".") == 3]
    v4.sort(key=lambda c: not str(c["ip"]).startswith("127."))
    if not v4:
        got = ", ".join(f"{c.get('ip')}:{c.get('port')}" for c in cands) or "none"
        raise InputError("browser", "", f"the {who} gathered no IPv4 UDP host candidate (got: {got}); "
                         "a call needs an IPv4 interface (or loopback with --allow-loopback-in-peer-connection)")
    return v4[0]


def check_through(selected: dict[str, Any], emulator: tuple[str, int]) -> None:
    """Both PCs' selected pairs must have the emulator's address as their remote candidate (the
    sender talks to it; the receiver learnt it as the sender's peer-reflexive address)."""
    ip, port = emulator
    for who in ("sender", "receiver"):
        pair = selected.get(who)
        if not pair:
            raise BypassError(f"the {who} has no selected candidate pair")
        r = pair["remote"]
        # Chromium hides the address of a peer-reflexive remote candidate: its port must match.
        rip = r.get("ip") or (ip if r.get("type") == "prflx" else None)
        if (str(rip), int(r.get("port") or 0)) != (ip, port):
            raise BypassError(f"the {who}'s selected pair goes to {r.get('ip')}:{r.get('port')} ({r.get('type')}), "
                              f"not to the emulator at {ip}:{port}")


class Call:
    """One page holding every flow's sender and receiver."""

    def __init__(self, browser):
        self.page = browser.new_page()
        # Served at an https URL (by Playwright, nothing leaves the host): a secure context, which
        # getUserMedia (the y4m source) needs and about:blank is not.
        self.page.route(ORIGIN + "/**", lambda route: route.fulfill(status=200, content_type="text/html", body=PAGE))
        self.page.goto(ORIGIN + "/call.html")
        js = resources.files("ratelab.browser").joinpath("call.js").read_text(encoding="utf-8")
        self.page.add_script_tag(content=js)

    def setup(self, cfg: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
        try:
            return self.page.evaluate("cfg => window.ratelab.setup(cfg)", cfg)
        except Exception as exc:  # noqa: BLE001 - a JS error (e.g. an unknown codec) is bad input
            msg = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            if "codec" in msg:
                raise InputError("browser", "codec", msg.split("Error: ", 1)[-1]) from None
            raise

    def connect(self, flow: int, ip: str, port: int) -> None:
        self.page.evaluate("([id, ip, port]) => window.ratelab.connect(id, ip, port)", [flow, ip, port])

    def wait_connected(self, flow: int, timeout_s: float) -> None:
        end = time.monotonic() + timeout_s
        st: dict[str, str] = {}
        while time.monotonic() < end:
            st = self.page.evaluate("id => window.ratelab.state(id)", flow)
            if st["sender"] == "connected" and st["receiver"] == "connected":
                return
            if "failed" in st.values():
                break
            time.sleep(0.05)
        raise InputError("browser", "", f"flow {flow} did not connect through the emulator within {timeout_s:g} s "
                         f"(sender {st.get('sender')}, receiver {st.get('receiver')})")

    def selected(self, flow: int) -> dict[str, Any]:
        return self.page.evaluate("id => window.ratelab.selected(id)", flow)

    def start_sampling(self, interval_ms: float) -> None:
        self.page.evaluate("ms => window.ratelab.startSampling(ms)", interval_ms)

    def drain(self) -> list[dict[str, Any]]:
        return self.page.evaluate("() => window.ratelab.drain()")

    def finish(self, flow: int) -> dict[str, Any] | None:
        return self.page.evaluate("id => window.ratelab.finish(id)", flow)

    def close(self) -> None:
        try:
            self.page.evaluate("() => window.ratelab.close()")
        except Exception:  # noqa: BLE001 - the page may be gone (crash, Ctrl-C)
            pass
