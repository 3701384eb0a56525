"""Shared fixtures.

Tests using the ``core`` fixture need the compiled ``ratelab._core`` and fail when it is not
built (:func:`require`: what the README installs is never a reason to skip); the ``fake_core`` fixture swaps in a small pure-Python stand-in so that the front end can
be tested on its own.
"""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))  # for fake_core


@pytest.fixture
def fake_core(monkeypatch):
    import fake_core as fc

    monkeypatch.setitem(sys.modules, "ratelab._core", fc)
    return fc


#: What the README installs for the tests; every module it provides is :func:`require`-d, not skipped.
INSTALL = "pip install '.[test,rl]' (or maturin develop for ratelab._core)"


def require(module: str):
    """Import ``module``, which the README's install provides (the package, the ``test`` and
    ``rl`` extras): when it is missing the test fails saying what to install. A skip would hide
    the missing install step on a fresh machine and leave what it tests untested."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:  # pragma: no cover - depends on the install
        pytest.fail(f"{module} does not import ({exc}): {INSTALL}", pytrace=False)


@pytest.fixture(scope="session")
def core():
    return require("ratelab._core")


def restore_default_sigint() -> None:
    """``preexec_fn`` for a child that must die of Ctrl-C as a terminal's child does: a suite started
    in the background inherits SIGINT ignored, and the child would inherit that too."""
    import signal
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def run_cli(*args: str, cwd: Path | None = None, timeout: float = 600) -> subprocess.CompletedProcess:
    """Run the ``ratelab`` command in a fresh interpreter (as a user would)."""
    env = dict(os.environ, COLUMNS="200", PYTHONWARNINGS="ignore")
    return subprocess.run([sys.executable, "-m", "ratelab", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout)


@pytest.fixture
def cli():
    return run_cli
