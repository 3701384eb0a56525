"""Register ``ratelab/BandwidthEstimation-v0`` with gymnasium without importing gymnasium.

Importing gymnasium takes seconds, too long for every ``import ratelab`` (the CLI included), and
the environment must not pull in torch. So ``import ratelab`` registers the id at once if
gymnasium is already imported, and otherwise puts a finder on ``sys.meta_path`` that registers
it right after gymnasium's own module has run. The registration names the environment by entry
point (``ratelab.rl.env:...``), so neither the environment module nor torch is imported until
``gymnasium.make``.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
from typing import Any


def _register() -> None:
    from ratelab.rl import register_env

    register_env()


class _AfterGymnasium(importlib.abc.MetaPathFinder):
    """Finds gymnasium with the other finders, then wraps its loader to register afterwards."""

    def find_spec(self, name: str, path: Any, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        if name != "gymnasium":
            return None
        sys.meta_path.remove(self)
        spec = None
        for finder in list(sys.meta_path):  # the finders after this one, as the import would
            find = getattr(finder, "find_spec", None)
            spec = find(name, path, target) if find is not None else None
            if spec is not None:
                break
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        loader = spec.loader
        run = loader.exec_module

        def exec_module(module: Any) -> None:
            run(module)
            _register()

        loader.exec_module = exec_module  # type: ignore[method-assign]  # this spec's loader only
        return spec


def register_when_gymnasium_loads() -> None:
    if "gymnasium" in sys.modules:
        try:
            _register()
        except ImportError:  # pragma: no cover - a broken gymnasium install
            pass
        return
    if not any(isinstance(f, _AfterGymnasium) for f in sys.meta_path):
        sys.meta_path.insert(0, _AfterGymnasium())
