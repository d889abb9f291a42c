"""lt.tools: JSON Schema tool definitions (OpenAI, Anthropic, MCP, a live
MCP server) to declarations and back, through the library's importer and
exporter (`lt tools import` / `lt tools export`)."""

import json
import sys
import textwrap

import pytest

import lt

WEATHER = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "The weather in a city",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
                "required": ["city"],
                "additionalProperties": False,
            },
        },
    }
]

PROGRAM = 'match exec tool get_weather {city = "Paris"} { Ok(w) => "ok", Err(e) => e }'

MCP_LIST = {
    "tools": [
        {
            "name": "get_time",
            "description": "The time in a timezone",
            "inputSchema": {"type": "object", "properties": {"tz": {"type": "string"}}, "required": ["tz"]},
            "outputSchema": {"type": "object", "properties": {"time": {"type": "string"}}, "required": ["time"]},
            "annotations": {"readOnlyHint": True, "openWorldHint": False},
        }
    ]
}


def test_from_openai_gives_declarations_a_program_checks_with():
    imported = lt.tools.from_openai(WEATHER)
    assert imported.tools == ["get_weather"]
    assert "tool get_weather: {city: String, days?: Int}" in imported.declarations
    assert "[tools.get_weather]" in imported.tools_toml
    assert lt.check(PROGRAM, declarations=imported.declarations).ok
    # The same from the JSON text.
    assert lt.tools.from_openai(json.dumps(WEATHER)).declarations == imported.declarations


def test_to_openai_exports_the_declarations():
    defs = lt.tools.to_openai("tool get_weather: {city: String} -{Read}-> {temp: Float};")
    assert len(defs) == 1 and defs[0]["type"] == "function"
    f = defs[0]["function"]
    assert f["name"] == "get_weather" and f["strict"] is True
    assert f["parameters"]["properties"] == {"city": {"type": "string"}}
    assert f["parameters"]["required"] == ["city"]
    # Round trip: exported definitions import to the same tool.
    again = lt.tools.from_openai(defs)
    assert "tool get_weather: {city: String}" in again.declarations


def test_from_mcp_reads_a_tools_list_with_its_annotations():
    imported = lt.tools.from_mcp(MCP_LIST)
    assert imported.tools == ["get_time"]
    assert "-{Read}-> {time: String}" in imported.declarations
    assert 'effects = ["Read"]' in imported.tools_toml
    assert lt.tools.to_mcp(imported.declarations)["tools"][0]["name"] == "get_time"
    assert lt.tools.to_anthropic(imported.declarations)[0]["input_schema"]["required"] == ["tz"]


SERVER = textwrap.dedent(
    """
    import json, sys
    TOOLS = %s
    for line in sys.stdin:
        msg = json.loads(line)
        if "id" not in msg:
            continue
        if msg["method"] == "initialize":
            result = {"protocolVersion": msg["params"]["protocolVersion"], "capabilities": {"tools": {}},
                      "serverInfo": {"name": "fake", "version": "1"}}
        elif msg["method"] == "tools/list":
            result = TOOLS
        else:
            result = {}
        print(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}), flush=True)
    """
) % repr(MCP_LIST)


def test_from_mcp_lists_a_live_server(tmp_path):
    server = tmp_path / "server.py"
    server.write_text(SERVER)
    imported = lt.tools.from_mcp(command=[sys.executable, str(server)], timeout_ms=20000)
    assert imported.tools == ["get_time"]
    assert "mcp = { command = [" in imported.tools_toml and 'tool = "get_time"' in imported.tools_toml


def test_import_errors_name_the_functions_not_the_command_lines_format():
    """Break-it pass: the hints said `--format mcp` and "the file"."""
    anthropic = [{"name": "get", "description": "d", "input_schema": {"type": "object"}}]
    with pytest.raises(lt.ConfigError) as e:
        lt.tools.from_mcp(anthropic)
    text = str(e.value)
    assert "--format" not in text and "`lt.tools.from_anthropic`" in text, text
    for empty in ("[]", "5"):
        with pytest.raises(lt.ConfigError) as e:
            lt.tools.from_openai(empty)
        assert "the file" not in str(e.value) and "the JSON given" in str(e.value), str(e.value)
    with pytest.raises(lt.ConfigError) as e:
        lt.tools.from_openai("  ")
    assert "the definitions are empty text" in str(e.value)
    with pytest.raises(TypeError):
        lt.tools.from_openai(None)  # type: ignore[arg-type]


def test_bad_definitions_and_declarations_raise_lt_errors(tmp_path):
    with pytest.raises(lt.ConfigError) as e:
        lt.tools.from_openai("[{")
    assert e.value.stage == "import" and "not JSON" in e.value.message and e.value.line == 1
    with pytest.raises(lt.ConfigError):
        lt.tools.from_openai([{"type": "function", "function": {"description": "no name"}}])
    with pytest.raises(lt.ConfigError):
        lt.tools.from_mcp()
    with pytest.raises(lt.ConfigError):
        lt.tools.from_mcp(command=[str(tmp_path / "no-such-server")], timeout_ms=5000)
    with pytest.raises(lt.CheckError) as c:
        lt.tools.to_openai("tool t: {a: Strin} -{}-> Int;")
    assert c.value.diagnostics and c.value.diagnostics[0].code.startswith("E")
    with pytest.raises(lt.ConfigError):
        lt.tools.to_openai("1 + 2")
