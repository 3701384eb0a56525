"""Headless Chromium for the page tests: load a page at 1280 × 800, screenshot it, and read back
what a probe script measured in the browser (console errors, images decoded, horizontal
overflow, a header click sorting its table).

No CDP client: the probe is injected into a copy of the page and writes its findings as JSON into
a ``data-probe`` attribute, which ``--dump-dom`` prints once the page has loaded.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

WIDTH, HEIGHT = 1280, 800

PROBE_HEAD = """<script>window.__errors = [];
window.addEventListener('error', function (e) {
  var t = e.target;
  window.__errors.push(t && t.tagName === 'IMG' ? 'image failed: ' + t.alt : String(e.message || e.type));
}, true);</script>"""

#: Measures after load; then clicks the header of column ``SORT_COL`` of the first sortable table
#: twice and records that column's order after each click.
PROBE_TAIL = """<script>window.addEventListener('load', function () {
  var imgs = Array.prototype.slice.call(document.images);
  var out = {images: imgs.length,
             decoded: imgs.filter(function (i) { return i.complete && i.naturalWidth > 0 && i.naturalHeight > 0; }).length,
             broken: imgs.filter(function (i) { return !(i.complete && i.naturalWidth > 0); }).map(function (i) { return i.alt; }),
             scrollWidth: document.documentElement.scrollWidth, innerWidth: window.innerWidth,
             tables: [], sortable: document.querySelectorAll('table.sortable').length,
             details: document.querySelectorAll('details').length, external: []};
  document.querySelectorAll('table.overview').forEach(function (t) {
    out.tables.push({id: t.id, width: Math.ceil(t.getBoundingClientRect().right), rows: t.tBodies[0].rows.length});
  });
  document.querySelectorAll('[src],[href]').forEach(function (e) {
    var u = e.getAttribute('src') || e.getAttribute('href');
    if (/^(https?:|\\/\\/|file:)/.test(u)) out.external.push(u);
  });
  var t = document.querySelector('table.sortable');
  if (t) {
    var col = SORT_COL, th = t.tHead.rows[t.tHead.rows.length - 1].cells[col];
    var read = function () { return Array.prototype.map.call(t.tBodies[0].rows, function (r) {
      var c = r.cells[col]; var v = c.getAttribute('data-v'); return v === null ? null : parseFloat(v); }); };
    th.click(); out.sorted_asc = read();
    th.click(); out.sorted_desc = read();
  }
  out.errors = window.__errors;
  document.body.setAttribute('data-probe', JSON.stringify(out));
});</script>"""


def chromium() -> str:
    """The browser's path, or skip the test with how to get one — except under CI (``CI`` set, as
    .ci/run does after installing Chromium), where a missing browser fails instead of hiding."""
    for name in ("chromium", "chromium-browser", "google-chrome", "chrome"):
        p = shutil.which(name)
        if p:
            return p
    why = "no Chromium found: install Debian's `chromium` package (.ci/run installs it) to run the browser tests"
    if os.environ.get("CI"):
        pytest.fail(why, pytrace=False)
    pytest.skip(why)


def _headless(browser: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--hide-scrollbars",
                           "--enable-logging=stderr", "--v=0", "--virtual-time-budget=20000",
                           f"--window-size={WIDTH},{HEIGHT}", *args],
                          capture_output=True, text=True, timeout=180)


def check_page(page: Path, shots: Path, sort_col: int = 1) -> dict:
    """Load ``page`` in headless Chromium at 1280 × 800: it must log nothing to the console, and a
    screenshot is saved under ``shots`` (path printed). Returns the probe's findings, after
    asserting the common ones: no script errors, every image decoded, no horizontal scrolling,
    no external reference."""
    browser = chromium()
    shots.mkdir(parents=True, exist_ok=True)
    shot = shots / f"{page.parent.name}-{page.stem}-1280.png"
    res = _headless(browser, f"--screenshot={shot}", page.as_uri())
    console = [ln for ln in res.stderr.splitlines() if "CONSOLE" in ln]
    assert shot.is_file(), res.stderr[-2000:]
    from PIL import Image

    assert Image.open(shot).size == (WIDTH, HEIGHT)
    print(f"screenshot of {page.name} at {WIDTH} px: {shot}")
    assert console == [], console

    html = page.read_text()
    probed = page.with_name(page.stem + ".probe.html")  # beside the page: same relative paths
    probed.write_text(html.replace("<head>", "<head>" + PROBE_HEAD, 1)
                      .replace("</body>", PROBE_TAIL.replace("SORT_COL", str(sort_col)) + "</body>", 1))
    try:
        res = _headless(browser, "--dump-dom", probed.as_uri())
    finally:
        probed.unlink()
    m = re.search(r"data-probe=\"([^\"]*)\"", res.stdout)
    assert m, res.stderr[-2000:]
    probe = json.loads(m.group(1).replace("&quot;", '"').replace("&amp;", "&"))
    assert probe["errors"] == [], probe["errors"]
    assert probe["images"] > 0 and probe["decoded"] == probe["images"], probe["broken"]
    assert probe["innerWidth"] == WIDTH
    assert probe["scrollWidth"] <= probe["innerWidth"], f"page scrolls sideways: {probe['scrollWidth']} px"
    for t in probe["tables"]:
        assert t["width"] <= WIDTH, t
    assert probe["external"] == []
    return probe


def assert_sorted(probe: dict) -> None:
    """The header click sorted the numbers of its column (missing values last either way)."""
    for key, reverse in (("sorted_asc", False), ("sorted_desc", True)):
        vals = probe[key]
        nums = [v for v in vals if v is not None]
        assert nums == sorted(nums, reverse=reverse), (key, vals)
        assert vals[:len(nums)] == nums, (key, vals)
