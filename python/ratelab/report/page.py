"""HTML building blocks shared by the report and the leaderboard: one self-contained page.

A page carries its style sheet, its images (base64 PNG data URIs) and one small inline script
(click a column header to sort a table); it loads nothing else, so it can be mailed or archived
on its own. Tables are sized for a 1280-pixel window: numbers only in the cells, units in the
headers, long detail tables inside ``<details>``.
"""

from __future__ import annotations

import base64
import html
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

CSS = """
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 1.5em auto; max-width: 1180px; color: #222; padding: 0 1em; }
h1 { font-size: 1.6em; margin-bottom: 0.2em; } h2 { margin-top: 1.8em; border-bottom: 1px solid #ccc; } h3 { margin-bottom: 0.3em; }
.meta { color: #666; } table { border-collapse: collapse; margin: 0.8em 0; font-size: 13px; max-width: 100%; }
th, td { border: 1px solid #ddd; padding: 3px 7px; text-align: right; } th { background: #f3f3f3; font-weight: 600; }
td.l, th.l { text-align: left; } tr.run td { border-top: 2px solid #999; }
th.sort { cursor: pointer; user-select: none; } th.sort:hover { background: #e6e6e6; }
th.sort[aria-sort=ascending]::after { content: " \\25B2"; font-size: 9px; }
th.sort[aria-sort=descending]::after { content: " \\25BC"; font-size: 9px; }
td.best { background: #e8f5e9; font-weight: 600; } td.oracle, tr.oracle td { color: #777; }
img { max-width: 100%; border: 1px solid #eee; margin: 0.5em 0; } figure { margin: 0.6em 0; }
figcaption { color: #555; font-size: 12.5px; max-width: 980px; } code { background: #f3f3f3; padding: 0 3px; }
details { margin: 0.5em 0; border: 1px solid #ddd; border-radius: 4px; padding: 0.2em 0.8em; }
summary { cursor: pointer; font-weight: 600; } .wide { overflow-x: auto; }
p.note { color: #555; font-size: 13px; max-width: 980px; }
"""

#: Click a header of a ``table.sortable`` to sort its body by that column (again: reverse).
#: Cells sort by their ``data-v`` number when they have one, else by their text.
SORT_SCRIPT = """
document.querySelectorAll('table.sortable').forEach(function (table) {
  var heads = table.tHead ? table.tHead.rows[table.tHead.rows.length - 1].cells : [];
  Array.prototype.forEach.call(heads, function (th, col) {
    th.classList.add('sort');
    th.title = 'sort by this column';
    th.addEventListener('click', function () {
      var asc = th.getAttribute('aria-sort') !== 'ascending';
      Array.prototype.forEach.call(heads, function (h) { h.removeAttribute('aria-sort'); });
      th.setAttribute('aria-sort', asc ? 'ascending' : 'descending');
      var body = table.tBodies[0], rows = Array.prototype.slice.call(body.rows);
      function key(r) {
        var c = r.cells[col]; if (!c) return [2, 0];
        var v = c.getAttribute('data-v');
        if (v !== null && v !== '') return [0, parseFloat(v)];
        return c.textContent.trim() === '\\u2013' ? [2, 0] : [1, c.textContent.trim().toLowerCase()];
      }
      rows.sort(function (a, b) {
        var ka = key(a), kb = key(b);
        if (ka[0] !== kb[0]) return ka[0] - kb[0];
        var d = ka[1] < kb[1] ? -1 : ka[1] > kb[1] ? 1 : 0;
        return asc ? d : -d;
      });
      rows.forEach(function (r) { body.appendChild(r); });
    });
  });
});
"""


def fmt(v: Any, how: str) -> str:
    """A cell's text: ``–`` for a missing or non-finite value; ``pct`` shows a fraction as
    ``12.3 %``, ``pct0`` as the bare number ``12.3`` (the header carries the unit), ``ms`` a
    delay with one decimal below 10."""
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "–"
    if how == "pct":
        return f"{100 * float(v) + 0.0:.1f} %"  # + 0.0: no "-0.0 %" (the core's empty f64 sum is -0.0)
    if how == "pct0":
        return f"{100 * float(v) + 0.0:.1f}"
    if how == "ms":  # delays: 0.4, 9.5, 120 (a decimal only where it matters)
        return f"{float(v):.1f}" if abs(float(v)) < 10 else f"{float(v):.0f}"
    return how.format(v)


@dataclass
class Column:
    """One column of a sortable table: header (with unit), how a row gives its value, format."""

    title: str
    value: Callable[[Any], Any]
    how: str = "{:.0f}"
    left: bool = False
    #: ``max`` or ``min``: mark the best value of the column (green).
    best: str | None = None
    #: Raw HTML for the cell instead of the formatted value (sorting still uses ``value``).
    cell: Callable[[Any], str] | None = None


def sortable_table(columns: Sequence[Column], rows: Sequence[Any], *, id: str = "", cls: str = "",
                   group_head: str = "", row_class: Callable[[Any], str] | None = None) -> str:
    """A ``<table class="sortable">``: numbers carry ``data-v`` so that they sort as numbers.
    ``group_head`` is an optional first header row (e.g. scenario names spanning columns)."""
    values = [[c.value(r) for c in columns] for r in rows]
    classes_of = [row_class(r) if row_class else "" for r in rows]
    best: dict[int, float] = {}
    for j, c in enumerate(columns):
        # The oracle's row is a reference (it is told the capacity): never "best".
        finite = [v[j] for v, rc in zip(values, classes_of) if _finite(v[j]) and rc != "oracle"]
        if c.best and len(set(finite)) > 1:  # nothing to point out when every row is equal
            best[j] = max(finite) if c.best == "max" else min(finite)
    head = "".join(f'<th{" class=l" if c.left else ""}>{c.title}</th>' for c in columns)
    body = []
    for r, vals, rc in zip(rows, values, classes_of):
        cells = []
        for j, (c, v) in enumerate(zip(columns, vals)):
            classes = (["l"] if c.left else []) + (["best"] if j in best and rc != "oracle" and _finite(v) and v == best[j] else [])
            attr = f' class="{" ".join(classes)}"' if classes else ""
            data = f' data-v="{float(v):.6g}"' if _finite(v) and not c.left else ""
            text = c.cell(r) if c.cell else (esc(v) if c.left else fmt(v, c.how))
            cells.append(f"<td{attr}{data}>{text}</td>")
        body.append(f'<tr{f" class={rc}" if rc else ""}>{"".join(cells)}</tr>')
    attrs = (f' id="{id}"' if id else "") + f' class="sortable{(" " + cls) if cls else ""}"'
    return f"<table{attrs}><thead>{group_head}<tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def img(path: Path, caption: str, alt: str = "") -> str:
    """A figure with the PNG inlined as a data URI."""
    data = base64.b64encode(Path(path).read_bytes()).decode("ascii")
    return (f'<figure><img class="plot" alt="{esc(alt or caption)}" src="data:image/png;base64,{data}">'
            f"<figcaption>{esc(caption)}</figcaption></figure>")


def document(title: str, body: Sequence[str], css: str = CSS) -> str:
    """The whole page: style in the head, the sort script at the end of the body."""
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>{esc(title)}</title><style>{css}</style></head>\n<body>\n"
            + "\n".join(body)
            + f"\n<script>{SORT_SCRIPT}</script>\n</body></html>\n")


def esc(s: Any) -> str:
    return html.escape(str(s))


def _finite(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
