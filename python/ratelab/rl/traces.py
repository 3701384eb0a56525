"""Trace sets for R3Net training and testing.

The 40 shipped traces (``ratelab/traces``, see its README for sources and licenses) are split by
hand, 24 train / 6 val / 10 test, so that each family is in every set and no file is in two:

* test — OpenNetLab: ``4G_700kbps``, ``WIRED_900kbs``; Norway 3G/HSDPA (Pensieve): the
  2011-01-30 bus, 2011-02-01 ferry, 2011-01-31 metro and vestby→oslo train recordings; FCC
  broadband (Pensieve): traces 5642 (youtube), 7451 (yahoo), 8299 (amazon), 941778 (youtube).
* val — 6 of the other 30, chosen by hand, two per family (a low- and a high-rate OpenNetLab
  trace, two Norway 3G recordings of routes that have other recordings in train, two FCC
  traces): the trainer's validation episodes (snapshot selection), never trained on.
* train — the remaining 24 (``split("train")`` lists them). Models trained before the val split
  existed (the shipped ``r3net.onnx``) saw all 30, i.e. ``train`` + ``val``.

Training adds synthetic traces (Markov / random-walk / step over 0.1–8 Mbit/s) generated in the
Rust core per episode (``EnvConfig.synthetic_prob``), so every episode sees a fresh trace.
"""

from __future__ import annotations

from pathlib import Path

from ratelab.scenario import TRACE_METADATA

TRACE_DIR = Path(__file__).resolve().parent.parent / "traces"

TEST_TRACES: tuple[str, ...] = (
    "opennetlab-4G_700kbps.csv",
    "opennetlab-WIRED_900kbs.csv",
    "pensieve-bus.ljansbakken-oslo-report.2011-01-30_1323CET.csv",
    "pensieve-ferry.nesoddtangen-oslo-report.2011-02-01_0740CET.csv",
    "pensieve-metro.kalbakken-jernbanetorget-report.2011-01-31_1935CET.csv",
    "pensieve-train.vestby-oslo-report.2011-02-14_1728CET.csv",
    "pensieve-trace_5642_http---www.youtube.com.csv",
    "pensieve-trace_7451_http---www.yahoo.com.csv",
    "pensieve-trace_8299_http---www.amazon.com.csv",
    "pensieve-trace_941778_http---www.youtube.com.csv",
)


VAL_TRACES: tuple[str, ...] = (
    "opennetlab-4G_500kbps.csv",
    "opennetlab-5G_12mbps.csv",
    "pensieve-car.snaroya-smestad-report.2011-02-14_2139CET.csv",
    "pensieve-tram.ljabru-jernbanetorget-report.2011-01-31_1045CET.csv",
    "pensieve-trace_797700_http---www.yahoo.com.csv",
    "pensieve-trace_940760_http---www.youtube.com.csv",
)


def shipped() -> list[str]:
    return sorted(p.name for p in TRACE_DIR.glob("*.csv") if p.name not in TRACE_METADATA)


def split(which: str) -> list[str]:
    """File names of the ``train``, ``val`` or ``test`` set (or ``all``); sorted, disjoint."""
    names = shipped()
    if which == "all":
        return names
    if which == "test":
        return [n for n in names if n in TEST_TRACES]
    if which == "val":
        return [n for n in names if n in VAL_TRACES]
    if which == "train":
        return [n for n in names if n not in TEST_TRACES and n not in VAL_TRACES]
    raise ValueError(f"unknown trace set {which!r} (train, val, test, all, none)")


def load(spec: str | list[str | Path] | None) -> list[tuple[str, str]]:
    """``(name, content)`` pairs for the environment.

    ``spec``: ``"train"``, ``"val"``, ``"test"``, ``"all"``, ``"none"``/None (synthetic only), or a list of
    file paths (or shipped file names).
    """
    if spec is None or spec == "none":
        return []
    if isinstance(spec, str):
        return [(n, (TRACE_DIR / n).read_text()) for n in split(spec)]
    out = []
    for item in spec:
        p = Path(item)
        if not p.exists() and (TRACE_DIR / str(item)).exists():
            p = TRACE_DIR / str(item)
        out.append((p.name, p.read_text()))
    return out
