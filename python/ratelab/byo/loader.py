"""Finding and building Python controllers by name.

A controller name that is not a built-in is one of:

* ``path/to/my_cc.py:MyCC`` — a class in a Python file (a relative path is taken from the current
  directory, or from ``$RATELAB_BASE_DIR`` where a sweep's worker runs);
* ``package.module:MyCC`` — a class in an importable module (the current directory is tried too);
* a name registered in the entry-point group ``ratelab.controllers`` (``my-cc = "pkg.mod:MyCC"``).

The core's controller factory (``ratelab._core``) calls :func:`_build` for every name its
registry does not know; everything a user can get wrong here is a :class:`SpecError` (one line:
the field and what is wrong).
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import inspect
import json
import os
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

from ratelab.errors import InputError
from ratelab.byo.api import SENDER_EVENTS, Controller, ReceiverEstimator

ENTRY_POINT_GROUP = "ratelab.controllers"


class SpecError(Exception):
    """A Python controller cannot be found or built: ``field`` (``controller`` or
    ``params.<name>``) and ``message``, as the core's configuration errors."""

    def __init__(self, field: str, message: str):
        super().__init__(message)
        self.field = field
        self.message = message


class ControllerError(InputError):
    """A Python controller raised (or returned an invalid update) during a run. Its line names the
    controller, the event and the simulated time; the user's exception is ``__cause__``."""

    def __init__(self, message: str, traceback_text: str = ""):
        super().__init__("", "", message)
        #: The user code's traceback (printed with ``ratelab --debug``, stored in error.json).
        self.traceback_text = traceback_text


def is_python_spec(name: str) -> bool:
    """Whether ``name`` is a ``file.py:Class`` / ``module:Class`` spec or a registered name."""
    return ":" in name or name in registered()


def registered() -> dict[str, str]:
    """Entry points of the group ``ratelab.controllers``: name → ``module:Class``."""
    try:
        eps = metadata.entry_points(group=ENTRY_POINT_GROUP)
    except Exception:  # noqa: BLE001 - a broken installed distribution must not break ratelab
        return {}
    return {ep.name: ep.value for ep in eps}


def base_dir() -> Path:
    return Path(os.environ.get("RATELAB_BASE_DIR") or os.getcwd())


def resolve(name: str) -> type:
    """The class a controller name stands for (importing its file or module)."""
    target = registered().get(name) if ":" not in name else name
    if target is None:
        raise SpecError("controller", f"unknown controller '{name}'")
    where, sep, cls_name = target.rpartition(":")
    if not sep or not where or not cls_name.isidentifier():
        raise SpecError("controller", f"'{target}': expected path/to/file.py:Class or package.module:Class")
    module = _load_file(where, target) if where.endswith(".py") or "/" in where or os.sep in where else _load_module(where, target)
    obj = module
    for part in cls_name.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            raise SpecError("controller", f"'{target}': {where} has no class '{cls_name}'")
    if not inspect.isclass(obj):
        raise SpecError("controller", f"'{target}': {cls_name} is not a class")
    return obj


