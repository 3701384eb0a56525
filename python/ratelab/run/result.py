"""What a run gives back, whichever driver made it (simulator, live, a real browser): one
:class:`RunResult` per contender, gathered in a :class:`ScenarioRun`; :class:`Interrupted`
carries the runs that finished before a Ctrl-C."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ratelab.scenario import Scenario


@dataclass
class RunResult:
    """One simulation: a scenario with one controller choice."""

    name: str
    #: Controller given with -c, or the scenario's own media controllers joined by '+'.
    controller: str
    wall_seconds: float
    sim_speed: float
    link: dict[str, Any]
    flows: list[dict[str, Any]]
    duration_s: float
    #: Folder with this run's Parquet files and plots (None when nothing was written).
    dir: Path | None = None
    #: The reverse bottleneck's summary (same keys as ``link``), or None for a one-way scenario
    #: (RFC 8867 5.3: a scenario with a ``[reverse_link]``).
    reverse_link: dict[str, Any] | None = None
    #: CPU seconds of the simulation calls alone (as ``wall_seconds``; campaign overhead figures).
    cpu_seconds: float = 0.0

    @classmethod
    def from_summary(cls, summary: dict[str, Any], *, name: str, controller: str, wall: float, duration: float,
                     dir: Path | None) -> "RunResult":
        """A run from the core's (or the live driver's) summary dict."""
        reverse = summary.get("reverse_link")
        return cls(
            name=name,
            controller=controller,
            wall_seconds=wall,
            sim_speed=duration / wall if wall > 0 else float("inf"),
            link=dict(summary.get("link", {})),
            flows=[dict(f) for f in summary.get("flows", [])],
            duration_s=duration,
            dir=dir,
            reverse_link=dict(reverse) if reverse is not None else None,
        )

    @property
    def packets(self) -> int:
        """Packets the simulation sent (all flows), for speed figures."""
        return int(sum(f.get("packets_sent", 0) or 0 for f in self.flows))

    @property
    def series_path(self) -> Path | None:
        p = self.dir / "series.parquet" if self.dir else None
        return p if p and p.is_file() else None

    def to_summary(self) -> dict[str, Any]:
        out = {
            "controller": self.controller,
            "wall_seconds": self.wall_seconds,
            "sim_speed": self.sim_speed,
            "link": self.link,
        }
        if self.reverse_link is not None:  # one-way runs keep the keys they always had
            out["reverse_link"] = self.reverse_link
        out["flows"] = self.flows
        return out


@dataclass
class ScenarioRun:
    """All runs of one scenario (one per controller), in order."""

    scenario: Scenario
    seed: int
    runs: list[RunResult] = field(default_factory=list)
    out_dir: Path | None = None
    interrupted: bool = False
    #: Label in reports (defaults to the scenario name; the demo adds e.g. "5 % loss").
    title: str = ""


class Interrupted(Exception):
    """Ctrl-C during a run; ``result`` holds the runs that finished before it."""

    def __init__(self, result: ScenarioRun):
        super().__init__("interrupted")
        self.result = result
