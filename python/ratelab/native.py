"""Access to the compiled simulator, ``ratelab._core``.

Imported lazily so that scenario loading, reports and ``--help`` work (and can be tested) without
the extension, and so that a missing build gives one clear line instead of an ImportError.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from ratelab.errors import InputError


def core() -> ModuleType:
    """The ``ratelab._core`` module, or an :class:`InputError` saying how to build it."""
    try:
        return importlib.import_module("ratelab._core")
    except ImportError as exc:
        raise InputError(
            "ratelab._core", "",
            f"the simulator extension is not built or does not load ({exc}); install with `pip install .`",
        ) from None


def core_errors() -> tuple[type[BaseException], ...]:
    """The exception classes the extension raises for bad input."""
    mod = core()
    return tuple(getattr(mod, n) for n in ("ConfigError", "TraceError") if hasattr(mod, n))


def controller_names() -> list[str]:
    return [c["name"] for c in core().controllers()]


def required_files() -> dict[str, str]:
    """{controller: the parameter that must name a file} for controllers that cannot run with
    their defaults (read from the core's registry entry, `required_file`)."""
    return {c["name"]: c["required_file"] for c in core().controllers() if c.get("required_file")}


def runnable_controller_names() -> list[str]:
    """Controllers that run with their default parameters."""
    return [c["name"] for c in core().controllers() if not c.get("required_file")]


def all_controller_names() -> list[str]:
    """"Every controller": the demo, a plan's ``controllers = "all"``, the leaderboard, the
    reproductions' baselines. The registry entry says (``in_all``: runs with its defaults and
    does congestion control)."""
    return [c["name"] for c in core().controllers() if c.get("in_all", not c.get("required_file"))]
