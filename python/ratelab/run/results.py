"""``summary.json``: the machine-readable result of one scenario run.

Shape::

    {"ratelab_version", "scenario", "seed", "duration_s",
     "runs": [{"controller", "wall_seconds", "sim_speed", "link": {...}, ["reverse_link": {...},]
               "flows": [...]}]}

``link``, ``reverse_link`` (only for scenarios with a reverse bottleneck, RFC 8867 5.3) and
``flows`` are the simulator's own summary, passed through. NaN (e.g. OWD of a flow
that delivered nothing) becomes ``null`` so the file is strict JSON.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
from pathlib import Path
from typing import Any, Iterator, TextIO

from ratelab._version import __version__
from ratelab.run.result import ScenarioRun


def build_summary(result: ScenarioRun) -> dict[str, Any]:
    return {
        "ratelab_version": __version__,
        "scenario": result.scenario.name,
        "seed": result.seed,
        "duration_s": result.scenario.duration_s,
        "runs": [r.to_summary() for r in result.runs],
    }


def write_summary(result: ScenarioRun, path: str | Path | None = None) -> Path:
    """Write ``summary.json`` (into the run's out_dir unless ``path`` is given)."""
    if path is None:
        if result.out_dir is None:
            raise ValueError("no out_dir to write summary.json into")
        path = result.out_dir / "summary.json"
    path = Path(path)
    write_text_atomic(path, json.dumps(strict_json(build_summary(result)), indent=2, allow_nan=False) + "\n")
    return path


def load_summary(path: str | Path) -> dict[str, Any]:
    return json.loads(Path(path).read_text(encoding="utf-8"))


@contextlib.contextmanager
def atomic_text(path: Path) -> Iterator[TextIO]:
    """A text file written under a temporary name and renamed into place when the block ends:
    readers never see half a file, and a block that fails leaves neither file behind."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".part")
    try:
        with open(tmp, "w", encoding="utf-8") as fh:
            yield fh
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()


def write_text_atomic(path: Path, text: str) -> None:
    """Write to a temporary name, then rename: readers never see half a file."""
    with atomic_text(path) as fh:
        fh.write(text)


def strict_json(v: Any) -> Any:
    """Replace non-finite floats by None and numpy scalars by Python numbers."""
    if isinstance(v, dict):
        return {str(k): strict_json(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [strict_json(x) for x in v]
    if hasattr(v, "item") and callable(v.item):  # numpy scalar
        v = v.item()
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return v
