"""One meaning per keyword (break-it pass of issue 28): `declarations=`
is lt text or a .lt file in both `check` and `run`; `tools=` is `run`'s
Python functions or a tools.toml; a value of the wrong kind is a clear
lt.ConfigError. Hints name Python keywords, not the CLI's flags."""

import pathlib

import pytest

import lt
from conftest import LOOKUP, lookup

DECLS = "tool lookup: {id: String} -{Read}-> {id: String, tier: String, cents: Int};\n"
BODY = 'match exec tool lookup {id = "c"} { Ok(a) => a.tier, Err(e) => e }'


def test_declarations_mean_the_same_in_check_and_run(tmp_path):
    assert lt.check(BODY, declarations=DECLS).ok
    assert lt.run(BODY, tools={"lookup": lookup}, declarations=DECLS).value == "gold"
    p = tmp_path / "decls.lt"
    p.write_text(DECLS)
    assert lt.check(BODY, declarations=p).ok
    assert lt.run(BODY, tools={"lookup": lookup}, declarations=str(p)).value == "gold"


def test_tools_toml_as_str_or_path(tmp_path):
    toml = tmp_path / "tools.toml"
    toml.write_text('[tools.lookup]\nfixed = { ok = { id = "c1", tier = "silver", cents = 5 } }\n')
    assert lt.run(LOOKUP, tools=str(toml)).value == "silver"
    assert lt.run(LOOKUP, tools=toml).value == "silver"


def test_a_value_of_the_wrong_kind_is_a_config_error(tmp_path):
    with pytest.raises(lt.ConfigError) as e:
        lt.run(BODY, tools=DECLS)  # declarations given as tools=
    assert "declarations=" in str(e.value)
    with pytest.raises(lt.ConfigError) as e:
        lt.run(BODY, tools=tmp_path / "decls.lt")
    assert "tools.toml" in str(e.value)
    with pytest.raises(lt.ConfigError) as e:
        lt.run(LOOKUP, tools={"lookup": "not a function"})
    assert "tools['lookup']" in str(e.value)
    with pytest.raises(lt.ConfigError) as e:
        lt.run(LOOKUP, tools=["lookup"])
    assert "dict of Python functions" in str(e.value)
    with pytest.raises(lt.ConfigError) as e:
        lt.check(BODY, tools=DECLS)
    assert "declarations=" in str(e.value)
    for toml in (pathlib.Path("tools.toml"), "tools.toml"):
        with pytest.raises(lt.ConfigError) as e:
            lt.check(BODY, declarations=toml)
        assert "lt.run as tools=" in str(e.value)
    with pytest.raises(lt.ConfigError):
        lt.prompt(None)  # type: ignore[arg-type]
    with pytest.raises(lt.ConfigError):
        lt.tools.to_openai(None)  # type: ignore[arg-type]


def no_flags(text):
    return not any(f in text for f in ("--executors", "--profile", "--max-", "--timeout", "--force", "--log", "--tools"))


def test_hints_name_keywords_not_flags(tmp_path):
    with pytest.raises(lt.ConfigError) as e:
        lt.run(LOOKUP)  # no tools at all
    assert no_flags(str(e.value)) and 'tools={"lookup": function}' in str(e.value), str(e.value)
    assert "table table" not in str(e.value) and "`[tools.lookup]` table (see" in str(e.value), str(e.value)
    with pytest.raises(lt.RunStopped) as s:
        lt.run("fold (fn acc: Int => fn x: Int => acc + x) 0 (range 0 100000)", limits={"max_steps": 100})
    assert no_flags(str(s.value)) and 'limits={"max_steps": N}' in str(s.value), str(s.value)
    log = tmp_path / "s.jsonl"
    lt.run(LOOKUP, tools={"lookup": lookup}, log=log)
    with pytest.raises(lt.ConfigError) as e:
        lt.run(LOOKUP, tools={"lookup": lookup}, log=log)
    assert no_flags(str(e.value)) and "force=True" in str(e.value), str(e.value)
