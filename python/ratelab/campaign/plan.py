"""Campaign plans: a grid of controllers × scenarios (or trace sets) × parameter values × seeds.

A plan is a TOML file (or a built-in name from ``ratelab/plans/``)::

    name = "loss-study"                     # campaign name (default: the file name)
    controllers = ["gcc", "oracle"]         # or "all" (every registered controller but `fixed`)
    scenarios = ["rmcat-5.1", { scenario = "rmcat-5.6", label = "rmcat-5.6-q1000", set = ["link.queue.ms=1000"] }]
    traces = ["cellular"]                   # trace sets: a name (shipped, cellular, wired, broadband),
                                            # a folder or a glob; each trace file becomes a scenario
    trace_duration_s = 60                   # simulated time of each trace scenario
    seeds = 3                               # 3 means [1, 2, 3]; or a list
    set = ["duration_s=30"]                 # overrides applied to every scenario
    packets = false                         # keep per-packet logs (large)

    [grid]                                  # scenario fields: one run per value (cartesian product)
    "link.loss" = [0, 0.02]

    [params.gcc]                            # controller parameters: a list is a grid, else fixed
    profile = ["current", "m84"]

    [[exclude]]                             # drop runs matching every key given (glob patterns)
    controller = "oracle"
    scenario = "rmcat-5.6*"

``expand_plan`` turns a plan into :class:`RunSpec` objects, each with its fully resolved scenario
document (controller applied to every media flow), ready to run anywhere.
"""

from __future__ import annotations

import copy
import csv
import fnmatch
import glob as globmod
import itertools
import json
import math
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Iterable, Sequence

from ratelab.errors import InputError
from ratelab.scenario import PACKAGE_DIR, TRACE_DIR, TRACE_METADATA, Scenario, apply_controller, apply_overrides, load_scenario, parse_key, parse_params, read_toml, set_path

PLAN_DIR = PACKAGE_DIR / "plans"
#: Controllers that `controllers = "all"` leaves out (no congestion control to compare).
_PLAN_KEYS = {"name", "description", "controllers", "scenarios", "traces", "trace_duration_s", "seeds", "set",
              "packets", "grid", "params", "exclude", "include", "out"}


@dataclass(frozen=True)
class Range:
    """Accepted values of a numeric plan field: ``lo ≤ x ≤ hi`` (``lo < x`` if ``lo_open``)."""

    lo: float
    hi: float
    unit: str = ""
    lo_open: bool = False
    integer: bool = False
    note: str = ""

    def text(self) -> str:
        unit = f" {self.unit}" if self.unit else ""
        return f"{'(' if self.lo_open else '['}{_num(self.lo)}, {_num(self.hi)}]{unit}"

    def admits(self, v: Any) -> bool:
        if isinstance(v, bool) or not isinstance(v, (int, float)) or (self.integer and not isinstance(v, int)):
            return False
        return math.isfinite(v) and v <= self.hi and (v > self.lo if self.lo_open else v >= self.lo)


#: Longest simulated run, as the core's scenario limit (``scenario/limits.rs``).
MAX_DURATION_S = 604_800
#: Most runs one plan may expand to (a typo such as ``seeds = 100000`` is an error, not hours
#: of expansion).
MAX_RUNS = 1_000_000
#: Every numeric plan field and its range, declared once: checked by :func:`load_plan`, listed
#: in docs/scenarios.md (``plan_limits_table``). Scenario fields a plan sets (``set``, ``grid``)
#: are checked by the core against the scenario limits.
PLAN_LIMITS: dict[str, Range] = {
    "trace_duration_s": Range(0, MAX_DURATION_S, "s", lo_open=True),
    "seeds": Range(1, 10_000, integer=True, note="a count N: seeds 1..N"),
    "seeds[*]": Range(0, 2**63 - 1, integer=True, note="a list of seeds"),
}


def _num(v: float) -> str:
    if v == 2**63 - 1:
        return "2^63 - 1"
    return f"{v:g}" if abs(v) < 1e9 else f"{v:.0e}".replace("e+", "e")


