"""The README stays true: its commands, the CI script, the schema reference and scenario list."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ratelab.scenario import builtin_names

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
SCHEMA = ROOT / "crates" / "ratelab-core" / "src" / "scenario" / "mod.rs"

pytestmark = pytest.mark.skipif(not README.is_file(), reason="not a source checkout")


def readme_commands() -> list[str]:
    """The lines of the first code block, which comes right after the title."""
    text = README.read_text()
    m = re.match(r"# ratelab\n\n```sh\n(.*?)\n```\n", text, re.S)
    assert m, "README must start with the title and one code block"
    return m.group(1).splitlines()


def test_readme_starts_with_two_commands():
    demo, tests = readme_commands()
    assert demo.startswith("pip install . ") and demo.endswith("ratelab demo")
    assert "pytest" in tests and "cargo test" in tests


def test_ci_runs_the_readme_test_command():
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    assert readme_commands()[1] in ci


def test_readme_lists_every_builtin_scenario():
    text = README.read_text()
    for name in builtin_names():
        assert f"`{name}`" in text, name


@pytest.mark.skipif(not SCHEMA.is_file(), reason="no Rust sources")
def test_readme_documents_every_schema_field():
    fields = set(re.findall(r"^\s*pub (\w+):", SCHEMA.read_text(), re.M))
    text = README.read_text()
    missing = sorted(f for f in fields if f"`{f}`" not in text)
    assert not missing, f"README scenario reference lacks: {missing}"
