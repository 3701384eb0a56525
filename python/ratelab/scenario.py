"""Scenarios: TOML files (or built-in names) mapped 1:1 onto the core's JSON schema.

The front end's jobs are the ones the sans-IO core cannot do: find the file, apply ``--set``
overrides, and turn ``link.trace`` into an absolute path. Everything else (unknown keys, types,
ranges) is checked by the core, which names the offending field.
"""

from __future__ import annotations

import copy
import json
import math
import re
import sys
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Iterable, Mapping

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

from ratelab.errors import InputError, from_core

PACKAGE_DIR = Path(str(resources.files("ratelab")))
SCENARIO_DIR = PACKAGE_DIR / "scenarios"
TRACE_DIR = PACKAGE_DIR / "traces"
#: Files beside the traces that describe them (the index, the train/test split): never traces.
TRACE_METADATA = ("index.csv", "split.csv")

#: The link sections of a scenario: the bottleneck and the optional reverse one (RFC 8867 5.3).
LINK_SECTIONS = ("link", "reverse_link")

# Keys of which a document may hold only one: setting one with --set drops the others, so that
# e.g. `--set link.capacity_kbps=2000` works on a scenario defined by steps or by a trace. Both
# link sections have the same rules.
_EXCLUSIVE = {
    path: rule
    for section in LINK_SECTIONS
    for path, rule in (((section,), ({"capacity_kbps", "steps", "trace", "trace_content"},)),
                       ((section, "queue"), ({"bytes", "packets", "ms"},)))
}


@dataclass
class Scenario:
    """A scenario document ready for the core, plus where it came from (for error lines)."""

    data: dict[str, Any]
    #: What the user named: a file path as typed or a built-in name.
    source: str
    #: The file it was read from (None for documents built in code).
    path: Path | None = None
    builtin: bool = False
    overrides: list[str] = field(default_factory=list)

    @property
    def name(self) -> str:
        return str(self.data.get("name", self.source))

    @property
    def description(self) -> str:
        return str(self.data.get("description", ""))

    @property
    def duration_s(self) -> float:
        return float(self.data.get("duration_s", 0.0))

    def to_json(self) -> str:
        try:
            return json.dumps(self.data, allow_nan=False, default=str)
        except ValueError:
            raise InputError(self.source, _first_nonfinite(self.data), "nan and inf are not allowed") from None

    def media_controllers(self) -> list[str]:
        """Controller names of the media flows, in order, without repeats."""
        names = [f.get("controller", "gcc") for f in self.data.get("flows", []) if isinstance(f, dict) and f.get("kind") == "media"]
        return list(dict.fromkeys(n for n in names if isinstance(n, str)))  # a non-name fails validation later

    def with_overrides(self, overrides: Iterable[str]) -> "Scenario":
        """A copy with more ``key=value`` overrides applied (trace paths resolved again)."""
        overrides = list(overrides)
        data = copy.deepcopy(self.data)
        apply_overrides(data, overrides)
        sc = Scenario(data, self.source, self.path, self.builtin, self.overrides + overrides)
        sc._resolve_trace()
        return sc

    def with_controller(self, name: str, params: Mapping[str, Any] | None = None) -> "Scenario":
        """A copy in which every media flow runs ``name`` with ``params`` (``-c NAME -p NAME.k=v``).

        A flow keeps its scenario parameters only when it already ran ``name``: another
        controller's parameters would not fit. A parameter the user typed (``--set
        flows.N.params.k=v``) for a flow whose controller ``name`` replaces would be lost that
        way, so it is an error that says how to give it instead.
        """
        flows = [f for f in self.data.get("flows", []) if isinstance(f, dict)]
        for item in self.overrides:
            parts = parse_key(item.partition("=")[0])
            if len(parts) >= 3 and parts[0] == "flows" and parts[1].isdigit() and parts[2] == "params":
                i = int(parts[1])
                own = flows[i].get("controller", "gcc") if i < len(flows) else name
                if own != name:
                    key = ".".join(parts[3:]) or "KEY"
                    raise InputError("--set", item, f"flows[{i}] runs {own}, which -c {name} replaces, so this parameter "
                                                    f"would not arrive: give it as -p '{name}.{key}=VALUE'")
        data = copy.deepcopy(self.data)
        apply_controller(data, name, dict(params or {}))
        return Scenario(data, self.source, self.path, self.builtin, list(self.overrides))

    def with_params(self, by_controller: Mapping[str, Mapping[str, Any]]) -> "Scenario":
        """A copy in which the media flows running controller ``C`` get ``by_controller[C]`` on
        top of their own parameters (``-p C.k=v`` without ``-c``)."""
        data = copy.deepcopy(self.data)
        for f in _media_flows(data):
            name = f.get("controller", "gcc")
            extra = by_controller.get(name) if isinstance(name, str) else None  # a non-name fails validation
            if extra:
                own = f.get("params")
                f["params"] = {**(own if isinstance(own, dict) else {}), **extra}
        return Scenario(data, self.source, self.path, self.builtin, list(self.overrides))

    def validate(self, controller: str | None = None) -> None:
        """Ask the core to check the document (with every media flow's controller replaced by
        ``controller`` if given); raises :class:`InputError` naming the field."""
        from ratelab.native import core, core_errors

        try:
            if controller is None:
                core().validate_scenario(self.to_json())
            else:
                core().validate_scenario(self.to_json(), controller=controller)
        except core_errors() as exc:
            raise from_core(exc, self.source) from None

    def _resolve_trace(self) -> None:
        """Trace paths of every link section (``link``, ``reverse_link``, each route change's
        ``link``) made absolute, relative ones against the scenario's folder first."""
        base = self.path.parent if self.path else None
        sections = [(key, self.data.get(key)) for key in LINK_SECTIONS]
        changes = self.data.get("route_changes")
        if isinstance(changes, list):
            sections += [(f"route_changes[{i}].link", rc.get("link")) for i, rc in enumerate(changes) if isinstance(rc, dict)]
        for field, link in sections:
            if isinstance(link, dict) and isinstance(link.get("trace"), str):
                link["trace"] = str(resolve_trace(link["trace"], base, self.source, field=f"{field}.trace"))


