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


#: Controllers that cannot run without a parameter (the file of a user's model): "every
#: controller" (demo, `controllers = "all"`, the leaderboard, reproductions) leaves them out.
NEEDS_PARAMS = {"onnx": "model"}


def controller_names() -> list[str]:
    return [c["name"] for c in core().controllers()]


def runnable_controller_names() -> list[str]:
    """Controllers that run with their default parameters."""
    return [n for n in controller_names() if n not in NEEDS_PARAMS]
