"""The leaderboard: ranking and Pareto helpers, and the HTML page in headless Chromium."""

from __future__ import annotations

import json
import math
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from ratelab.leaderboard import _ranks, pareto_front, ranking


def test_ranks_average_ties_and_put_missing_last():
    assert _ranks([0.5, 0.9, 0.9, None], higher_better=True) == [3.0, 1.5, 1.5, 4.0]
    assert _ranks([100.0, 50.0, math.nan], higher_better=False) == [2.0, 1.0, 3.0]


def test_ranking_by_mean_rank_over_traces():
    m = [
        # trace A: x better in utilization and delay, same freezes -> x ranks (1+1+1.5)/3, y (2+2+1.5)/3
        {"controller": "x", "scenario": "A", "utilization": 0.9, "owd_ms_p95": 80, "freeze_ratio": 0.0, "throughput_kbps": 900, "loss_rate": 0},
        {"controller": "y", "scenario": "A", "utilization": 0.8, "owd_ms_p95": 90, "freeze_ratio": 0.0, "throughput_kbps": 800, "loss_rate": 0},
        # trace B: y better everywhere
        {"controller": "x", "scenario": "B", "utilization": 0.5, "owd_ms_p95": 300, "freeze_ratio": 0.1, "throughput_kbps": 500, "loss_rate": 0},
        {"controller": "y", "scenario": "B", "utilization": 0.7, "owd_ms_p95": 100, "freeze_ratio": 0.0, "throughput_kbps": 700, "loss_rate": 0},
    ]
    r = ranking(m)
    assert [x["controller"] for x in r] == ["y", "x"]
    assert r[0]["score"] == pytest.approx(((2 + 2 + 1.5) / 3 + 1) / 2)
    assert r[1]["score"] == pytest.approx(((1 + 1 + 1.5) / 3 + 2) / 2)
    assert r[0]["utilization"] == pytest.approx(0.75) and r[0]["owd_ms_p95"] == pytest.approx(95)


def test_pareto_front():
    pts = {"fast-low": (50, 0.6), "slow-high": (300, 0.95), "dominated": (310, 0.9), "best-mid": (100, 0.9)}
    assert pareto_front(pts) == {"fast-low", "slow-high", "best-mid"}


PROBE_HEAD = """<script>window.__errors = [];
window.addEventListener('error', function (e) { window.__errors.push(String(e.message || e.type)); }, true);</script>"""
PROBE_TAIL = """<script>window.addEventListener('load', function () {
  var imgs = Array.prototype.slice.call(document.images);
  var plots = imgs.filter(function (i) { return i.complete && i.naturalWidth > 100 && i.naturalHeight > 100; });
  var out = {images: imgs.length, plots: plots.length, errors: window.__errors,
             ranking_rows: document.querySelectorAll('#ranking tr').length,
             details: document.querySelectorAll('details').length};
  document.body.setAttribute('data-probe', JSON.stringify(out));
});</script>"""


def _chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome", "chrome"):
        p = shutil.which(name)
        if p:
            return p
    return None


def _headless(browser: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                           "--enable-logging=stderr", "--v=0", "--virtual-time-budget=15000", *args],
                          capture_output=True, text=True, timeout=180)


def test_leaderboard_page_in_headless_chromium(tmp_path, core, cli):
    browser = _chromium()
    if browser is None:
        pytest.skip("no Chromium found: install Debian's `chromium` package (.ci/run installs it) to run the browser test")
    traces = tmp_path / "traces"
    traces.mkdir()
    from ratelab.scenario import TRACE_DIR

    for name in ("opennetlab-4G_700kbps.csv", "pensieve-trace_7190_http---www.yahoo.com.csv", "opennetlab-WIRED_900kbs.csv"):
        shutil.copy(TRACE_DIR / name, traces / name)
    r = cli("leaderboard", "--traces", str(traces), "--seeds", "2", "--duration", "15", "--out", str(tmp_path / "res"), "-q", "-j", "2")
    assert r.returncode == 0, r.stderr
    page = tmp_path / "res" / "leaderboard" / "leaderboard.html"
    html = page.read_text()
    # self-contained: no external references, no scripts of its own
    assert not re.search(r"""(src|href)=["'](https?:|//|file:)""", html)
    assert "<script" not in html
    controllers = [c["name"] for c in core.controllers() if c["name"] not in ("fixed", "onnx")]

    # 1. the page itself loads without a single console message (errors, failed loads)
    shot = tmp_path / "page.png"
    res = _headless(browser, "--window-size=1200,1800", f"--screenshot={shot}", page.as_uri())
    console = [ln for ln in res.stderr.splitlines() if "CONSOLE" in ln]
    assert shot.is_file() and shot.stat().st_size > 10_000, res.stderr[-2000:]
    assert console == [], console

    # 2. the same page with a probe: every plot decoded, tables and drill-downs present
    probed = tmp_path / "probed.html"
    probed.write_text(html.replace("<head>", "<head>" + PROBE_HEAD, 1).replace("</body>", PROBE_TAIL + "</body>", 1))
    res = _headless(browser, "--dump-dom", probed.as_uri())
    m = re.search(r"data-probe=\"([^\"]*)\"", res.stdout)
    assert m, res.stderr[-2000:]
    probe = json.loads(m.group(1).replace("&quot;", '"'))
    assert probe["errors"] == []
    assert probe["details"] == 3  # one drill-down per trace
    assert probe["plots"] == probe["images"] == 1 + 3  # Pareto plot + one rate/delay plot per trace
    assert probe["ranking_rows"] == 1 + len(controllers)
