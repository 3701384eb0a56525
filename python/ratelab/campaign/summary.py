"""The campaign summary and the DuckDB views over a campaign, at a cost that grows with the new
runs only.

``summary.parquet`` holds every finished run's flows and records in its Parquet metadata
(``ratelab.summary_runs``) exactly which runs it holds. Rebuilding it after a sweep scans the run
folders (one directory listing per run, no file opened), keeps the old summary's rows and reads
only the ``flows.parquet`` of runs it does not hold yet: a sweep that adds k runs to a campaign of
n opens k files, not n. A run folder that disappeared (deleted by hand) forces a full rebuild, so
the summary always equals one built from scratch. Queries use the same split: the summary plus
the runs finished since, so ``ratelab query`` opens a handful of files even on a 20,000-run
campaign, also while a sweep is running or after one was killed before it rewrote the summary.
"""

from __future__ import annotations

import contextlib
import json
import os
import uuid
from pathlib import Path
from typing import Any, Iterable

SUMMARY_FILE = "summary.parquet"
#: Parquet key-value metadata of the summary: a JSON list of the run ids it holds.
RUNS_KEY = "ratelab.summary_runs"


def scan_runs(root: Path, stats: dict[str, int] | None = None) -> tuple[set[str], set[str]]:
    """Run ids (``controller=…/scenario=…/seed=…``) of the finished and of the failed runs,
    from the directory tree alone (``stats["listed"]`` counts the run folders looked at)."""
    from ratelab.campaign.layout import DONE_FILE, ERROR_FILE

    done: set[str] = set()
    failed: set[str] = set()
    listed = 0
    for c in _subdirs(root, "controller="):
        for s in _subdirs(c.path, "scenario="):
            for r in _subdirs(s.path, "seed="):
                listed += 1
                run_id = f"{c.name}/{s.name}/{r.name}"
                if os.path.isfile(os.path.join(r.path, DONE_FILE)):
                    done.add(run_id)
                elif os.path.isfile(os.path.join(r.path, ERROR_FILE)):
                    failed.add(run_id)
    if stats is not None:
        stats["listed"] = stats.get("listed", 0) + listed
    return done, failed


def _subdirs(path: str | Path, prefix: str) -> list[os.DirEntry]:
    try:
        with os.scandir(path) as it:
            return [e for e in it if e.name.startswith(prefix) and e.is_dir()]
    except (FileNotFoundError, NotADirectoryError):
        return []


def summary_runs(path: Path) -> set[str] | None:
    """The run ids a summary file holds, or None (no summary, unreadable, or written by a
    version that did not record them: then it is rebuilt from scratch)."""
    import pyarrow.parquet as pq

    try:
        meta = pq.read_schema(path).metadata or {}
        return set(json.loads(meta[RUNS_KEY.encode()]))
    except (OSError, KeyError, ValueError, TypeError):
        return None
    except Exception:  # noqa: BLE001 - pyarrow raises ArrowInvalid for a damaged file
        return None


def _flows_select(con, raw: str) -> str:
    """``SELECT`` over run flows files with the columns every version's files share: ``direction``
    is ``forward`` for runs that predate it and every optional column exists (NULL if unwritten)."""
    from ratelab.campaign.layout import OPTIONAL_FLOW_COLUMNS

    have = {r[0] for r in con.execute(f"DESCRIBE SELECT * FROM {raw}").fetchall()}
    replace = " REPLACE (coalesce(direction, 'forward') AS direction)" if "direction" in have else ""
    extra = [] if "direction" in have else ["'forward' AS direction"]
    extra += [f"CAST(NULL AS {t}) AS {c}" for c, t in OPTIONAL_FLOW_COLUMNS.items() if c not in have]
    return f"SELECT *{replace}{''.join(', ' + e for e in extra)} FROM {raw}"


#: The hive columns' types, fixed rather than guessed from the values (a scenario labelled
#: "2024" stays text) so that a summary does not depend on which runs a batch held.
HIVE_TYPES = "{'controller': VARCHAR, 'scenario': VARCHAR, 'seed': BIGINT}"


def _read_files(files: list[str]) -> str:
    listed = "[" + ", ".join(_sql_str(f) for f in files) + "]"
    return f"read_parquet({listed}, hive_partitioning = true, union_by_name = true, hive_types = {HIVE_TYPES})"


#: Flows files per ``read_parquet`` call: DuckDB holds state for every file of one call
#: (~110 kB each: one call over 20,000 run files peaked at 2.4 GB), so new runs are read in
#: batches and their rows (a few kB per run) kept in one Arrow table.
READ_BATCH = 500


