"""Execution engines for campaigns: a local process pool (default) and Ray.

The process pool runs :func:`ratelab.campaign.store.execute_run` for each pending run: the worker simulates,
writes its own files into the campaign folder and returns a small summary dict. Ray tasks by default
run :func:`ratelab.campaign.store.execute_run_packed` on their own node and return the run's files through
the object store; the driver commits them (no shared file system needed). The engines yield the
summaries as runs finish.
"""

from __future__ import annotations

import multiprocessing
import os
import sys
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any, Iterator, Sequence

from ratelab.campaign.plan import RunSpec
from ratelab.errors import InputError
from ratelab.campaign.store import commit_packed, execute_run, execute_run_packed

ENGINES = ("local", "ray")
#: How Ray tasks hand their files to the campaign folder (see :func:`run_ray`).
RAY_FILES = ("object-store", "shared")


def default_workers() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def _base_dir() -> str:
    """Workers resolve a Python controller's relative ``file.py:Class`` (and ``module:Class``
    next to it) against the directory the sweep was started from, wherever their own cwd is."""
    return os.environ.get("RATELAB_BASE_DIR") or os.getcwd()


def run_local(specs: Sequence[RunSpec], root: Path, workers: int | None = None) -> Iterator[dict[str, Any]]:
    """Run on a pool of ``workers`` processes (default: all cores); yields each run's summary.

    A worker that dies (e.g. killed by the OOM killer) breaks the pool: the runs that had not
    finished are reported as ``{"status": "lost"}`` and stay pending for the next sweep.
    """
    workers = workers or default_workers()
    base = _base_dir()
    method = "forkserver" if sys.platform.startswith("linux") else "spawn"
    ctx = multiprocessing.get_context(method)
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=ctx)
    # Keep a bounded number of tasks queued: a Ctrl-C cancels little, memory stays flat.
    todo = list(specs)[::-1]
    running: dict[Any, RunSpec] = {}
    finished = False
    try:
        while todo or running:
            while todo and len(running) < 2 * workers:
                s = todo.pop()
                try:
                    # The RunSpec itself is pickled: cheaper than to_dict()'s deep copy of the scenario.
                    running[pool.submit(execute_run, s, str(root), base)] = s
                except BrokenProcessPool:  # a worker died earlier: the rest waits for the next sweep
                    for lost in [s, *todo[::-1]]:
                        yield {"run_id": lost.run_id, "status": "lost", "error": "a worker process died"}
                    todo.clear()
            done, _ = wait(running, return_when=FIRST_COMPLETED)
            for fut in done:
                s = running.pop(fut)
                try:
                    yield fut.result()
                except BrokenProcessPool:
                    yield {"run_id": s.run_id, "status": "lost", "error": "a worker process died"}
        finished = True
    finally:
        # Interrupted: do not wait for the runs in progress (each one commits whole or not at all).
        pool.shutdown(wait=finished, cancel_futures=True)


def run_ray(specs: Sequence[RunSpec], root: Path, address: str | None = None, workers: int | None = None,
            files: str = "object-store") -> Iterator[dict[str, Any]]:
    """Run as Ray tasks (one CPU each). Without ``address`` a local Ray instance with ``workers``
    CPUs is started; with one (``auto``, ``ray://host:10001`` or ``host:6379``) the cluster is used
    (every node needs ratelab installed).

    ``files``: ``object-store`` (default) — each task simulates into a folder on its own node and
    returns the run's files as bytes through Ray's object store; the driver writes them into the
    campaign folder with the same tmp-and-rename commit as the local engine, so no node but the
    driver's needs to see ``root``. ``shared`` — tasks write into ``root`` themselves, which every
    node must see at the same path (NFS or another shared file system).
    """
    if files not in RAY_FILES:
        raise InputError("--ray-files", files, f"expected one of {', '.join(RAY_FILES)}")
    try:
        import ray  # optional extra: pip install 'ratelab[ray]'
    except ImportError:
        raise InputError("--engine", "ray", "Ray is not installed (pip install 'ratelab[ray]')") from None
    started = False
    base = _base_dir()
    root = Path(root).resolve()
    if not ray.is_initialized():
        kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False, "configure_logging": False}
        if address:
            ray.init(address=address, **kwargs)
        else:
            # "local": always a new instance, never a cluster that `ray start` left recorded
            # in /tmp/ray (ray.init() alone would join that one, or fail on num_cpus).
            ray.init(address="local", num_cpus=workers or default_workers(), **kwargs)
        started = True
    try:
        if files == "shared":
            shared = ray.remote(num_cpus=1, max_retries=0)(execute_run)
            submit = lambda s: shared.remote(s.to_dict(), str(root), base)  # noqa: E731
        else:
            packed = ray.remote(num_cpus=1, max_retries=0)(execute_run_packed)
            submit = lambda s: packed.remote(s.to_dict(), base)  # noqa: E731
        # A bounded window of submitted runs: results wait in the object store only briefly and
        # an interrupted sweep leaves little queued on the cluster.
        window = max(32, 4 * int(ray.cluster_resources().get("CPU", 1)))
        todo = list(specs)[::-1]
        pending: dict[Any, RunSpec] = {}
        while todo or pending:
            while todo and len(pending) < window:
                s = todo.pop()
                pending[submit(s)] = s
            ready, _ = ray.wait(list(pending), num_returns=1)
            for ref in ready:
                s = pending.pop(ref)
                try:
                    summary = ray.get(ref)
                except Exception as exc:  # noqa: BLE001 - a dead worker or node
                    yield {"run_id": s.run_id, "status": "lost", "error": f"{type(exc).__name__}: {exc}"}
                    continue
                packed_files = summary.pop("files", None)
                if packed_files is not None:
                    commit_packed(root, s.run_id, packed_files)
                yield summary
    finally:
        if started:
            ray.shutdown()
