"""Arguments lt cannot use (break-it pass of issue 28): an argument of the
wrong Python type is a `TypeError` naming its keyword; a value lt cannot
use (an expression in `declarations=`, a number out of range, definitions
nested absurdly deep, a bad key in a profile dict) is an `lt.ConfigError`
that says where, never a `RecursionError` or `OverflowError` from inside."""

import pytest

import lt
from conftest import LOOKUP, lookup

DECLS = "tool t: Int -{}-> Int;\n"
BODY = "match exec tool t 1 { Ok(n) => n, Err(e) => 0 }"


@pytest.mark.parametrize("call", ["check", "run"])
def test_declarations_holding_an_expression_are_refused_with_its_place(call):
    f = {"check": lambda d: lt.check(BODY, declarations=d), "run": lambda d: lt.run(BODY, tools={"t": abs}, declarations=d)}[call]
    with pytest.raises(lt.ConfigError) as e:
        f("1 + 1")
    assert (e.value.line, e.value.column, e.value.stage) == (1, 1, "input")
    assert "declarations=" in e.value.message and "1 + 1" in e.value.message
    with pytest.raises(lt.ConfigError) as e:
        f(DECLS + "\n  t 1")
    assert (e.value.file, e.value.line, e.value.column) == ("<tools>", 3, 3)
    assert f(DECLS) is not None  # declarations alone are fine


@pytest.mark.parametrize(
    "kwargs,keyword",
    [
        ({"limits": 5}, "limits="),
        ({"limits": [("max_calls", 1)]}, "limits="),
        ({"log": 5}, "log="),
        ({"profile": 5}, "profile="),
        ({"declarations": 42}, "declarations="),
        ({"force": "yes"}, "force="),
    ],
)
def test_a_wrong_type_is_a_type_error_naming_the_keyword(kwargs, keyword):
    with pytest.raises(TypeError) as e:
        lt.run(LOOKUP, tools={"lookup": lookup}, **kwargs)
    assert keyword in str(e.value)


def test_a_source_that_is_not_text_is_a_type_error_saying_to_give_the_text(tmp_path):
    """Break-it pass: `lt.check(5)` and `lt.check(Path(...))` gave PyO3's
    "cannot be cast as 'str'"; `lt.prompt(5)` named `declarations=`."""
    path = tmp_path / "prog.lt"
    path.write_text(BODY)
    for f in (lt.check, lambda s: lt.run(s, tools={"t": abs})):
        with pytest.raises(TypeError) as e:
            f(path)
        assert "source is a path" in str(e.value) and "read_text()" in str(e.value)
        with pytest.raises(TypeError) as e:
            f(5)
        assert "source is an int: give the program's text" in str(e.value)
        with pytest.raises(lt.ConfigError) as c:
            f(str(path))
        assert "not the program's text" in str(c.value) and c.value.file == str(path)
    with pytest.raises(TypeError) as e:
        lt.prompt(5)  # type: ignore[arg-type]
    assert str(e.value).startswith("tools is an int")
    with pytest.raises(TypeError) as e:
        lt.tools.to_openai(5)  # type: ignore[arg-type]
    assert str(e.value).startswith("declarations is an int")


def test_a_lone_surrogate_is_a_config_error_naming_the_argument_and_place():
    """Break-it pass: a raw `UnicodeEncodeError` that named nothing."""
    with pytest.raises(lt.ConfigError) as e:
        lt.check("1 +\n 2 \ud800")
    assert str(e.value).startswith("source holds U+D800, a lone surrogate, at line 2, column 4")
    with pytest.raises(lt.ConfigError) as e:
        lt.check(BODY, declarations="tool t: Int -{}-> Int; // \udcff")
    assert "declarations= holds U+DCFF" in str(e.value)
    with pytest.raises(lt.ConfigError) as e:
        lt.replay("log\udcff.jsonl")
    assert "log holds U+DCFF" in str(e.value)
    with pytest.raises(lt.ConfigError) as e:
        lt.run(BODY, tools={"t": abs}, profile="p\ud800.toml")
    assert "profile= holds U+D800" in str(e.value)
    with pytest.raises(lt.ConfigError) as e:
        lt.tools.from_openai('[{"name": "\ud800"}]')
    assert "the definitions' text holds U+D800" in str(e.value)


def test_declarations_text_naming_a_file_in_a_comment_is_read_as_text():
    """Break-it pass: text ending ``.lt`` (a comment's path) was opened as
    a file; a one-line name is still a file."""
    text = "tool t: Int -{}-> Int; // from ./tools.lt"
    assert lt.check(BODY, declarations=text).ok
    assert lt.prompt(text).endswith(text + "\n") or "tool t" in lt.prompt(text)
    with pytest.raises(lt.ConfigError) as e:
        lt.check(BODY, declarations="no/such/tools.lt")
    assert str(e.value).startswith("no/such/tools.lt: cannot read")


def test_replay_of_a_wrong_type_names_the_argument():
    with pytest.raises(TypeError) as e:
        lt.replay(5)  # type: ignore[arg-type]
    assert "log" in str(e.value)