def builtin_names() -> list[str]:
    """Names of the scenarios shipped in ``ratelab/scenarios/``."""
    if not SCENARIO_DIR.is_dir():
        return []
    return sorted(p.stem for p in SCENARIO_DIR.glob("*.toml"))


def builtin_descriptions() -> dict[str, str]:
    out = {}
    for name in builtin_names():
        try:
            out[name] = str(read_toml(SCENARIO_DIR / f"{name}.toml", name).get("description", ""))
        except InputError as exc:
            out[name] = f"(broken: {exc.message})"
    return out


def load_scenario(source: str | Path, overrides: Iterable[str] = ()) -> Scenario:
    """Load a TOML file or a built-in scenario by name and apply ``--set`` style overrides.

    ``link.trace`` is made absolute: looked up relative to the scenario file, then the current
    directory, then the package's ``traces/`` folder.
    """
    source = str(source)
    path = Path(source).expanduser()
    builtin = False
    if path.is_file():
        pass
    elif source in builtin_names():
        path, builtin = SCENARIO_DIR / f"{source}.toml", True
    elif path.suffix == ".toml" or "/" in source or "\\" in source or path.exists():
        raise InputError(source, "", "no such file" if not path.exists() else "not a file")
    else:
        known = ", ".join(builtin_names()) or "none"
        raise InputError(source, "", f"unknown scenario: not a file and not a built-in name (built-ins: {known})")
    data = read_toml(path, source)
    data.setdefault("name", path.stem)
    overrides = list(overrides)
    apply_overrides(data, overrides)
    sc = Scenario(data, source, None if builtin else path.resolve(), builtin, overrides)
    sc._resolve_trace()
    return sc