def _checked_number(plan: "Plan", key: str, value: Any, where: str | None = None) -> Any:
    r = PLAN_LIMITS[key]
    if not r.admits(value):
        kind = "an integer" if r.integer else "a number"
        raise InputError(plan.source, where or key, f"{value!r} is out of range: must be {kind} in {r.text()}")
    return value


#: Named trace sets over the shipped traces (``traces/index.csv`` columns ``network``/``source``).
TRACE_SETS = {
    "shipped": lambda row: True,
    "cellular": lambda row: any(k in row.get("network", "") for k in ("3G", "4G", "5G", "HSDPA", "LTE")),
    "wired": lambda row: "wired" in row.get("network", "").lower(),
    "broadband": lambda row: "broadband" in row.get("network", "").lower(),
}


@dataclass
class RunSpec:
    """One run of a campaign: everything a worker needs, JSON-serialisable."""

    campaign: str
    #: Hive-style relative folder: ``controller=…/scenario=…/seed=…``.
    run_id: str
    controller: str
    controller_name: str
    controller_params: dict[str, Any]
    scenario: str
    scenario_name: str
    scenario_doc: dict[str, Any]
    seed: int
    grid: dict[str, Any] = field(default_factory=dict)
    packets: bool = False
    git_commit: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "RunSpec":
        return cls(**d)


@dataclass
class Plan:
    name: str
    source: str
    data: dict[str, Any]
    path: Path | None = None

    @property
    def description(self) -> str:
        return str(self.data.get("description", ""))


def with_params(plan: Plan, items: Sequence[str]) -> Plan:
    """The plan with ``-p NAME.KEY=VALUE`` options on top of its ``[params."NAME"]`` (the option
    wins; a list value is a grid, as in the plan). NAME must be one of the plan's controllers."""
    if not items:
        return plan
    by_controller = parse_params(items, _controllers(plan, None))
    data = copy.deepcopy(plan.data)
    params = data.setdefault("params", {})
    if not isinstance(params, dict):
        raise InputError(plan.source, "params", "must be a table of tables, e.g. [params.gcc]")
    for name, values in by_controller.items():
        table = params.setdefault(name, {})
        if not isinstance(table, dict):
            raise InputError(plan.source, f"params.{name}", "must be a table")
        table.update(values)
    return replace(plan, data=data)


def builtin_plans() -> list[str]:
    return sorted(p.stem for p in PLAN_DIR.glob("*.toml")) if PLAN_DIR.is_dir() else []


def load_plan(source: str | Path, data: dict[str, Any] | None = None) -> Plan:
    """Read a plan file or a built-in plan by name (or wrap ``data`` built in code)."""
    source = str(source)
    if data is not None:
        return _checked(Plan(str(data.get("name", source)), source, data))
    path = Path(source).expanduser()
    if not path.is_file():
        if source in builtin_plans():
            path = PLAN_DIR / f"{source}.toml"
        else:
            known = ", ".join(builtin_plans()) or "none"
            raise InputError(source, "", f"no such plan file and not a built-in plan (built-ins: {known})")
    doc = read_toml(path, source)
    return _checked(Plan(str(doc.get("name", path.stem)), source, doc, path.resolve()))


def _checked(plan: Plan) -> Plan:
    unknown = sorted(set(plan.data) - _PLAN_KEYS)
    if unknown:
        raise InputError(plan.source, unknown[0], f"unknown plan key (known: {', '.join(sorted(_PLAN_KEYS))})")
    for key, kind, what in (("name", str, "a string"), ("description", str, "a string"), ("out", str, "a string"),
                            ("packets", bool, "true or false"), ("scenarios", list, "a list of scenario names, files or tables")):
        if key in plan.data and not isinstance(plan.data[key], kind):
            raise InputError(plan.source, key, f"expected {what}")
    if not plan.data.get("scenarios") and not plan.data.get("traces"):
        raise InputError(plan.source, "scenarios", "a plan needs scenarios or traces")
    if not _safe(plan.name):
        raise InputError(plan.source, "name", f"'{plan.name}' is not usable as a folder name")
    _seeds(plan)
    _checked_number(plan, "trace_duration_s", plan.data.get("trace_duration_s", 60))
    return plan


def _safe(text: str) -> bool:
    return bool(text) and "/" not in text and "\\" not in text and text not in (".", "..") and not text.startswith(".")