def _load_file(path_text: str, target: str):
    path = Path(path_text).expanduser()
    if not path.is_absolute():
        path = base_dir() / path
    if not path.is_file():
        raise SpecError("controller", f"'{target}': no such file {path}")
    path = path.resolve()
    mod_name = "ratelab_user_" + hashlib.sha1(str(path).encode()).hexdigest()[:12]
    if mod_name in sys.modules:
        return sys.modules[mod_name]
    spec = importlib.util.spec_from_file_location(mod_name, path)
    if spec is None or spec.loader is None:
        raise SpecError("controller", f"'{target}': cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[mod_name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:  # noqa: BLE001 - the user's module failed to import: one line
        del sys.modules[mod_name]
        raise SpecError("controller", f"'{target}': importing {path.name} failed: {_exc_line(exc)}") from exc
    return module


def _load_module(module: str, target: str):
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        base = str(base_dir())
        if exc.name and module.startswith(exc.name) and base not in sys.path:
            sys.path.append(base)  # `package.module` next to where ratelab was started
            try:
                return importlib.import_module(module)
            except ModuleNotFoundError:
                pass
            except Exception as exc2:  # noqa: BLE001
                raise SpecError("controller", f"'{target}': importing {module} failed: {_exc_line(exc2)}") from exc2
        raise SpecError("controller", f"'{target}': no module named '{module}'") from None
    except Exception as exc:  # noqa: BLE001
        raise SpecError("controller", f"'{target}': importing {module} failed: {_exc_line(exc)}") from exc


def _exc_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def check_params(cls: type, params: dict[str, Any], label: str) -> None:
    """Unknown constructor parameters are an error naming the parameter."""
    try:
        sig = inspect.signature(cls)
    except (TypeError, ValueError):
        return
    ps = sig.parameters.values()
    if any(p.kind is p.VAR_KEYWORD for p in ps):
        return
    known = [p.name for p in ps if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    for k in params:
        if k not in known:
            raise SpecError(f"params.{k}", f"unknown parameter of {label} (known: {', '.join(known) or 'none'})")


def _overridden(cls: type, base: type, method: str) -> bool:
    mine = getattr(cls, method, None)
    return callable(mine) and mine is not getattr(base, method, None)


def _build(name: str, params_json: str, seed: int):
    """Called by the core for a name its registry does not know. Returns None when ``name`` is not
    a Python controller either, else ``(instance, side, tick_s, events, pacing_factor)``:
    ``events`` lists the sender methods to call (``on_start`` always)."""
    if not is_python_spec(name):
        return None
    cls = resolve(name)
    params = json.loads(params_json) if params_json else None
    if params is None:
        params = {}
    if not isinstance(params, dict):
        raise SpecError("params", "expected a table of parameters")
    check_params(cls, params, name)
    try:
        obj = cls(**params)
    except Exception as exc:  # noqa: BLE001 - the user's constructor failed: one line
        raise SpecError("controller", f"{name}.__init__: {_exc_line(exc)}") from exc
    import numpy as np

    obj.rng = np.random.default_rng(seed)
    side = str(getattr(obj, "side", "sender"))
    if side not in ("sender", "receiver"):
        raise SpecError("controller", f"{name}: side must be 'sender' or 'receiver', not {side!r}")
    tick = getattr(obj, "tick_interval_s", 0.025 if side == "sender" else 0.05)
    try:
        tick = float(tick)
    except (TypeError, ValueError):
        tick = float("nan")
    if not (0.001 <= tick <= 10.0):
        raise SpecError("controller", f"{name}: tick_interval_s must be a number of seconds in [0.001, 10], not {getattr(obj, 'tick_interval_s', None)!r}")
    if side == "receiver":
        if not callable(getattr(obj, "on_tick", None)) or not _overridden(type(obj), ReceiverEstimator, "on_tick"):
            raise SpecError("controller", f"{name}: a receiver-side estimator must define on_tick(now_s, packets)")
        pf = float(getattr(obj, "pacing_factor", 1.1))
        return obj, side, tick, [], pf
    cls_ = type(obj)
    events = [m for m in SENDER_EVENTS if m == "on_start" or (_overridden(cls_, Controller, m) if issubclass(cls_, Controller) else callable(getattr(obj, m, None)))]
    return obj, side, tick, events, 1.0


def _controller_error(message: str, exc: BaseException | None, tb_obj: Any = None) -> ControllerError:
    """The exception the binding raises when a Python controller failed during a run."""
    import traceback

    if exc is not None and tb_obj is not None:
        exc = exc.with_traceback(tb_obj)
    tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)) if exc is not None else ""
    err = ControllerError(message, tb)
    err.__cause__ = exc
    return err


def describe(name: str) -> str:
    """One line for ``ratelab list``: the target and the class docstring's first line."""
    target = registered().get(name, name)
    try:
        cls = resolve(name)
        doc = (inspect.getdoc(cls) or "").strip().splitlines()
        first = doc[0] if doc else ""
    except SpecError as exc:
        first = f"(broken: {exc.message})"
    return f"Python controller {target}" + (f": {first}" if first else "")


def check_name(name: str, known: list[str]) -> None:
    """For ``-c`` and plans: a built-in name, or a Python controller that can be found."""
    if name in known:
        return
    if not is_python_spec(name):
        raise InputError("-c", name, f"unknown controller (known: {', '.join(known)}; or path/to/file.py:Class, "
                                     f"package.module:Class, a name registered in '{ENTRY_POINT_GROUP}')")
    try:
        resolve(name)
    except SpecError as exc:
        raise InputError("-c", "", exc.message) from None

