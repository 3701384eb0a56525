"""Campaigns written through a ``pyarrow.fs`` URI (``--out file:///…``, ``s3://…``): per-run
completion markers, resume, ``--status``, ``ratelab query`` and the summary against the store.

The S3 test runs against a real S3-compatible server (moto's, started as a subprocess on
127.0.0.1) when ``moto[server]`` is installed; it is skipped with the reason otherwise."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from conftest import require

from ratelab.campaign.plan import load_plan
from test_campaign import write_plan

PLAN = """
name = "remote"
controllers = ["gcc", "oracle"]
scenarios = ["tiny.toml"]
seeds = [1, 2]
[grid]
"link.loss" = [0, 3]
"""
Q = "SELECT controller, scenario, seed, id, throughput_kbps, owd_ms_p95 FROM flows ORDER BY ALL"


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("RATELAB_CACHE", str(tmp_path / "cache"))


def _objects(fs, path: str) -> dict[str, int]:
    from pyarrow import fs as pafs

    infos = fs.get_file_info(pafs.FileSelector(path, recursive=True, allow_not_found=True))
    return {i.path[len(path) + 1:]: i.size for i in infos if i.type == pafs.FileType.File}


def _check_store(out_uri: str, tmp_path: Path) -> None:
    """Sweep into the store, compare with a local sweep, then resume after damage."""
    from ratelab.campaign import remote
    from ratelab.campaign.store import connect
    from ratelab.campaign.sweep import campaign_root, campaign_status, plan_specs, run_sweep

    p = load_plan(str(write_plan(tmp_path, PLAN)))
    r = campaign_root(p, out_uri)
    assert isinstance(r, remote.RemoteRoot)
    specs = plan_specs(p)
    res = run_sweep(p, r, workers=2, specs=specs)
    assert (res.total, res.done, res.failed) == (8, 4, 4)
    objs = _objects(r.fs, r.path)
    done = [s.run_id for s in specs if "loss_0" in s.run_id]
    failed = [s.run_id for s in specs if "loss_3" in s.run_id]
    for run_id in done:
        assert {f"{run_id}/flows.parquet", f"{run_id}/series.parquet", f"{run_id}/_COMPLETE"} <= set(objs)
    for run_id in failed:
        assert {f"{run_id}/error.json", f"{run_id}/_COMPLETE"} <= set(objs)
    assert "plan.json" in objs and "summary.parquet" in objs
    st = campaign_status(r, specs)
    assert (sorted(st["done"]), sorted(st["failed"]), st["pending"]) == (sorted(done), sorted(failed), [])

    # identical to a sweep into a local folder
    local = campaign_root(p, tmp_path / "local")
    run_sweep(p, local, workers=2, specs=specs)
    expected = connect(local).execute(Q).fetchall()
    assert connect(r.cache).execute(Q).fetchall() == expected

    # a fresh machine (empty cache) sees the same through the store alone
    import shutil

    shutil.rmtree(r.cache.parent)
    assert campaign_status(r, specs)["done"] == sorted(done, key=[s.run_id for s in specs].index)
    assert connect(r.cache).execute(Q).fetchall() == expected
    with r.fs.open_input_file(r.join("summary.parquet")) as fh:
        summary = pq.read_table(fh)
    assert summary.num_rows == len(expected)

    # damage: one run's marker gone (an upload cut short), one run's files without a marker
    lost, half = done[0], done[1]
    r.fs.delete_file(r.join(lost, "_COMPLETE"))
    r.fs.delete_file(r.join(half, "_COMPLETE"))
    r.fs.delete_file(r.join(half, "series.parquet"))
    st = campaign_status(r, specs)
    assert sorted(st["pending"]) == sorted([lost, half]) and len(st["done"]) == 2
    kept = {k: v for k, v in _objects(r.fs, r.path).items() if k.startswith(done[2]) or k.startswith(done[3])}
    res = run_sweep(p, r, workers=2, specs=specs)
    # the two pending runs and the failed ones (retried) ran, the finished ones did not
    assert (res.skipped, res.done, res.failed) == (2, 2, 4)
    st = campaign_status(r, specs)
    assert sorted(st["done"]) == sorted(done) and not st["pending"]
    assert {k: v for k, v in _objects(r.fs, r.path).items() if k in kept} == kept
    assert connect(r.cache).execute(Q).fetchall() == expected
    # the summary in the store equals a full rebuild from the runs
    with r.fs.open_input_file(r.join("summary.parquet")) as fh:
        assert pq.read_table(fh).sort_by("id").num_rows == len(expected)


def test_file_uri_store(tmp_path, core, cli):
    out = f"file://{tmp_path}/store"
    _check_store(out, tmp_path)
    assert (tmp_path / "store" / "remote" / "summary.parquet").is_file()
    # the CLI: --status and query against the URI (a fresh cache)
    env_cache = tmp_path / "cache2"
    os.environ["RATELAB_CACHE"] = str(env_cache)
    try:
        plan_path = str(tmp_path / "plan.toml")
        r = cli("sweep", plan_path, "--out", out, "--status")
        assert r.returncode == 0 and "done 4  failed 4  pending 0  total 8" in r.stdout, r.stdout + r.stderr
        r = cli("query", f"{out}/remote", "--format", "csv", "SELECT count(*) AS n FROM runs")
        assert r.returncode == 0 and r.stdout.splitlines() == ["n", "4"], r.stderr
        r = cli("query", "remote", "--out", out, "--format", "csv", "SELECT count(*) AS n FROM failures")
        assert r.returncode == 0 and r.stdout.splitlines() == ["n", "4"], r.stderr
    finally:
        os.environ.pop("RATELAB_CACHE", None)


@pytest.mark.parametrize("out, says", [
    ("nosuchfs://bucket/x", "not a usable file system URI"),
    ("s3://bucket/x?endpoint_override=127.0.0.1:9&scheme=http&region=us-east-1", "cannot list the campaign"),
])
def test_bad_or_unreachable_uri_is_one_line_exit_2(tmp_path, cli, out, says):
    plan_path = write_plan(tmp_path, PLAN)
    env = dict(os.environ, AWS_ACCESS_KEY_ID="x", AWS_SECRET_ACCESS_KEY="x", AWS_EC2_METADATA_DISABLED="true")
    r = subprocess.run([sys.executable, "-m", "ratelab", "sweep", str(plan_path), "--out", out, "-q"],
                       capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and says in lines[0], r.stderr


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def s3_server(monkeypatch):
    require("moto.server")
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    pytest.fail("the moto S3 server did not start")
                time.sleep(0.2)
        for k, v in {"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test", "AWS_EC2_METADATA_DISABLED": "true"}.items():
            monkeypatch.setenv(k, v)
        yield f"127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_s3_store(tmp_path, core, s3_server):
    from pyarrow import fs as pafs

    fs = pafs.S3FileSystem(endpoint_override=s3_server, scheme="http", region="us-east-1",
                           access_key="test", secret_key="test", allow_bucket_creation=True)
    fs.create_dir("ratelab-test")
    _check_store(f"s3://ratelab-test/campaigns?endpoint_override={s3_server}&scheme=http&region=us-east-1", tmp_path)


def test_s3_uri_opens_with_single_put():
    """Small files go up as one PutObject (allow_delayed_open) unless the user chose otherwise."""
    from ratelab.campaign.remote import _single_put

    assert _single_put("s3://b/p") == "s3://b/p?allow_delayed_open=true"
    assert _single_put("s3://b/p?region=eu-west-1") == "s3://b/p?region=eu-west-1&allow_delayed_open=true"
    assert _single_put("s3://b/p?allow_delayed_open=false") == "s3://b/p?allow_delayed_open=false"
    assert _single_put("gs://b/p") == "gs://b/p" and _single_put("file:///tmp/x") == "file:///tmp/x"