def resolve_trace(trace: str, base: Path | None, source: str, field: str = "link.trace") -> Path:
    """Absolute path of a trace file named in a scenario, or an :class:`InputError`."""
    p = Path(trace).expanduser()
    if p.is_absolute():
        candidates = [p]
    else:
        candidates = [d / p for d in (base, Path.cwd(), TRACE_DIR) if d is not None]
    for c in candidates:
        if c.is_file():
            return c.resolve()
    where = ", ".join(dict.fromkeys(str(c.parent) for c in candidates))
    raise InputError(source, field, f"trace file '{trace}' not found (looked in {where})")


# --- overrides --------------------------------------------------------------------------------

_KEY_PART = re.compile(r"[A-Za-z0-9_-]+")


def parse_key(key: str) -> list[str]:
    """Split a dotted path; ``flows[0].start_s`` and ``flows.0.start_s`` are the same."""
    flat = re.sub(r"\[(\d+)\]", r".\1", key.strip())
    parts = flat.split(".")
    if not key.strip() or any(not _KEY_PART.fullmatch(p) for p in parts):
        raise InputError("--set", key, "not a valid field path (use e.g. link.loss or flows[0].start_s)")
    return parts


def parse_value(text: str) -> Any:
    """A TOML literal (number, bool, string, array, inline table), else the text itself."""
    try:
        doc = tomllib.loads(f"v = {text}")
    except tomllib.TOMLDecodeError:
        return text
    except RecursionError:
        raise InputError("--set", "", f"value nested more than {MAX_DEPTH} levels deep") from None
    if len(doc) != 1:
        return text
    check_depth(doc["v"], "--set", "")
    return doc["v"]


def parse_override(item: str) -> tuple[list[str], Any]:
    key, sep, value = item.partition("=")
    if not sep:
        raise InputError("--set", item, "expected KEY=VALUE, e.g. link.loss=0.05")
    return parse_key(key), parse_value(value.strip())


def _media_flows(data: dict[str, Any]) -> list[dict[str, Any]]:
    return [f for f in data.get("flows", []) if isinstance(f, dict) and f.get("kind", "media") == "media"]


def apply_controller(data: dict[str, Any], name: str, params: Mapping[str, Any]) -> None:
    """Every media flow of ``data`` runs ``name`` with ``params``; a flow keeps its own
    parameters only when it already ran ``name``."""
    for f in _media_flows(data):
        own = f.get("params") if f.get("controller", "gcc") == name else None
        own = own if isinstance(own, dict) else {}
        f["controller"] = name
        f["params"] = {**own, **params}


def parse_params(items: Iterable[str], controllers: Iterable[str], option: str = "-p") -> dict[str, dict[str, Any]]:
    """``-p NAME.KEY=VALUE`` items as ``{NAME: {KEY: VALUE}}`` (a dotted KEY nests; VALUE is a TOML
    literal). NAME is one of ``controllers`` (the longest that fits, so names with dots such as
    ``my_cc.py:MyCC`` work); a parameter for a controller that does not run is an error, since
    it would never arrive."""
    names = sorted(set(controllers), key=len, reverse=True)
    out: dict[str, dict[str, Any]] = {}
    for item in items:
        lhs, sep, value = item.partition("=")
        name = next((n for n in names if lhs.startswith(n + ".") and len(lhs) > len(n) + 1), None)
        if not sep or name is None:
            given = ", ".join(sorted(set(controllers))) or "none"
            why = "expected NAME.KEY=VALUE, e.g. gcc.profile=\"m84\"" if not sep else "names no controller of this run"
            raise InputError(option, item, f"{why} (controllers: {given})")
        try:
            keys = parse_key(lhs[len(name) + 1:])
        except InputError:
            raise InputError(option, item, "KEY is not a valid parameter name") from None
        set_path(out.setdefault(name, {}), keys, parse_value(value.strip()))
    return out


