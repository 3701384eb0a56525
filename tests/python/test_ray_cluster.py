"""A real two-node Ray cluster on this machine: `ray start` for a head and a second node, both bound
to 127.0.0.1, then `ratelab sweep --engine ray --address …` with the default object-store file
transfer (no node writes into the campaign folder). Results equal the process pool's; killing the
second node mid-campaign loses no finished run and the next sweep completes the rest.

Each node is started with ``ray start --block`` in its own session and stopped by killing the
processes of that session: this stops exactly the nodes of this test, where ``ray stop`` would stop every Ray
instance of the user on the machine (other test sessions included).
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from conftest import require

ray = require("ray")

from test_campaign import TINY  # noqa: E402 - the campaign tests' one-flow scenario

SCENARIO = TINY.replace("duration_s = 3\n", "duration_s = 2400\n")  # runs of about 0.5 s: a node is caught mid-run
assert SCENARIO != TINY
PLAN = """
name = "mn"
controllers = ["gcc", "oracle"]
scenarios = ["tiny.toml"]
seeds = 5
"""
STARTUP_S = 240  # a loaded 2-core CI machine takes tens of seconds to start a Ray node


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _env() -> dict[str, str]:
    env = dict(os.environ)
    # The nodes and the driver import the same ratelab as this test (an installed one, or a source
    # tree with its extension built in place), not blindly the source tree beside the tests.
    import ratelab

    here = str(Path(ratelab.__file__).resolve().parents[1])
    env["PYTHONPATH"] = here + os.pathsep + env.get("PYTHONPATH", "")
    env["RAY_USAGE_STATS_ENABLED"] = "0"
    # Newer Rays turn token authentication on for a head started with `ray start`; a cluster
    # bound to loopback for one test needs none (the second node and the driver would need the token).
    env["RAY_AUTH_MODE"] = "disabled"
    return env


class Node:
    """One `ray start --block` in its own session, its output in a log file."""

    def __init__(self, args: list[str], log: Path, env: dict[str, str]):
        self.log = log
        ray_cli = shutil.which("ray") or str(Path(sys.executable).parent / "ray")
        self.proc = subprocess.Popen([ray_cli, "start", "--block", "--node-ip-address", "127.0.0.1", "--num-cpus", "1",
                                      "--disable-usage-stats", *args], stdout=log.open("w"), stderr=subprocess.STDOUT,
                                     env=env, start_new_session=True)

    def wait_started(self) -> None:
        deadline = time.monotonic() + STARTUP_S
        while time.monotonic() < deadline:
            if "Ray runtime started" in self.log.read_text(errors="replace"):
                return
            if self.proc.poll() is not None:
                break
            time.sleep(0.5)
        pytest.fail(f"ray start did not come up:\n{self.log.read_text(errors='replace')[-3000:]}")

    def _members(self) -> list[tuple[int, bytes]]:
        """(pid, command line) of this node's processes: its session (workers get their own
        process group but stay in the session of `ray start`)."""
        out = []
        for proc in Path("/proc").iterdir():
            try:
                if proc.name.isdigit() and os.getsid(int(proc.name)) == self.proc.pid:
                    out.append((int(proc.name), (proc / "cmdline").read_bytes()))
            except OSError:
                continue
        return out

    def busy(self) -> bool:
        """Whether one of this node's workers is executing a run (Ray titles it ``ray::<function>``)."""
        return any(cmd.startswith(b"ray::execute_run") for _, cmd in self._members())

    def kill(self) -> None:
        """SIGKILL to every process of the node: a crashed machine, as far as the cluster can tell."""
        for pid, _ in self._members():
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        self.proc.wait(timeout=60)


def _sweep(args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "ratelab", "sweep", *args], cwd=cwd, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _summary(root: Path) -> list[tuple]:
    from ratelab.campaign.store import connect

    q = ("SELECT controller, scenario, seed, id, packets_sent, throughput_kbps, owd_ms_p95, link_utilization "
         "FROM flows ORDER BY ALL")
    return connect(root).execute(q).fetchall()


def test_two_node_cluster_without_shared_disk_matches_the_pool_and_survives_a_lost_node(tmp_path, core):
    from ratelab.campaign.plan import load_plan
    from ratelab.campaign.sweep import campaign_root, campaign_status, plan_specs

    (tmp_path / "tiny.toml").write_text(SCENARIO)
    (tmp_path / "plan.toml").write_text(textwrap.dedent(PLAN))
    env = _env()
    port = _free_port()
    address = f"127.0.0.1:{port}"
    nodes: list[Node] = []
    try:
        head = Node(["--head", "--port", str(port), "--include-dashboard=false"], tmp_path / "head.log", env)
        nodes.append(head)
        head.wait_started()
        second = Node(["--address", address], tmp_path / "second.log", env)
        nodes.append(second)
        second.wait_started()

        sweep = _sweep(["plan.toml", "--out", "ray", "--engine", "ray", "--address", address], tmp_path, env)
        # stop the second node while it executes a run (and the head goes on with the rest)
        deadline = time.monotonic() + 180
        while not second.busy() and sweep.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        was_busy = second.busy()
        second.kill()
        out, err = sweep.communicate(timeout=300)
        assert sweep.returncode == 0, err
        assert was_busy, f"the second node ran no task before the sweep ended:\n{err}"

        p = load_plan(str(tmp_path / "plan.toml"))
        specs = plan_specs(p)
        root = campaign_root(p, tmp_path / "ray")
        st = campaign_status(root, specs)
        assert not st["failed"], err
        reported_done = {ln.split()[2] for ln in err.splitlines() if ln.startswith("[") and ln.split()[1] == "done"}
        assert set(st["done"]) == reported_done, err  # every run the driver saw finish is on disk, whole
        assert len(st["done"]) + len(st["pending"]) == len(specs)
        assert st["pending"] and " lost " in err, err  # the run on the stopped node was lost, not written
        assert "lost    controller=" in err and "failed  " not in err, err  # named lost (pending), not failed
        kept = {d: (root / d / "flows.parquet").stat().st_mtime_ns for d in st["done"]}
        assert not any((root / ".tmp").iterdir())

        # the next sweep, on the head alone, runs exactly the pending ones
        again = _sweep(["plan.toml", "--out", "ray", "--engine", "ray", "--address", address, "-q"], tmp_path, env)
        out2, err2 = again.communicate(timeout=300)
        assert again.returncode == 0, err2
        assert f"ran {len(st['pending'])} in" in out2 and f"{len(kept)} already done" in out2, out2
        assert all((root / d / "flows.parquet").stat().st_mtime_ns == t for d, t in kept.items())
        assert len(campaign_status(root, specs)["done"]) == len(specs)
    finally:
        for n in reversed(nodes):
            n.kill()

    local = subprocess.run([sys.executable, "-m", "ratelab", "sweep", "plan.toml", "--out", "local", "-j", "2", "-q"],
                           cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert local.returncode == 0, local.stderr
    ray_rows = _summary(root)
    assert len(ray_rows) == len(specs) and ray_rows == _summary(campaign_root(p, tmp_path / "local"))
