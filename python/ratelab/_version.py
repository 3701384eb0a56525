"""The installed package's version, in a module of its own so that any module can import it
without importing the package's ``__init__`` (which imports the front end)."""

from __future__ import annotations


def _version() -> str:
    from importlib import metadata

    try:
        return metadata.version("ratelab")
    except metadata.PackageNotFoundError:  # running from a source tree
        return "0+unknown"


__version__ = _version()
