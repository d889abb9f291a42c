"""lt.check: the fields of `lt check --json` as typed objects, diagnostics
rendered as `lt check` prints them, profiles and declarations."""

import pathlib

import pytest

import lt
from conftest import LOOKUP, REFUND


def test_well_typed_program_has_type_and_effects():
    r = lt.check(LOOKUP)
    assert r.ok and r.type == "String" and r.effects == ["Read"]
    assert r.diagnostics == []


def test_errors_are_typed_diagnostics_rendered_like_the_cli():
    r = lt.check(LOOKUP.replace("a.tier", "a.plan"))
    assert not r.ok and r.type is None
    [d] = r.diagnostics
    assert isinstance(d, lt.Diagnostic)
    assert d.code == "E0202" and d.line == 4 and d.severity == "error"
    assert "plan" in d.message and d.help
    assert "[E0202] Error:" in str(d) and "a.plan" in str(d)


def test_every_error_at_once():
    r = lt.check(REFUND.replace("a.tier", "a.plan").replace("a.cents", "a.amount"))
    assert [d.code for d in r.diagnostics] == ["E0202"]
    r = lt.check("1 + \"x\" + y")
    assert len(r.diagnostics) >= 2


def test_profile_denial_is_a_diagnostic(tmp_path):
    r = lt.check(REFUND, profile={"name": "support", "effects": ["Read"]})
    assert not r.ok and r.profile == "support"
    assert {d.code for d in r.diagnostics} <= {"E0701", "E0702", "E0703"} and r.diagnostics
    f = tmp_path / "p.toml"
    f.write_text('[profile]\nname = "ro"\neffects = ["Read"]\n')
    assert lt.check(REFUND, profile=str(f)).profile == "ro"


def test_invalid_profile_is_a_config_error_with_location(tmp_path):
    f = tmp_path / "p.toml"
    f.write_text('[profile]\neffects = "Read"\n')
    with pytest.raises(lt.ConfigError) as e:
        lt.check(LOOKUP, profile=str(f))
    assert isinstance(e.value, lt.Error)
    assert e.value.file and e.value.line == 2


def test_declarations_as_text_and_file(tmp_path):
    decls = "tool lookup: {id: String} -{Read}-> {id: String, tier: String, cents: Int};\n"
    body = 'match exec tool lookup {id = "c"} { Ok(a) => a.cents, Err(e) => 0 }'
    assert lt.check(body, declarations=decls).type == "Int"
    p = tmp_path / "tools.lt"
    p.write_text(decls)
    assert lt.check(body, declarations=pathlib.Path(p)).ok
    assert lt.check(body, declarations=str(p)).ok  # a one-line str ending .lt is a path
    assert not lt.check(body).ok  # unknown tool without them


def _rejected(_):
    """Runs a program the checker rejects (in a pool's worker process)."""
    return lt.run('1 + "x"')


def test_every_error_pickles_and_copies_with_its_fields(tmp_path):
    """Break-it pass: `CheckError` could not be unpickled (its `result` was
    not in its args), so a `multiprocessing.Pool` worker whose `lt.run`
    raised it hung `get()` for ever. Every lt error crosses a process."""
    import concurrent.futures
    import copy
    import multiprocessing
    import pickle

    with pytest.raises(lt.CheckError) as e:
        lt.run('1 + "x"')
    errors = [e.value]
    for bad in (lambda: lt.run(LOOKUP, tools={"lookup": 5}), lambda: lt.run(LOOKUP, limits={"max_steps": 1}, tools={"lookup": lambda a: {"tier": "x"}}), lambda: lt.replay(tmp_path / "none.jsonl")):
        with pytest.raises(lt.Error) as e:
            bad()
        errors.append(e.value)
    assert {type(x).__name__ for x in errors} == {"CheckError", "ConfigError", "RunStopped", "LogError"}
    for err in errors:
        for back in (pickle.loads(pickle.dumps(err)), copy.deepcopy(err)):
            assert type(back) is type(err) and str(back) == str(err) and back.__dict__.keys() == err.__dict__.keys()
    back = pickle.loads(pickle.dumps(errors[0]))
    assert back.diagnostics == errors[0].diagnostics and back.result == errors[0].result
    ctx = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(1, mp_context=ctx) as pool:
        with pytest.raises(lt.CheckError) as e:
            pool.submit(_rejected, 0).result(timeout=60)
    assert e.value.diagnostics[0].code == errors[0].diagnostics[0].code
