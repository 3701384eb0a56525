from ratelab.errors import InputError, from_core


def test_line_format():
    assert InputError("a.toml", "link.loss", "must be a probability").line() == "error: a.toml: link.loss: must be a probability"
    assert InputError("a.toml", "", "no such file").line() == "error: a.toml: no such file"
    assert InputError("a.toml", "x", "two\nlines").line() == "error: a.toml: x: two lines"


def test_from_core_duck_typed(fake_core):
    e = from_core(fake_core.ConfigError("flows[0].start_s", "must be ≥ 0"), "s.toml")
    assert e.line() == "error: s.toml: flows[0].start_s: must be ≥ 0"
    e = from_core(fake_core.TraceError("/t.csv", 7, "time goes backwards"), "s.toml")
    assert e.line() == "error: /t.csv: line 7: time goes backwards"
    e = from_core(fake_core.TraceError("/t.csv", None, "cannot read"), "s.toml")
    assert e.line() == "error: /t.csv: cannot read"
    assert from_core(RuntimeError("x"), "s.toml") is None


def test_json_position_is_dropped(fake_core):
    e = from_core(fake_core.ConfigError("link.capacty", "unknown field `capacty` at line 1 column 73"), "s.toml")
    assert e.line() == "error: s.toml: link.capacty: unknown field `capacty`"
