"""Campaign folders behind a ``pyarrow.fs`` URI: ``--out s3://bucket/prefix``, ``gs://…``, ``file:///…``.

Runs are simulated into a local mirror of the campaign (the cache, ``~/.cache/ratelab/remote/``)
exactly as for a local ``--out``; the driver uploads each finished run as it arrives: the run's
files first, then its completion marker ``_COMPLETE`` last. Object stores have no rename, so the
marker is what makes a run complete there: a run without a marker is pending whatever files it
has (the upload of a killed sweep), and the next sweep replaces them. Retrying a failed run
deletes its marker before anything else, so the store never shows a run complete with a mix of
old and new files.

The cache is only a copy: :func:`sync` makes it mirror the complete runs of the store (downloads
what it lacks, drops what the store does not hold complete), so resume, ``--status``, the summary
and ``ratelab query`` (DuckDB over the cache) see the store's state, from any machine.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ratelab.errors import InputError, one_line
from ratelab.run.results import write_text_atomic
from ratelab.campaign.store import DONE_FILE, ERROR_FILE, TMP_DIR

MARKER = "_COMPLETE"
#: The local copy of a remote marker: the remote marker's modification time (the run's version).
LOCAL_MARKER = ".synced"


def is_uri(out: Any) -> bool:
    """A ``scheme://`` string (``file://`` included); plain paths stay on the local fast path."""
    return isinstance(out, str) and "://" in out


@dataclass
class RemoteRoot:
    """A campaign in a pyarrow file system: ``path`` in ``fs``, mirrored in the local ``cache``."""

    uri: str
    fs: Any
    path: str
    cache: Path

    def __str__(self) -> str:
        return self.uri

    def join(self, *parts: str) -> str:
        return "/".join([self.path, *parts])


def cache_base() -> Path:
    env = os.environ.get("RATELAB_CACHE")
    if env:
        return Path(env).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(xdg) / "ratelab" / "remote"


def remote_root(out: str, name: str) -> RemoteRoot:
    """The campaign ``name`` under the URI ``out``; a URI pyarrow cannot open is an InputError."""
    from pyarrow import fs as pafs

    try:
        fs, base = pafs.FileSystem.from_uri(_single_put(out))
    except Exception as exc:  # noqa: BLE001 - ArrowInvalid, ArrowNotImplementedError, OSError
        raise InputError("--out", out, f"not a usable file system URI ({one_line(str(exc), 300)})") from None
    path = base.rstrip("/") + "/" + name if base.strip("/") else name
    uri = out.split("?", 1)[0].rstrip("/") + "/" + name
    key = hashlib.sha256(f"{out}\0{name}".encode()).hexdigest()[:16]
    return RemoteRoot(uri, fs, path, cache_base() / key / name)


def _single_put(out: str) -> str:
    """An s3:// URI opens with ``allow_delayed_open=true`` unless the user says otherwise: every file
    ratelab writes is small, and so goes up as one PutObject instead of a three-request multipart
    upload (fewer round trips; some S3-compatible servers, e.g. moto 5.2.1, fail the multipart one)."""
    head, _, query = out.partition("?")
    if not head.startswith("s3://") or "allow_delayed_open=" in query:
        return out
    return f"{head}?{query + '&' if query else ''}allow_delayed_open=true"


def split_uri(uri: str) -> tuple[str, str]:
    """``scheme://bucket/prefix/name?query`` → (``scheme://bucket/prefix?query``, ``name``)."""
    head, _, query = uri.partition("?")
    parent, _, name = head.rstrip("/").rpartition("/")
    if not name or parent.endswith(":/") or parent.endswith(":"):
        raise InputError(uri, "", "expected a campaign URI such as s3://bucket/prefix/CAMPAIGN")
    return parent + ("?" + query if query else ""), name


def find_campaign(campaign: str, out: str) -> Path:
    """The local folder to read a campaign from: ``campaign`` as a folder or URI, else under
    ``out`` (a folder or URI). A campaign in a store is read through its mirror, synced first."""
    if is_uri(campaign) or is_uri(out):
        parent, name = split_uri(campaign) if is_uri(campaign) else (out, campaign)
        r = remote_root(parent, name)
        if not listing(r) and not _exists(r, "plan.json"):
            raise InputError(campaign, "", f"no campaign at {r.uri}")
        sync(r)
        return r.cache
    root = Path(campaign)
    if not (root.is_dir() and (root / "plan.json").is_file()):
        root = Path(out) / campaign
    if not root.is_dir():
        raise InputError(campaign, "", f"no campaign folder (looked for {campaign} and {Path(out) / campaign})")
    return root


def _exists(r: RemoteRoot, name: str) -> bool:
    try:
        return r.fs.get_file_info(r.join(name)).is_file
    except Exception as exc:  # noqa: BLE001
        raise _wrap(r, f"read {name}", exc) from None


def _wrap(r: RemoteRoot, what: str, exc: BaseException) -> InputError:
    return InputError(r.uri, "", f"cannot {what} ({one_line(str(exc), 300)})")