# --- expansion ---------------------------------------------------------------------------------

def expand_plan(plan: Plan, *, known_controllers: list[str] | None = None, git_commit: str = "") -> list[RunSpec]:
    """Every run of the plan, in a stable order (controller, scenario, seed), filters applied."""
    d = plan.data
    controllers = _controllers(plan, known_controllers)
    scenarios = _scenarios(plan)
    seeds = _seeds(plan)
    grid = _grid(plan, "grid", d.get("grid", {}))
    params = d.get("params", {})
    if not isinstance(params, dict):
        raise InputError(plan.source, "params", "must be a table of tables, e.g. [params.gcc]")
    for c in params:
        if c not in controllers:
            raise InputError(plan.source, f"params.{c}", f"controller '{c}' is not in the plan's controllers")
    common = _string_list(plan, "set", d.get("set", []))
    packets = bool(d.get("packets", False))
    excludes = _filters(plan, "exclude")
    includes = _filters(plan, "include")

    n = len(controllers) * len(scenarios) * len(seeds) * math.prod(map(len, grid.values()))
    n *= max((math.prod(len(v) for v in _grid(plan, f"params.{c}", params.get(c, {}), fixed_ok=True).values())
              for c in controllers), default=1)
    if n > MAX_RUNS:
        raise InputError(plan.source, "", f"the plan expands to up to {n:,} runs, more than the limit of {MAX_RUNS:,}")
    from ratelab.run.runner import REAL_TIME_STACKS, real_time_options

    runs: list[RunSpec] = []
    seen: set[str] = set()
    for cname in controllers:
        pgrid = _grid(plan, f"params.{cname}", params.get(cname, {}), fixed_ok=True)
        for pvals in _product(pgrid):
            clabel = _label(cname, pvals)
            for slabel, sc in scenarios:
                for gvals in _product(grid):
                    sc_label = _label(slabel, gvals)
                    doc = copy.deepcopy(sc.data)
                    apply_overrides(doc, common)
                    for key, value in gvals.items():
                        set_path(doc, parse_key(key), value)
                    if cname in REAL_TIME_STACKS:  # a real stack runs the scenario as written; pvals are its options
                        real_time_options(cname, pvals)
                    else:
                        apply_controller(doc, cname, pvals)
                    Scenario(doc, sc.source, sc.path)._resolve_trace()
                    for seed in seeds:
                        keys = {"controller": clabel, "controller_name": cname, "scenario": sc_label, "scenario_name": slabel,
                                "seed": seed, **gvals, **{f"params.{k}": v for k, v in pvals.items()}}
                        if any(_matches(f, keys) for f in excludes) or (includes and not any(_matches(f, keys) for f in includes)):
                            continue
                        run_id = f"controller={_seg(clabel)}/scenario={_seg(sc_label)}/seed={seed}"
                        if run_id in seen:
                            raise InputError(plan.source, "scenarios", f"two runs would share the folder {run_id}: give scenarios distinct labels")
                        seen.add(run_id)
                        runs.append(RunSpec(plan.name, run_id, clabel, cname, dict(pvals), sc_label, slabel, doc, seed,
                                            dict(gvals), packets, git_commit))
    return runs


def _controllers(plan: Plan, known: list[str] | None) -> list[str]:
    raw = plan.data.get("controllers", "all")
    if known is None:
        from ratelab.native import controller_names

        known = controller_names()
    if raw == "all":
        from ratelab.native import all_controller_names

        every = set(all_controller_names())  # the registry entries say which belong to "all"
        return [c for c in known if c in every]
    names = _string_list(plan, "controllers", raw)
    from ratelab.run.runner import REAL_TIME_STACKS

    for n in names:
        if n not in known and n not in REAL_TIME_STACKS:
            from ratelab.byo.loader import check_name  # a Python controller (file.py:Class, module:Class, entry point)

            try:
                check_name(n, known)
            except InputError as exc:
                raise InputError(plan.source, "controllers", f"'{n}': {exc.message}") from None
    if not names:
        raise InputError(plan.source, "controllers", "empty")
    return list(dict.fromkeys(names))