def apply_overrides(data: dict[str, Any], overrides: Iterable[str]) -> None:
    for item in overrides:
        parts, value = parse_override(item)
        set_path(data, parts, value)


def set_path(data: dict[str, Any], parts: list[str], value: Any) -> None:
    """Set ``data[parts...] = value``, creating missing tables on the way."""
    node: Any = data
    for depth, part in enumerate(parts):
        here = ".".join(parts[: depth + 1])
        last = depth == len(parts) - 1
        if isinstance(node, list):
            if not part.isdigit():
                raise InputError("--set", here, f"{'.'.join(parts[:depth])} is a list: address an entry by index, e.g. {'.'.join(parts[:depth])}.0")
            i = int(part)
            if i >= len(node):
                raise InputError("--set", here, f"index {i} out of range ({'.'.join(parts[:depth])} has {len(node)} {'entry' if len(node) == 1 else 'entries'})")
            if last:
                node[i] = value
            else:
                node = node[i]
        elif isinstance(node, dict):
            if last:
                for group in _EXCLUSIVE.get(tuple(parts[:depth]), ()):
                    if part in group:
                        for other in group - {part}:
                            node.pop(other, None)
                node[part] = value
            else:
                node = node.setdefault(part, {})
        else:
            parent = ".".join(parts[:depth])
            raise InputError("--set", here, f"{parent} is a {_kind(node)}, not a table or list")


def _kind(v: Any) -> str:
    return {bool: "boolean", int: "number", float: "number", str: "string"}.get(type(v), type(v).__name__)


def read_toml(path: Path, source: str) -> dict[str, Any]:
    """A TOML file (scenario or plan) as a dict; unreadable or malformed: one InputError line."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(source, "", exc.strerror or str(exc)) from None
    except UnicodeDecodeError:
        raise InputError(source, "", "not a UTF-8 text file") from None
    return parse_toml(text, source)


#: Deepest nesting of tables and arrays a scenario or plan may have (the schema needs 4; a
#: document nested thousands deep would otherwise exhaust Python's recursion limit somewhere).
MAX_DEPTH = 32


def parse_toml(text: str, source: str) -> dict[str, Any]:
    """A TOML document as a dict, or an :class:`InputError` naming ``source``: invalid TOML,
    nesting deeper than :data:`MAX_DEPTH`."""
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        err = _toml_error(str(exc), source)
    except RecursionError:
        err = InputError(source, "", f"invalid TOML: nested more than {MAX_DEPTH} levels deep")
    else:
        check_depth(doc, source, "")
        return doc
    raise err


def check_depth(value: Any, source: str, field: str) -> None:
    """Reject tables/arrays nested deeper than :data:`MAX_DEPTH` (iteratively: no recursion)."""
    stack = [(value, 0)]
    while stack:
        v, depth = stack.pop()
        if isinstance(v, (dict, list)):
            if depth >= MAX_DEPTH:
                raise InputError(source, field, f"tables or arrays nested more than {MAX_DEPTH} levels deep")
            stack.extend((x, depth + 1) for x in (v.values() if isinstance(v, dict) else v))


def _toml_error(msg: str, source: str) -> InputError:
    """tomllib says "Invalid value (at line 3, column 10)": put the line where a field would go."""
    m = re.search(r"\s*\(at line (\d+), column (\d+)\)", msg)
    if m:
        return InputError(source, f"line {m.group(1)}", f"invalid TOML: {msg[: m.start()]} (column {m.group(2)})")
    return InputError(source, "", f"invalid TOML: {msg}")


def _first_nonfinite(v: Any, path: str = "") -> str:
    if isinstance(v, float) and not math.isfinite(v):
        return path
    items = v.items() if isinstance(v, dict) else enumerate(v) if isinstance(v, list) else ()
    for k, x in items:
        found = _first_nonfinite(x, f"{path}[{k}]" if isinstance(k, int) else (f"{path}.{k}" if path else k))
        if found:
            return found
    return ""