def _load_batches(con, files: list[str], fresh: list | None = None) -> str:
    """Read ``files`` ``READ_BATCH`` at a time into an Arrow table registered on ``con``; returns
    its name. Batches whose files lack a column (older versions) get it as NULL. ``fresh``: flows
    tables of runs the caller already holds in memory (see :func:`fresh_flows`), added without
    reading their files."""
    import pyarrow as pa

    # One reader thread: with several, each keeps its own buffers per file (5,000 files: 499 MB
    # peak against 183 MB with one, and no faster on small files).
    threads = con.execute("SELECT current_setting('threads')").fetchone()[0]
    con.execute("SET threads = 1")
    try:
        parts = [con.sql(_flows_select(con, _read_files(files[i:i + READ_BATCH]))).to_arrow_table()
                 for i in range(0, len(files), READ_BATCH)]
        if fresh:
            held = f"fresh_flows_{uuid.uuid4().hex[:8]}"
            con.register(held, pa.concat_tables(fresh, promote_options="permissive"))
            parts.append(con.sql(_flows_select(con, held)).to_arrow_table())
            con.unregister(held)
    finally:
        con.execute(f"SET threads = {int(threads)}")
    table = parts[0] if len(parts) == 1 else pa.concat_tables(parts, promote_options="permissive")
    name = f"new_flows_{uuid.uuid4().hex[:8]}"
    con.register(name, table)
    return name


def fresh_flows(run_id: str, table) -> bytes | None:
    """A run's flows table as the summary reads it from ``flows.parquet`` — the file's columns
    plus the hive columns of its folder (controller, scenario as text, seed as an integer, as
    :func:`_read_files` types them), without the file's metadata — as Arrow IPC stream bytes
    (for a worker to send back: 0.1 ms, against 0.7 ms to pickle and unpickle the table). None
    when the folder name is not one this can parse exactly (then the file is read)."""
    import pyarrow as pa

    try:
        parts = dict(seg.split("=", 1) for seg in run_id.split("/"))
        values = {"controller": parts["controller"], "scenario": parts["scenario"], "seed": int(parts["seed"])}
    except (ValueError, KeyError):
        return None
    if len(parts) != 3 or "%" in run_id or str(values["seed"]) != parts["seed"] or any(k in table.column_names for k in values):
        return None
    n = table.num_rows
    table = table.replace_schema_metadata(None)
    for key, value in values.items():
        table = table.append_column(key, pa.array([value] * n, pa.int64() if key == "seed" else pa.string()))
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()


class FreshFlows:
    """The flows tables of runs a sweep's workers returned, so the summary update at the end need
    not read their files again. Compacted every ``COMPACT`` runs into one table (a few kB per
    run), so memory stays small on a 20,000-run sweep."""

    COMPACT = 500

    def __init__(self) -> None:
        self.run_ids: set[str] = set()
        self._pending: list = []
        self._blocks: list = []

    def add(self, run_id: str, data: bytes | None) -> None:
        """``data``: :func:`fresh_flows`'s bytes (None: the file will be read)."""
        if data is None or run_id in self.run_ids:
            return
        self.run_ids.add(run_id)
        self._pending.append(data)
        if len(self._pending) >= self.COMPACT:
            self._compact()

    def _compact(self) -> None:
        import pyarrow as pa

        if self._pending:
            tables = [pa.ipc.open_stream(data).read_all() for data in self._pending]
            self._blocks.append(pa.concat_tables(tables, promote_options="permissive").combine_chunks())
            self._pending = []

    def tables(self) -> list:
        self._compact()
        return list(self._blocks)


_UNREAD = object()


def flows_source(con, root: Path, done: set[str], *, full: bool = False,
                 stats: dict[str, int] | None = None, have=_UNREAD,
                 fresh: FreshFlows | None = None) -> tuple[str, set[str]] | None:
    """SQL for all flows of the runs in ``done`` (None if there are none) and the run ids it
    covers: the summary's rows plus the files of runs it lacks (``stats["read_files"]`` counts
    them), or every run file when ``full`` or when the summary holds a run that is gone.
    ``have``: the summary's run ids when the caller has read them already; ``fresh``: flows tables
    of runs whose files need not be read (used only when every one of them is a new run)."""
    from ratelab.campaign.layout import DONE_FILE

    if not done:
        return None
    target = Path(root) / SUMMARY_FILE
    if full:
        have = None
    elif have is _UNREAD:
        have = summary_runs(target)
    if have is not None and not have <= done:
        have = None  # a run folder was removed: its rows cannot be told apart, start afresh
    new = sorted(done - have) if have is not None else sorted(done)
    use_fresh = fresh is not None and fresh.run_ids and fresh.run_ids <= set(new)
    held = fresh.tables() if use_fresh else []
    unread = [r for r in new if r not in fresh.run_ids] if use_fresh else new
    if stats is not None:
        stats["read_files"] = stats.get("read_files", 0) + len(unread)
    parts = []
    if new:
        parts.append(f"SELECT * FROM {_load_batches(con, [str(Path(root) / r / DONE_FILE) for r in unread], held)}")
    if have:
        parts.append(f"SELECT * FROM read_parquet({_sql_str(str(target))})")
    return " UNION ALL BY NAME ".join(f"({p})" for p in parts), done


