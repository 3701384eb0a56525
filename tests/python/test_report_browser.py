"""The HTML pages in a real browser (headless Chromium at 1280 × 800): a comparison page from
``ratelab run -c ... -c ...``, a single run's page (``--report``), the demo page and the
leaderboard. Each loads without a console message, every image decodes, nothing scrolls
sideways, a header click sorts its table, and a screenshot is kept (path printed).

Skipped with a message when no Chromium is installed (Debian: ``apt-get install chromium``).
"""

from __future__ import annotations

import re
import shutil

import pytest
from browser import assert_sorted, check_page, chromium


@pytest.fixture(autouse=True)
def _needs_browser():
    chromium()


def test_comparison_page_of_a_run(core, cli, tmp_path):
    out = tmp_path / "run"
    r = cli("run", "rmcat-5.1", "-c", "gcc", "-c", "oracle", "-c", "nada", "-c", "scream", "--set", "duration_s=10",
            "--no-packets", "--out", str(out))
    assert r.returncode == 0, r.stderr
    page = out / "report.html"
    html = page.read_text()
    # The Pareto plot is the page's first figure; the overview table has a row per controller.
    assert html.index("Pareto plot") < html.index("<table")
    probe = check_page(page, tmp_path / "shots")
    assert probe["images"] == 2  # the Pareto plot and the small multiples (one run each: no CDF)
    assert probe["tables"] == [{"id": "overview", "width": probe["tables"][0]["width"], "rows": 4}]
    assert_sorted(probe)
    # every run has its own page, linked from the table
    for name in ("gcc", "oracle", "nada", "scream"):
        assert f'href="{name}/report.html"' in html
    run_probe = check_page(out / "nada" / "report.html", tmp_path / "shots")
    assert run_probe["images"] == 1


def test_single_run_page(core, cli, tmp_path):
    page = tmp_path / "pages" / "one.html"
    r = cli("run", "rmcat-5.6", "--set", "duration_s=10", "--no-packets", "--out", str(tmp_path / "run"),
            "--report", str(page))
    assert r.returncode == 0, r.stderr
    assert f"report:  {page}" in r.stdout
    assert not (tmp_path / "run" / "report.html").exists()
    html = page.read_text()
    assert "<h2>Flows</h2>" in html and "<td class=\"l\">media</td>" in html and "<td class=\"l\">tcp</td>" in html
    probe = check_page(page, tmp_path / "shots")
    assert probe["images"] == 1


def test_demo_page(core, cli, tmp_path):
    out = tmp_path / "demo"
    r = cli("demo", "-c", "gcc", "-c", "oracle", "-c", "nada", "--set", "duration_s=5", "--no-packets", "--out", str(out))
    assert r.returncode == 0, r.stderr
    probe = check_page(out / "report.html", tmp_path / "shots")
    # Pareto plot, CDFs, and per scenario the small multiples
    from ratelab.cli.commands import DEMO_SCENARIOS

    assert probe["images"] == 2 + len(DEMO_SCENARIOS)
    assert [t["id"] for t in probe["tables"]] == ["overview"] and probe["tables"][0]["rows"] == 3
    assert_sorted(probe)
    assert probe["details"] == len(DEMO_SCENARIOS)  # every flow of every run, per scenario


def test_leaderboard_page(tmp_path, core, cli):
    traces = tmp_path / "traces"
    traces.mkdir()
    from ratelab.scenario import TRACE_DIR

    names = ("opennetlab-4G_700kbps.csv", "pensieve-trace_7190_http---www.yahoo.com.csv", "opennetlab-WIRED_900kbs.csv")
    for name in names:
        shutil.copy(TRACE_DIR / name, traces / name)
    ctrl = ["gcc", "oracle", "nada", "scream"]
    r = cli("leaderboard", "--traces", str(traces), *(a for c in ctrl for a in ("-c", c)), "--seeds", "2",
            "--duration", "10", "--out", str(tmp_path / "res"), "-q", "-j", "2")
    assert r.returncode == 0, r.stderr
    page = tmp_path / "res" / "leaderboard" / "leaderboard.html"
    html = page.read_text()
    assert not re.search(r"<script[^>]*\bsrc=", html)
    probe = check_page(page, tmp_path / "shots", sort_col=3)  # sort by utilization
    assert probe["details"] == 3  # one drill-down per trace
    # Pareto plot (all traces, 4G, wired, fixed broadband), CDFs, small multiples per trace, and the
    # against-the-oracle Pareto panels (one figure; the campaign has oracle runs)
    assert probe["images"] == 2 + 3 + 1
    assert probe["tables"][0]["id"] == "ranking" and probe["tables"][0]["rows"] == len(ctrl)
    assert_sorted(probe)
    assert "Bars span the lowest to the highest per-seed mean" in html
    assert "<h2>Against the oracle</h2>" in html and 'id="tradeoff-all"' in html


def test_the_probe_catches_what_it_checks(tmp_path):
    """The harness itself: a page that scrolls sideways, holds a broken image or throws fails."""
    from ratelab.report.page import document

    def page(name: str, body: str):
        p = tmp_path / f"{name}.html"
        p.write_text(document(name, [body]))
        return p

    with pytest.raises(AssertionError, match="scrolls sideways"):
        check_page(page("wide", '<div style="width: 1600px">wide</div><img alt="x" src="data:image/png;base64,'
                                + _PIXEL + '">'), tmp_path / "shots")
    with pytest.raises(AssertionError, match="image failed: broken"):
        check_page(page("broken", '<img alt="broken" src="data:image/png;base64,AAAA">'), tmp_path / "shots")
    with pytest.raises(AssertionError, match="undefinedCall"):
        check_page(page("throws", '<img alt="x" src="data:image/png;base64,' + _PIXEL + '"><script>undefinedCall();</script>'),
                   tmp_path / "shots")
    ok = check_page(page("fine", '<img alt="x" src="data:image/png;base64,' + _PIXEL + '">'), tmp_path / "shots")
    assert ok["images"] == ok["decoded"] == 1


#: A 1 × 1 PNG.
_PIXEL = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