def _scenarios(plan: Plan) -> list[tuple[str, Scenario]]:
    out: list[tuple[str, Scenario]] = []
    base = plan.path.parent if plan.path else None
    for i, item in enumerate(plan.data.get("scenarios", [])):
        where = f"scenarios[{i}]"
        if isinstance(item, str):
            item = {"scenario": item}
        if not isinstance(item, dict) or "scenario" not in item:
            raise InputError(plan.source, where, "expected a scenario name/file or { scenario = ..., label = ..., set = [...] }")
        extra = set(item) - {"scenario", "label", "set"}
        if extra:
            raise InputError(plan.source, f"{where}.{sorted(extra)[0]}", "unknown key (scenario, label, set)")
        name = str(item["scenario"])
        if base is not None and (base / name).is_file():
            name = str(base / name)
        sc = load_scenario(name, _string_list(plan, f"{where}.set", item.get("set", [])))
        label = str(item.get("label", sc.name))
        if not _safe(label):
            raise InputError(plan.source, f"{where}.label", f"'{label}' is not usable as a folder name")
        out.append((label, sc))
    duration = _checked_number(plan, "trace_duration_s", plan.data.get("trace_duration_s", 60))
    for i, spec in enumerate(_string_list(plan, "traces", plan.data.get("traces", []))):
        files = trace_files(spec, base)
        if not files:
            raise InputError(plan.source, f"traces[{i}]", f"'{spec}' matches no trace file")
        for f in files:
            sc = trace_scenario(f, duration)
            out.append((sc.name, sc))
    labels = [lbl for lbl, _ in out]
    dup = sorted({x for x in labels if labels.count(x) > 1})
    if dup:
        raise InputError(plan.source, "scenarios", f"scenario label '{dup[0]}' appears twice: give one a label")
    return out


def _seeds(plan: Plan) -> list[int]:
    raw = plan.data.get("seeds", [1])
    if isinstance(raw, int) and not isinstance(raw, bool):
        return list(range(1, _checked_number(plan, "seeds", raw) + 1))
    if isinstance(raw, list) and raw and len(raw) <= PLAN_LIMITS["seeds"].hi:
        return list(dict.fromkeys(_checked_number(plan, "seeds[*]", s, f"seeds[{i}]") for i, s in enumerate(raw)))
    raise InputError(plan.source, "seeds", "expected a count (3 means seeds 1, 2, 3) or a list of at most "
                     f"{_num(PLAN_LIMITS['seeds'].hi)} non-negative integers")


def _grid(plan: Plan, where: str, raw: Any, fixed_ok: bool = False) -> dict[str, list[Any]]:
    if not isinstance(raw, dict):
        raise InputError(plan.source, where, "must be a table")
    out: dict[str, list[Any]] = {}
    for k, v in raw.items():
        if not fixed_ok:
            parse_key(k)
        if isinstance(v, list):
            if not v:
                raise InputError(plan.source, f"{where}.{k}", "empty list of values")
            out[k] = v
        elif fixed_ok:
            out[k] = [v]
        else:
            raise InputError(plan.source, f"{where}.{k}", "expected a list of values")
    return out


def _product(grid: dict[str, list[Any]]) -> Iterable[dict[str, Any]]:
    keys = list(grid)
    for combo in itertools.product(*(grid[k] for k in keys)):
        yield dict(zip(keys, combo))


def _label(base: str, values: dict[str, Any]) -> str:
    """``base~key_value~...``: grid and parameter values are part of the run's folder name."""
    return base + "".join(f"~{k}_{_fmt(v)}" for k, v in values.items())


def _fmt(v: Any) -> str:
    if isinstance(v, float) and v.is_integer():
        v = int(v)
    text = v if isinstance(v, str) else json.dumps(v, separators=(",", ":"))
    return "".join(c if c.isalnum() or c in ".-_+," else "_" for c in str(text))


def _seg(text: str) -> str:
    """A hive partition value: no path separators, no '='."""
    return "".join("_" if c in "/\\=" else c for c in text)


def _string_list(plan: Plan, where: str, raw: Any) -> list[str]:
    if isinstance(raw, str):
        return [raw]
    if isinstance(raw, list) and all(isinstance(x, str) for x in raw):
        return list(raw)
    raise InputError(plan.source, where, "expected a string or a list of strings")