def rebuild_summary(root: Path, *, full: bool = False, stats: dict[str, int] | None = None,
                    fresh: FreshFlows | None = None) -> Path | None:
    """Bring ``summary.parquet`` up to date with the finished runs (atomically: temp, rename).
    Incremental unless ``full``; a no-op when it already holds exactly the finished runs.
    ``fresh``: flows tables a sweep's workers returned (:class:`FreshFlows`); their files are not
    read again (the end of a sweep, when the workers are idle, is serial)."""
    import duckdb

    root = Path(root)
    target = root / SUMMARY_FILE
    done, _ = scan_runs(root, stats)
    if not done:
        with contextlib.suppress(FileNotFoundError):
            target.unlink()
        return None
    have = None if full else summary_runs(target)
    if have == done:
        return target
    con = duckdb.connect()
    tmp = root / f".summary-{uuid.uuid4().hex}.parquet.part"
    try:
        sql, runs = flows_source(con, root, done, full=full, stats=stats, have=have, fresh=None if full else fresh)
        kv = _sql_str(json.dumps(sorted(runs), separators=(",", ":")))
        con.execute(f"COPY (SELECT * FROM ({sql}) ORDER BY controller, scenario, seed, id) TO {_sql_str(str(tmp))} "
                    f"(FORMAT parquet, COMPRESSION zstd, KV_METADATA {{'{RUNS_KEY}': {kv}}})")
        os.replace(tmp, target)
    finally:
        con.close()
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
    return target


#: Views :func:`connect` can create; ``flows`` and ``runs`` always exist when a run finished.
VIEWS = ("flows", "runs", "series", "packets", "failures")


def connect(root: Path, views: Iterable[str] | None = None, stats: dict[str, int] | None = None):
    """A DuckDB connection with views over the campaign: ``flows`` (one row per flow of every
    finished run, with hive columns controller/scenario/seed), ``runs`` (one row per run),
    ``series``, ``packets`` (when logged) and ``failures``.

    ``views``: only these of ``series``/``packets``/``failures`` are created (binding a view
    over every run's series file opens all of them); None creates all."""
    import duckdb

    from ratelab.campaign.layout import ERROR_FILE, RUN_COLUMNS, has_files

    wanted = set(VIEWS if views is None else views)
    con = duckdb.connect()
    root = Path(root)
    done, failed = scan_runs(root, stats)
    opts = f"hive_partitioning = true, union_by_name = true, hive_types = {HIVE_TYPES}"
    for view, name in (("series", "series.parquet"), ("packets", "packets.parquet")):
        if view in wanted and has_files(root, name):
            glob = str(root / "controller=*" / "scenario=*" / "seed=*" / name)
            con.execute(f"CREATE VIEW {view} AS SELECT * FROM read_parquet({_sql_str(glob)}, {opts})")
    src = flows_source(con, root, done, stats=stats)
    if src is not None:
        con.execute(f"CREATE VIEW flows AS {src[0]}")
        cols = ", ".join(f"any_value({c}) AS {c}" for c in RUN_COLUMNS)
        con.execute(f"""
            CREATE VIEW runs AS
            SELECT controller, scenario, seed, {cols}, count(*) AS flows,
                   count(*) FILTER (WHERE direction = 'reverse') AS reverse_flows
            FROM flows GROUP BY controller, scenario, seed""")
    if "failures" in wanted and failed:
        fails: list[dict[str, Any]] = []
        for run_id in sorted(failed):
            with contextlib.suppress(OSError, ValueError):
                fails.append(json.loads((root / run_id / ERROR_FILE).read_text(encoding="utf-8")))
        con.execute("CREATE TABLE failures (run_id VARCHAR, error VARCHAR, type VARCHAR, time VARCHAR)")
        con.executemany("INSERT INTO failures VALUES (?, ?, ?, ?)",
                        [(f.get("run_id"), f.get("error"), f.get("type"), f.get("time")) for f in fails])
    return con


def views_named(sql: str) -> set[str]:
    """The optional views a SQL text names (a word match: naming one too many only costs time)."""
    import re

    return {v for v in VIEWS if re.search(rf"\b{v}\b", sql, re.IGNORECASE)}


def _sql_str(s: str) -> str:
    return "'" + s.replace("'", "''") + "'"
