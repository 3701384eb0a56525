"""The campaign results store: one hive-style folder per run, written so that nothing is lost.

Layout under the campaign root (``results/<campaign>/``)::

    controller=<c>/scenario=<s>/seed=<n>/flows.parquet    one row per flow (+ run-level columns)
                                        /series.parquet   the run's time series
                                        /packets.parquet  per-packet log (plans with packets = true)
                                        /error.json       instead of the above when the run failed
    summary.parquet                                       every flows.parquet, rebuilt from them
    plan.json                                             the expanded plan (for --status, query)
    .tmp/  .lock                                          work area and the sweep's lock

A run is written into a private folder under ``.tmp/`` and renamed into place when complete, so a
run folder is either absent or whole: ``kill -9`` at any moment loses no finished run and leaves
no half-written file in the tree (``.tmp/`` is cleared when the next sweep starts). Every Parquet
file carries the run's provenance in its metadata (keys ``ratelab.*``).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import subprocess
import tempfile
import time
import traceback
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Iterator

from ratelab._version import __version__
from ratelab.campaign.layout import DONE_FILE, ERROR_FILE, OPTIONAL_FLOW_COLUMNS, RUN_COLUMNS, TMP_DIR, has_files  # noqa: F401 (re-exported)
from ratelab.campaign.plan import RunSpec

if TYPE_CHECKING:  # the runner (and the native core) load only when a run executes
    from ratelab.run.runner import RunResult

#: Simulated seconds per call into the simulator for a campaign run without packet log: no
#: progress bar to advance, so fewer round trips (results do not depend on the chunking); the
#: series buffered per chunk stay small (a few thousand rows).
CAMPAIGN_CHUNK_S = 60.0
#: Flow-summary keys renamed in flows.parquet (``controller`` is the run's hive column).
_RENAMED = {"controller": "flow_controller"}


# --- provenance ---------------------------------------------------------------------------------

def git_commit() -> str:
    """The commit of the source checkout ratelab runs from, or "" (an installed wheel has none)."""
    env = os.environ.get("RATELAB_GIT_COMMIT")
    if env:
        return env
    here = Path(__file__).resolve().parent
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=here, capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return ""
    if out.returncode != 0:
        return ""
    commit = out.stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=here, capture_output=True, text=True, timeout=5)
    return commit + ("-dirty" if dirty.returncode == 0 and dirty.stdout.strip() else "")


def provenance(spec: RunSpec) -> dict[str, str]:
    """The ``ratelab.*`` metadata stored in every Parquet file of a run."""
    doc = spec.scenario_doc
    meta = {
        "ratelab.version": __version__,
        "ratelab.git_commit": spec.git_commit or "",
        "ratelab.campaign": spec.campaign,
        "ratelab.run_id": spec.run_id,
        "ratelab.scenario": json.dumps(doc, sort_keys=True, default=str),
        "ratelab.scenario_name": spec.scenario_name,
        "ratelab.controller": spec.controller_name,
        "ratelab.controller_params": json.dumps(spec.controller_params, sort_keys=True, default=str),
        "ratelab.grid": json.dumps(spec.grid, sort_keys=True, default=str),
        "ratelab.seed": str(spec.seed),
    }
    for key, name in (("link", "ratelab.trace_sha256"), ("reverse_link", "ratelab.reverse_trace_sha256")):
        trace = doc.get(key, {}).get("trace") if isinstance(doc.get(key), dict) else None
        if isinstance(trace, str) and Path(trace).is_file():
            meta[name] = hashlib.sha256(Path(trace).read_bytes()).hexdigest()
    return meta


def read_provenance(path: str | Path) -> dict[str, str]:
    """The ``ratelab.*`` metadata of a Parquet file, decoded."""
    import pyarrow.parquet as pq

    meta = pq.read_schema(path).metadata or {}
    return {k.decode(): v.decode() for k, v in meta.items() if k.startswith(b"ratelab.")}


# --- one run --------------------------------------------------------------------------------

def execute_run(spec: RunSpec | dict[str, Any], root: str | Path, base_dir: str | None = None) -> dict[str, Any]:
    """Run one campaign run and commit its folder under ``root``; never raises for a failing run.

    Called in worker processes that see the campaign folder (the local pool, Ray in shared-path
    mode): writes its own files and returns only a small summary ``{"run_id", "status":
    "done"|"failed"|"skipped", "wall_s", ...}``. ``base_dir``: where the sweep started, for Python
    controllers named by a relative path (the worker's own directory may differ, e.g. on Ray).
    """
    if isinstance(spec, dict):
        spec = RunSpec.from_dict(spec)
    root = Path(root)
    final = root / spec.run_id
    if (final / DONE_FILE).is_file():
        return {"run_id": spec.run_id, "status": "skipped"}
    # The run is written straight into a fresh folder under .tmp/ and that folder is renamed
    # into place: no nested temp folder to create and remove per run.
    folder = root / TMP_DIR / f"run-{uuid.uuid4().hex}"
    folder.parent.mkdir(parents=True, exist_ok=True)
    try:
        summary = produce_run(spec, folder, base_dir)
        commit_dir(folder, final, root)
        return summary
    finally:
        if folder.exists():
            shutil.rmtree(folder, ignore_errors=True)


def execute_run_packed(spec: RunSpec | dict[str, Any], base_dir: str | None = None) -> dict[str, Any]:
    """Run one campaign run in a private folder of this machine and return its files as bytes.

    For workers that do not see the campaign folder (Ray nodes with their own disks): the summary
    dict gains ``"files": {relative path: bytes}``; the driver writes them with
    :func:`commit_packed`. Without packet logs a run is a few tens of kB.
    """
    if isinstance(spec, dict):
        spec = RunSpec.from_dict(spec)
    work = Path(tempfile.mkdtemp(prefix="ratelab-run-"))
    try:
        folder = work / "run"
        summary = produce_run(spec, folder, base_dir)
        summary["files"] = {str(f.relative_to(folder)): f.read_bytes() for f in sorted(folder.rglob("*")) if f.is_file()}
        return summary
    finally:
        shutil.rmtree(work, ignore_errors=True)


def commit_packed(root: Path, run_id: str, files: dict[str, bytes]) -> None:
    """Driver side of :func:`execute_run_packed`: write the files into a private folder under
    ``.tmp/`` and move it into place in one rename, exactly as a local worker commits a run."""
    if not files or not any(n in (DONE_FILE, ERROR_FILE) for n in files):
        raise ValueError(f"{run_id}: the worker returned no {DONE_FILE} or {ERROR_FILE}")
    root = Path(root)
    tmp_base = root / TMP_DIR
    tmp_base.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="run-", dir=tmp_base))
    try:
        folder = work / "run"
        for name, data in files.items():
            target = (folder / name).resolve()
            if folder.resolve() not in target.parents:
                raise ValueError(f"{run_id}: file name {name!r} leaves the run folder")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        commit_dir(folder, root / run_id, root)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def produce_run(spec: RunSpec, folder: Path, base_dir: str | None = None) -> dict[str, Any]:
    """Simulate one run into ``folder`` (created; its parent must exist), or record its failure
    there as ``error.json`` alone; returns the run's small summary dict."""
    if base_dir is not None:
        os.environ["RATELAB_BASE_DIR"] = base_dir
    t0 = time.perf_counter()
    c0 = time.process_time()
    try:
        result, table = _simulate(spec, folder)
    except Exception as exc:  # noqa: BLE001 - a failing run is recorded, the campaign goes on
        err = _error_record(spec, exc, time.perf_counter() - t0)
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir()
        (folder / ERROR_FILE).write_text(json.dumps(err, indent=2) + "\n", encoding="utf-8")
        return {"run_id": spec.run_id, "status": "failed", "error": err["error"], "wall_s": err["wall_s"]}
    media = [f for f in result.flows if f.get("kind") == "media"]
    return {"run_id": spec.run_id, "status": "done", "wall_s": time.perf_counter() - t0,
            "cpu_s": time.process_time() - c0, "sim_wall_s": result.wall_seconds, "sim_cpu_s": result.cpu_seconds,
            # the worker's CPU since it started: tools/campaign_overhead.py sums the last per pid
            "pid": os.getpid(), "proc_cpu_s": time.process_time(),
            "sim_speed": result.sim_speed, "utilization": result.link.get("utilization"),
            "owd_ms_p95": max((f.get("owd_ms_p95") or 0.0 for f in media), default=None),
            # the rows of flows.parquet (Arrow IPC), for the driver's summary update (summary.FreshFlows)
            "flows_ipc": _fresh_flows(spec.run_id, table)}


def _fresh_flows(run_id: str, table):
    from ratelab.campaign.summary import fresh_flows

    return fresh_flows(run_id, table)


def _simulate(spec: RunSpec, run_dir: Path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from ratelab.run.runner import REAL_TIME_STACKS, Contender, no_progress, run_one, run_real_time
    from ratelab.scenario import Scenario

    doc = dict(spec.scenario_doc)
    if not spec.packets:
        doc["metrics"] = {**doc.get("metrics", {}), "packet_log": False}
    sc = Scenario(doc, spec.scenario)
    meta = provenance(spec)
    if spec.controller_name in REAL_TIME_STACKS:  # a real browser call (sweep runs these one at a time)
        c = Contender(spec.controller, spec.controller, spec.controller_name, sc, dict(spec.controller_params))
        result = run_real_time(c, spec.seed, run_dir, no_progress, meta)
    else:
        result = run_one(sc, sc.to_json(), None, spec.controller_name, spec.controller, spec.seed, run_dir, no_progress, meta,
                         chunk_s=None if spec.packets else CAMPAIGN_CHUNK_S)
    rows = flow_rows(spec, result)
    table = pa.Table.from_pylist(rows).replace_schema_metadata(meta)
    tmp = run_dir / (DONE_FILE + ".part")
    # Uncompressed: a row per flow, mostly provenance metadata; zstd saved no bytes here and cost
    # ~0.4 ms per write and ~1 ms per read (the summary reads every run's file once).
    pq.write_table(table, tmp, compression="none", use_dictionary=False)
    os.replace(tmp, run_dir / DONE_FILE)
    return result, table


def flow_rows(spec: RunSpec, result: RunResult) -> list[dict[str, Any]]:
    """flows.parquet rows: the simulator's flow summary plus run-level columns (``link_*``, and
    ``reverse_link_*`` when the scenario has a reverse bottleneck)."""
    rows = []
    run_cols: dict[str, Any] = {f"link_{k}": _num(v) for k, v in result.link.items()}
    if result.reverse_link is not None:
        run_cols.update({f"reverse_link_{k}": _num(v) for k, v in result.reverse_link.items()})
    run_cols.update({
        "controller_name": spec.controller_name, "scenario_name": spec.scenario_name,
        "duration_s": float(result.duration_s), "wall_seconds": float(result.wall_seconds),
        "sim_speed": float(result.sim_speed),
    })
    for k, v in spec.grid.items():
        run_cols["param_" + "".join(c if c.isalnum() else "_" for c in k)] = json.dumps(v) if isinstance(v, (list, dict)) else v
    for k, v in spec.controller_params.items():
        run_cols["cparam_" + "".join(c if c.isalnum() else "_" for c in k)] = json.dumps(v) if isinstance(v, (list, dict)) else v
    for f in result.flows:
        row = {_RENAMED.get(k, k): _num(v) for k, v in f.items()}
        row.update(run_cols)
        rows.append(row)
    return rows


def _num(v: Any) -> Any:
    if hasattr(v, "item") and callable(v.item):
        return v.item()
    if isinstance(v, (dict, list)):
        return json.dumps(v)
    return v


def _error_record(spec: RunSpec, exc: BaseException, wall: float) -> dict[str, Any]:
    from ratelab.errors import InputError

    line = exc.line()[len("error: "):] if isinstance(exc, InputError) else f"{type(exc).__name__}: {exc}"
    return {
        "run_id": spec.run_id, "error": line, "type": type(exc).__name__,
        "traceback": "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)),
        "wall_s": wall, "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "provenance": {k: v for k, v in provenance(spec).items()},
    }


def commit_dir(src: Path, dst: Path, root: Path) -> None:
    """Move a finished run folder into place in one rename (replacing an older failure)."""
    dst.parent.mkdir(parents=True, exist_ok=True)
    if dst.exists():
        trash = root / TMP_DIR / f"old-{uuid.uuid4().hex}"
        os.rename(dst, trash)
        shutil.rmtree(trash, ignore_errors=True)
    os.rename(src, dst)


# --- campaign state ---------------------------------------------------------------------------

def run_state(root: Path, run_id: str) -> str:
    d = root / run_id
    if (d / DONE_FILE).is_file():
        return "done"
    if (d / ERROR_FILE).is_file():
        return "failed"
    return "pending"


def status(root: Path, specs: Iterable[RunSpec]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {"done": [], "failed": [], "pending": []}
    for s in specs:
        out[run_state(root, s.run_id)].append(s.run_id)
    return out


def failures(root: Path) -> list[dict[str, Any]]:
    out = []
    for p in sorted(root.glob(f"controller=*/scenario=*/seed=*/{ERROR_FILE}")):
        with contextlib.suppress(OSError, ValueError):
            out.append(json.loads(p.read_text(encoding="utf-8")))
    return out


@contextlib.contextmanager
def campaign_lock(root: Path) -> Iterator[None]:
    """Exclusive lock of a campaign folder for one sweep; clears the work area of dead sweeps."""
    import fcntl

    from ratelab.errors import InputError

    root.mkdir(parents=True, exist_ok=True)
    fh = open(root / ".lock", "w")
    try:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise InputError(str(root), "", "another sweep is running on this campaign") from None
        shutil.rmtree(root / TMP_DIR, ignore_errors=True)
        (root / TMP_DIR).mkdir()
        yield
    finally:
        fh.close()


def write_plan(root: Path, plan_source: str, specs: list[RunSpec]) -> None:
    """``plan.json``: the expanded plan, streamed run by run (temp file, then rename). The seeds
    of one scenario share one document object, encoded once: no deep copy per run, memory flat
    in the number of runs (a 20,000-run plan is one scenario document per scenario × grid value)."""
    from dataclasses import fields

    from ratelab.run.results import atomic_text

    names = [f.name for f in fields(RunSpec) if f.name != "scenario_doc"]
    encoded: dict[int, str] = {}
    with atomic_text(root / "plan.json") as fh:
        fh.write(json.dumps({"ratelab_version": __version__, "plan": plan_source})[:-1] + ', "runs": [')
        for i, s in enumerate(specs):
            doc = encoded.get(id(s.scenario_doc))
            if doc is None:
                doc = encoded[id(s.scenario_doc)] = json.dumps(s.scenario_doc, default=str)
            head = json.dumps({n: getattr(s, n) for n in names}, default=str)
            fh.write(("" if i == 0 else ", ") + head[:-1] + ', "scenario_doc": ' + doc + "}")
        fh.write("]}\n")


def read_plan(root: Path) -> list[RunSpec]:
    p = root / "plan.json"
    if not p.is_file():
        return []
    return [RunSpec.from_dict(d) for d in json.loads(p.read_text(encoding="utf-8"))["runs"]]


# --- tables -----------------------------------------------------------------------------------

def _glob(root: Path, name: str) -> str:
    return str(root / "controller=*" / "scenario=*" / "seed=*" / name)







def connect(root: Path, views=None):
    """DuckDB views over the campaign (see :func:`ratelab.campaign.summary.connect`)."""
    from ratelab.campaign.summary import connect as _connect

    return _connect(root, views)


def rebuild_summary(root: Path, *, full: bool = False, fresh=None) -> Path | None:
    """Bring ``summary.parquet`` up to date (incrementally; see :mod:`ratelab.campaign.summary`)."""
    from ratelab.campaign.summary import rebuild_summary as _rebuild

    return _rebuild(root, full=full, fresh=fresh)


def _sql_str(s: str) -> str:
    return "'" + s.replace("'", "''") + "'"
