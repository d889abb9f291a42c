"""A call's argument and result cross between the session's thread and a
pool thread (python/src/convert.rs, worker.rs): values of every kind come
through both ways exactly (a number's kind included: 1 and 1.0 and True
differ), and a result that is not JSON is refused with its path. A guard
for any other form the values may take between the threads (issue 28,
sixth pass)."""

import lt

SHAPE = (
    "{n: Int, neg: Int, big: Int, x: Float, y: Float, t: Bool, f: Bool, s: String, e: String, "
    "xs: List {k: String, v: List Int}, none: List Int, o: {inner: {deep: List String}}}"
)
ECHO = f"""
tool echo: {SHAPE} -{{Read}}-> {SHAPE};
match exec tool echo {{n = 7, neg = 0 - 3, big = 9007199254740993, x = 1.5, y = 0.1,
  t = true, f = false, s = "cust é ☃ 😀", e = "",
  xs = [{{k = "a", v = [1, 2]}}, {{k = "", v = []}}], none = [],
  o = {{inner = {{deep = ["p", "q"]}}}}}} {{
  Ok(r) => r,
  Err(e) => {{n = 0, neg = 0, big = 0, x = 0.0, y = 0.0, t = false, f = false, s = e, e = "",
    xs = [], none = [], o = {{inner = {{deep = []}}}}}}
}}
"""

SENT = {
    "n": 7, "neg": -3, "big": 9007199254740993, "x": 1.5, "y": 0.1, "t": True, "f": False,
    "s": "cust é ☃ 😀", "e": "", "xs": [{"k": "a", "v": [1, 2]}, {"k": "", "v": []}],
    "none": [], "o": {"inner": {"deep": ["p", "q"]}},
}

BACK = {
    "n": 2**63 - 1, "neg": -(2**63), "big": -9007199254740993, "x": 1e300, "y": -0.0,
    "t": False, "f": True, "s": "ünïcode ☃ 😀\n\"q\"", "e": "x" * 1000,
    "xs": [{"k": "b" * 70, "v": list(range(300))}] * 3, "none": [],
    "o": {"inner": {"deep": ["", "é"]}},
}


def kinds(v):
    """v with each scalar's type beside it (1 and 1.0 and True differ)."""
    if isinstance(v, dict):
        return {k: kinds(x) for k, x in v.items()}
    if isinstance(v, list):
        return [kinds(x) for x in v]
    return (type(v).__name__, v)


def test_values_of_every_kind_cross_both_ways_exactly():
    seen = []

    def echo(arg):
        seen.append(arg)
        return BACK

    for _ in range(3):
        r = lt.run(ECHO, tools={"echo": echo})
        assert kinds(r.value) == kinds(BACK)
    assert all(kinds(a) == kinds(SENT) for a in seen) and len(seen) == 3


def test_a_tuple_and_a_dict_subclass_cross_as_an_array_and_an_object():
    class Row(dict):
        pass

    def echo(arg):
        return Row({**BACK, "xs": tuple(Row(x) for x in BACK["xs"]), "o": Row(BACK["o"])})

    assert kinds(lt.run(ECHO, tools={"echo": echo}).value) == kinds(BACK)


def test_a_result_that_is_not_json_names_its_place():
    r = lt.run(ECHO, tools={"echo": lambda a: {**BACK, "xs": [{"k": "a", "v": [1, {2}]}]}})
    assert 'result["xs"][0]["v"][1]: a set is not JSON' in r.value["s"]
    r = lt.run(ECHO, tools={"echo": lambda a: {**BACK, "o": {"inner": {3: "x"}}}})
    assert 'result["o"]["inner"]: the key 3 is an int, not a str' in r.value["s"]
    r = lt.run(ECHO, tools={"echo": lambda a: {**BACK, "n": 2**1100}})
    assert 'result["n"]: an integer of 1101 bits is too large for a JSON number' in r.value["s"]


WIDE = """tool w: Int -{Read}-> {x: Float, j: Json};
match exec tool w 1 { Ok(r) => {ok = [r], err = ""}, Err(e) => {ok = [], err = e} }"""


def test_an_int_past_64_bits_is_the_nearest_float_as_from_any_executor():
    """Break-it pass: `10**20` for a `Float` was refused ("does not fit in
    64 bits"), though a command executor's `100000000000000000000` reads
    as 1e20 (JSON's reader)."""
    r = lt.run(WIDE, tools={"w": lambda a: {"x": 10**20, "j": [2**64, -(2**70)]}})
    assert r.value == {"ok": [{"x": 1e20, "j": [float(2**64), -float(2**70)]}], "err": ""}
    assert type(r.value["ok"][0]["j"][0]) is float
    # Within 64 bits an int stays an int.
    r = lt.run(WIDE, tools={"w": lambda a: {"x": 3, "j": [2**64 - 1, -(2**63)]}})
    assert r.value == {"ok": [{"x": 3.0, "j": [2**64 - 1, -(2**63)]}], "err": ""}
    assert type(r.value["ok"][0]["j"][0]) is int


def nested(depth):
    v = []
    for _ in range(depth):
        v = [v]
    return v


def test_a_json_result_nests_as_deep_as_from_any_executor():
    """Break-it pass: a Python tool's `Json` result was refused past 512
    levels ("a cycle?"); the language takes 10,000 (boundary.rs,
    MAX_JSON_DEPTH), as a command executor's does."""
    prog = """tool d: Int -{Read}-> Json;
match exec tool d 1 { Ok(j) => {ok = [j], err = ""}, Err(e) => {ok = [], err = e} }"""
    r = lt.run(prog, tools={"d": lambda a: nested(9_999)})  # 10,000 levels
    assert r.value["err"] == ""
    v, depth = r.value["ok"][0], 0
    while v:
        v, depth = v[0], depth + 1
    assert depth == 9_999
    for levels in (10_001, 20_000):
        # Refused here, with the path, not by the type's check without one.
        r = lt.run(prog, tools={"d": lambda a: nested(levels - 1)})
        assert "result[0][0]" in r.value["err"] and "nested more than 10000 levels deep" in r.value["err"]
    cyclic: list = []
    cyclic.append(cyclic)
    r = lt.run(prog, tools={"d": lambda a: cyclic})
    assert "(or contains itself)" in r.value["err"]