def test_numbers_out_of_range_are_config_errors():
    with pytest.raises(lt.ConfigError) as e:
        lt.run(LOOKUP, tools={"lookup": lookup}, limits={"max_calls": 10**30})
    assert 'limits["max_calls"]' in str(e.value)
    # Named as Python spells them (break-it pass: `true`, `null`).
    for bad, shown in ((True, "True"), (None, "None"), ("5", "'5'"), (1.5, "1.5")):
        with pytest.raises(lt.ConfigError) as e:
            lt.run(LOOKUP, tools={"lookup": lookup}, limits={"timeout_ms": bad})
        assert f"limits['timeout_ms'] is {shown}, not a non-negative int" in str(e.value)
    for bad in (10**30, -1, 0):
        with pytest.raises(lt.ConfigError) as e:
            lt.tools.from_mcp(command=["true"], timeout_ms=bad)
        assert "timeout_ms=" in str(e.value)
    with pytest.raises(TypeError) as e:
        lt.tools.from_mcp(command=["true"], timeout_ms="60000")  # type: ignore[arg-type]
    assert "timeout_ms=" in str(e.value)
    with pytest.raises(TypeError) as e:
        lt.tools.from_mcp(command=["true", 5])  # type: ignore[list-item]
    assert "command=" in str(e.value)


def test_definitions_nested_too_deep_or_cyclic_are_config_errors():
    deep = {"type": "object"}
    for _ in range(5000):
        deep = {"type": "object", "properties": {"x": deep}}
    defs = [{"type": "function", "function": {"name": "f", "parameters": deep}}]
    with pytest.raises(lt.ConfigError) as e:
        lt.tools.from_openai(defs)
    assert e.value.stage == "input" and 'defs[0]["function"]["parameters"]["properties"]' in str(e.value)
    cyclic = {"name": "f", "input_schema": {"type": "object"}}
    cyclic["input_schema"]["properties"] = {"me": cyclic["input_schema"]}
    with pytest.raises(lt.ConfigError):
        lt.tools.from_anthropic([cyclic])


def test_a_tool_result_nested_too_deep_is_the_calls_err():
    deep: list = []
    for _ in range(100000):
        deep = [deep]
    r = lt.run("tool t: Int -{}-> Int;\nmatch exec tool t 1 { Ok(n) => \"ok\", Err(e) => e }", tools={"t": lambda n: deep})
    assert "nested more than" in r.value


def test_an_error_in_a_profile_dict_names_its_key():
    with pytest.raises(lt.ConfigError) as e:
        lt.run(LOOKUP, tools={"lookup": lookup}, profile={"tools": {"lookup": {"timeout_ms": "soon"}}})
    assert e.value.file == "<profile dict>" and e.value.line is None and e.value.column is None
    assert str(e.value).startswith('<profile dict>: profile["tools"]["lookup"]["timeout_ms"]: '), str(e.value)
    with pytest.raises(lt.ConfigError) as e:
        lt.check(LOOKUP, profile={"effects": "Read"})
    assert 'profile["effects"]: ' in str(e.value) and e.value.line is None
    with pytest.raises(lt.ConfigError) as e:
        lt.check(LOOKUP, profile={"tools": {"lookup": {"timeout_ms": None}}})
    assert 'profile["tools"]["lookup"]["timeout_ms"] is None' in str(e.value)
    # The key is said once, not followed by the file's own `profile: `.
    with pytest.raises(lt.ConfigError) as e:
        lt.check(LOOKUP, profile={"tools": {"lookup": {"timeout_ms": 0}}})
    assert str(e.value).startswith(
        '<profile dict>: profile["tools"]["lookup"]["timeout_ms"]: tool lookup: timeout_ms must be'
    ), str(e.value)


def test_timeout_ms_zero_means_no_limit_as_on_the_command_line():
    # `lt run --timeout-ms 0` is no deadline; limits={"timeout_ms": 0} too
    # (docs/python.md says so).
    r = lt.run(LOOKUP, tools={"lookup": lookup}, limits={"timeout_ms": 0})
    assert r.value == "gold"
    with open(_docs(), encoding="utf-8") as f:
        assert "`timeout_ms` 0 is no deadline" in f.read()


def _docs():
    import pathlib

    return pathlib.Path(__file__).resolve().parents[2] / "docs" / "python.md"


def test_a_profile_value_of_the_wrong_type_is_said_in_words_not_rust_types():
    """Break-it pass: `timeout_ms: -5` said "expected u64"."""
    for profile in ({"tools": {"lookup": {"timeout_ms": -5}}}, {"max_concurrency": "x"}):
        with pytest.raises(lt.ConfigError) as e:
            lt.run(LOOKUP, tools={"lookup": lookup}, profile=profile)
        assert str(e.value).endswith("expected a non-negative integer"), str(e.value)


def test_the_second_pass_surrogates_commands_and_big_profile_ints_are_named():
    """Second break-it pass: a surrogate in a tools= path or key, or in
    parsed definitions, `from_mcp(command=5)`, and a profile int past
    2**63 - 1 gave raw or unplaced errors."""
    with pytest.raises(lt.ConfigError) as e:
        lt.run(LOOKUP, tools="\ud800.toml")
    assert "tools= holds U+D800" in str(e.value)
    with pytest.raises(lt.ConfigError) as e:
        lt.run(LOOKUP, tools={"\ud800": lookup})
    assert "holds U+D800" in str(e.value) and "tools= key" in str(e.value)
    defs = [{"type": "function", "function": {"name": "f\ud800", "parameters": {"type": "object"}}}]
    with pytest.raises(lt.ConfigError) as e:
        lt.tools.from_openai(defs)
    assert "the definitions (as JSON) holds U+D800" in str(e.value)
    with pytest.raises(TypeError) as t:
        lt.tools.from_mcp(command=5)  # type: ignore[arg-type]
    assert str(t.value).startswith("command= is an int")
    with pytest.raises(lt.ConfigError) as e:
        lt.run(LOOKUP, tools={"lookup": lookup}, profile={"tools": {"lookup": {"timeout_ms": 2**63}}})
    assert 'profile["tools"]["lookup"]["timeout_ms"] is past the largest integer' in str(e.value)
