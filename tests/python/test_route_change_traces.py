"""Trace files of route changes (``route_changes[*].link.trace``) resolve as ``link.trace``
does: against the scenario's folder, then the working directory, then the shipped traces."""

from __future__ import annotations

from pathlib import Path

from ratelab.scenario import load_scenario
from test_cli import GOOD, assert_bad_input


def _file(tmp_path: Path, text: str) -> str:
    p = tmp_path / "s.toml"
    p.write_text(text)
    return str(p)


def test_route_change_trace_resolves_against_the_scenario_folder(tmp_path, monkeypatch):
    (tmp_path / "traces").mkdir()
    (tmp_path / "traces" / "cell.csv").write_text("time_s,capacity_kbps\n0,800\n")
    monkeypatch.chdir(Path("/"))  # not the scenario's folder: the path must come from the file
    text = GOOD + '[[route_changes]]\nat_s = 5\n[route_changes.link]\ntrace = "traces/cell.csv"\n'
    sc = load_scenario(_file(tmp_path, text))
    assert sc.data["route_changes"][0]["link"]["trace"] == str((tmp_path / "traces" / "cell.csv").resolve())


def test_missing_route_change_trace_is_one_error_line(cli, tmp_path):
    text = GOOD + '[[route_changes]]\nat_s = 5\n[route_changes.link]\ntrace = "no-such-cell.csv"\n'
    assert_bad_input(cli("run", _file(tmp_path, text)), field="route_changes[0].link.trace", words="no-such-cell.csv")