def test_strings_read_in_place_keep_their_text_and_refuse_what_is_not_utf8():
    """Strings and keys are read as UTF-8 in place on Python 3.10 and
    later (convert.rs, `utf8`): a `str` subclass reads as its text, and a
    lone surrogate (no UTF-8 form) is the call's `Err`, naming its place."""

    class Name(str):
        pass

    def subclassed(a):
        return {**{Name(k): v for k, v in BACK.items()}, "s": Name("sub é ☃")}

    assert lt.run(ECHO, tools={"echo": subclassed}).value["s"] == "sub é ☃"
    r = lt.run(ECHO, tools={"echo": lambda a: {**BACK, "s": "bad \ud800"}})
    assert 'result["s"]: the string is not valid UTF-8' in r.value["s"]
    r = lt.run(ECHO, tools={"echo": lambda a: {**BACK, "o": {"inner": {"\ud800": ["x"]}}}})
    assert "result[\"o\"][\"inner\"]: the key '\\ud800' is not valid UTF-8" in r.value["s"]


def test_a_logged_session_and_one_without_give_the_same_values(tmp_path):
    """Without a log a call takes the value door (the argument written from
    the program's value, the result read straight into one); with a log,
    the JSON door. The tool sees the same argument, keys in the same
    (JSON object's) order, and the program the same result and the same
    refusal's words."""
    seen = {}

    def run(log, answer):
        got = []

        def echo(arg):
            got.append(arg)
            return answer

        r = lt.run(ECHO, tools={"echo": echo}, log=log, limits={"max_list_len": 1000})
        return got, r.value

    for name, answer in [
        ("plain", BACK),
        ("a float for an Int", {**BACK, "n": 3.0}),
        ("a field missing", {k: v for k, v in BACK.items() if k != "o"}),
        ("a wrong type deep down", {**BACK, "o": {"inner": {"deep": ["", 1]}}}),
        ("a list past the limit", {**BACK, "none": list(range(2000))}),
    ]:
        (a1,), v1 = run(None, answer)
        (a2,), v2 = run(tmp_path / f"{len(seen)}.jsonl", answer)
        seen[name] = v1
        assert list(a1) == list(a2) == sorted(SENT), name
        assert kinds(a1) == kinds(a2) == kinds(SENT), name
        assert kinds(v1) == kinds(v2), name
    assert kinds(seen["plain"]) == kinds(BACK)
    assert seen["a float for an Int"]["n"] == 3
    assert "missing" in seen["a field missing"]["s"]
    assert "o.inner.deep[1]" in seen["a wrong type deep down"]["s"]
    assert "more than the limit of 1000" in seen["a list past the limit"]["s"]


DEEP = r'''
import threading
threading.stack_size(256 << 10)   # small thread stacks, as some hosts set
import lt
def go(out):
    deep = "fold (fn acc => fn x => to_json [acc]) (to_json 0) (range 0 2500)"
    # The program's value, converted on the caller's thread.
    v = lt.run(deep).value
    d = 0
    while isinstance(v, list):
        v, d = v[0], d + 1
    out.append(d)
    # A tool's argument, converted on a pool thread.
    seen = []
    src = "tool t: Json -{}-> Int;\nmatch exec tool t (" + deep + ") { Ok(k) => k, Err(e) => 0 }"
    out.append(lt.run(src, tools={"t": lambda a: seen.append(a) or 7}).value)
out = []
t = threading.Thread(target=go, args=(out,))
t.start()
t.join()
print(out)
'''


def test_deep_values_cross_on_small_thread_stacks():
    """A value nested thousands of levels deep becomes Python objects on a
    thread with a small stack (a pool thread for a tool's argument, the
    caller's for the program's value): the stack grows, never overflows
    (the break-it pass crashed both with a segmentation fault)."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", DEEP], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "[2500, 7]"


def test_a_long_refusal_path_is_shortened():
    d = {}
    d["k" * 10_000] = d  # a cycle through a long key
    src = "tool t: Int -{}-> Json;\nmatch exec tool t 1 { Ok(j) => \"\", Err(e) => e }"
    msg = lt.run(src, tools={"t": lambda a: d}).value
    assert "nested more than 10000 levels deep (or contains itself)" in msg
    assert "[… 9984 more …]" in msg
    assert len(msg) < 2_000, len(msg)


def test_a_result_of_more_values_than_any_executor_takes_is_refused_early():
    """Break-it pass: a result was read whole before its size was checked:
    one list shared at every level (read once a path) grew to 7.5 GB, and
    at 40 levels never ended. It now stops at 10,000,000 values, as a
    command executor's output does (`MAX_OUTPUT_VALUES`)."""
    prog = """tool d: Int -{Read}-> Json;
match exec tool d 1 { Ok(j) => "", Err(e) => e }"""
    shared: list = []
    for _ in range(40):
        shared = [shared, shared]  # 2**41 values read path by path
    wide = [[0] * 1000] * 20_000  # 20,000,000 values in 1,000 objects
    for value in (shared, wide):
        err = lt.run(prog, tools={"d": lambda a: value}).value
        assert "holds more than 10000000 values" in err, err[:300]
    assert lt.run(prog, tools={"d": lambda a: [[0] * 1000] * 9_000}).value == ""