def _filters(plan: Plan, key: str) -> list[dict[str, Any]]:
    raw = plan.data.get(key, [])
    if isinstance(raw, dict):
        raw = [raw]
    if not isinstance(raw, list) or not all(isinstance(x, dict) and x for x in raw):
        raise InputError(plan.source, key, "expected a list of tables, e.g. [[exclude]] controller = \"fixed\"")
    return raw


def _matches(flt: dict[str, Any], keys: dict[str, Any]) -> bool:
    for k, pattern in flt.items():
        if k not in keys:
            return False
        value = keys[k]
        pats = pattern if isinstance(pattern, list) else [pattern]
        if not any(_match_one(p, value, keys, k) for p in pats):
            return False
    return True


def _match_one(pattern: Any, value: Any, keys: dict[str, Any], k: str) -> bool:
    if isinstance(pattern, str):
        cands = [str(value)] + ([str(keys["controller_name"])] if k == "controller" else []) \
            + ([str(keys["scenario_name"])] if k == "scenario" else [])
        return any(fnmatch.fnmatchcase(c, pattern) for c in cands)
    return pattern == value


# --- trace sets -----------------------------------------------------------------------------

def trace_index() -> dict[str, dict[str, str]]:
    """``traces/index.csv`` rows by file name (empty if the index is missing)."""
    p = TRACE_DIR / "index.csv"
    if not p.is_file():
        return {}
    with p.open(newline="", encoding="utf-8") as fh:
        return {row["file"]: row for row in csv.DictReader(fh)}


def trace_files(spec: str, base: Path | None = None) -> list[Path]:
    """Trace files of a named set, a folder or a glob (sorted)."""
    if spec in TRACE_SETS:
        index = trace_index()
        pick = TRACE_SETS[spec]
        files = [TRACE_DIR / name for name, row in index.items() if pick(row)] if index else \
            (sorted(TRACE_DIR.glob("*.csv")) if spec == "shipped" else [])
        return sorted(f for f in files if f.is_file())
    p = Path(spec).expanduser()
    if not p.is_absolute() and base is not None and (base / p).exists():
        p = base / p
    if p.is_dir():
        return sorted(x for x in p.iterdir() if x.is_file() and x.suffix in (".csv", ".json", ".log", ".txt")
                      and x.name not in TRACE_METADATA)
    return sorted(Path(x) for x in globmod.glob(str(p)) if Path(x).is_file())


def trace_scenario(path: str | Path, duration_s: float = 60.0) -> Scenario:
    """A one-flow scenario on a trace: 50 ms one-way delay, a queue of 300 ms at the trace's
    median capacity (robust to the spikes some traces hold), media up to 5 Mbit/s."""
    path = Path(path).resolve()
    median = trace_median_kbps(path)
    queue: dict[str, Any] = {"ms": 300}
    if median and math.isfinite(median) and median > 0:
        queue["rate_kbps"] = round(median, 1)
    doc = {
        "name": path.stem,
        "description": f"real trace {path.name}, looped, {duration_s:g} s",
        "duration_s": duration_s,
        "link": {"trace": str(path), "queue": queue},
        "flows": [{"kind": "media", "controller": "gcc", "one_way_delay_ms": 50,
                   "media": {"min_kbps": 150, "max_kbps": 5000, "start_kbps": 300}}],
    }
    return Scenario(doc, path.stem, path)


def trace_median_kbps(path: Path) -> float | None:
    """Median capacity of a CSV trace (``time_s,capacity_kbps,...``); None for other formats."""
    try:
        with path.open(newline="", encoding="utf-8") as fh:
            rows = csv.reader(fh)
            header = next(rows, [])
            if len(header) < 2 or "capacity_kbps" not in header:
                return None
            col = header.index("capacity_kbps")
            values = sorted(float(r[col]) for r in rows if len(r) > col and r[col].strip())
    except (OSError, ValueError, UnicodeDecodeError):
        return None
    if not values:
        return None
    n = len(values)
    return values[n // 2] if n % 2 else 0.5 * (values[n // 2 - 1] + values[n // 2])