def listing(r: RemoteRoot) -> dict[str, dict[str, Any]]:
    """``run_id → {file name: modification time}`` of every run folder in the store: one
    recursive listing (a few requests per thousand objects on S3), not one request per run."""
    from pyarrow import fs as pafs

    try:
        infos = r.fs.get_file_info(pafs.FileSelector(r.path, recursive=True, allow_not_found=True))
    except Exception as exc:  # noqa: BLE001 - network, permissions, a missing bucket
        raise _wrap(r, "list the campaign", exc) from None
    runs: dict[str, dict[str, Any]] = {}
    prefix = r.path.rstrip("/") + "/"
    for info in infos:
        if info.type != pafs.FileType.File or not info.path.startswith(prefix):
            continue
        parts = info.path[len(prefix):].split("/")
        if len(parts) < 4 or not (parts[0].startswith("controller=") and parts[1].startswith("scenario=")
                                  and parts[2].startswith("seed=")):
            continue
        runs.setdefault("/".join(parts[:3]), {})["/".join(parts[3:])] = info.mtime_ns if info.mtime_ns is not None else info.size
    return runs


def complete_states(runs: dict[str, dict[str, Any]]) -> dict[str, str]:
    """``run_id → "done" | "failed"`` of the runs whose marker is in the store."""
    out = {}
    for run_id, files in runs.items():
        if MARKER in files:
            out[run_id] = "done" if DONE_FILE in files else "failed" if ERROR_FILE in files else "pending"
    return {k: v for k, v in out.items() if v != "pending"}


def sync(r: RemoteRoot) -> dict[str, str]:
    """Make the cache mirror the store's complete runs; returns their states (see module doc)."""
    runs = listing(r)
    states = complete_states(runs)
    cache = r.cache
    cache.mkdir(parents=True, exist_ok=True)
    local = {str(d.relative_to(cache)) for d in cache.glob("controller=*/scenario=*/seed=*") if d.is_dir()}
    changed = False
    for run_id in local:
        version = _read(cache / run_id / LOCAL_MARKER)
        if run_id not in states or version != str(runs[run_id][MARKER]):
            shutil.rmtree(cache / run_id, ignore_errors=True)
            changed = True
    for run_id in states:
        if not (cache / run_id / LOCAL_MARKER).is_file():
            _download(r, run_id, runs[run_id])
    if changed:  # a run id may come back with other content: the summary is rebuilt from scratch
        (cache / "summary.parquet").unlink(missing_ok=True)
    if not (cache / "plan.json").is_file() and _exists(r, "plan.json"):
        try:
            with r.fs.open_input_stream(r.join("plan.json")) as src:
                data = src.read()
        except Exception as exc:  # noqa: BLE001
            raise _wrap(r, "read plan.json", exc) from None
        write_text_atomic(cache / "plan.json", data.decode("utf-8"))
    return states


def _read(p: Path) -> str | None:
    try:
        return p.read_text(encoding="utf-8")
    except OSError:
        return None


def _download(r: RemoteRoot, run_id: str, files: dict[str, Any]) -> None:
    tmp_base = r.cache / TMP_DIR
    tmp_base.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="dl-", dir=tmp_base))
    try:
        for name in files:
            if name == MARKER:
                continue
            target = work / name
            target.parent.mkdir(parents=True, exist_ok=True)
            try:
                with r.fs.open_input_stream(r.join(run_id, name)) as src:
                    target.write_bytes(src.read())
            except Exception as exc:  # noqa: BLE001
                raise _wrap(r, f"read {run_id}/{name}", exc) from None
        (work / LOCAL_MARKER).write_text(str(files[MARKER]), encoding="utf-8")
        dst = r.cache / run_id
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.rmtree(dst, ignore_errors=True)
        os.rename(work, dst)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def upload_run(r: RemoteRoot, run_id: str) -> None:
    """Copy the committed local run folder ``cache/run_id`` to the store: marker deleted first,
    then the old files, the new files, and the marker last (see module doc)."""
    from pyarrow import fs as pafs

    src = r.cache / run_id
    dst = r.join(run_id)
    try:
        r.fs.delete_file(r.join(run_id, MARKER))
    except FileNotFoundError:
        pass
    except Exception as exc:  # noqa: BLE001
        raise _wrap(r, f"write {run_id}", exc) from None
    try:
        r.fs.delete_dir_contents(dst, missing_dir_ok=True)
        r.fs.create_dir(dst, recursive=True)
        for f in sorted(p for p in src.rglob("*") if p.is_file() and p.name != LOCAL_MARKER):
            rel = f.relative_to(src).as_posix()
            if "/" in rel:
                r.fs.create_dir(r.join(run_id, rel.rsplit("/", 1)[0]), recursive=True)
            with r.fs.open_output_stream(r.join(run_id, rel)) as out:
                out.write(f.read_bytes())
        with r.fs.open_output_stream(r.join(run_id, MARKER)) as out:
            out.write(b"complete\n")
        info = r.fs.get_file_info(r.join(run_id, MARKER))
    except Exception as exc:  # noqa: BLE001
        raise _wrap(r, f"write {run_id}", exc) from None
    if info.type != pafs.FileType.File:
        raise InputError(r.uri, "", f"the marker of {run_id} is not readable after writing it")
    version = info.mtime_ns if info.mtime_ns is not None else info.size
    (src / LOCAL_MARKER).write_text(str(version), encoding="utf-8")


def upload_file(r: RemoteRoot, local: Path, name: str) -> None:
    """Write one campaign-level file (plan.json, summary.parquet): a single object put, whole or absent."""
    try:
        r.fs.create_dir(r.path, recursive=True)
        with r.fs.open_output_stream(r.join(name)) as out:
            out.write(local.read_bytes())
    except Exception as exc:  # noqa: BLE001
        raise _wrap(r, f"write {name}", exc) from None
