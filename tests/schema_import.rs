//! `lt tools import` (`lt::schema::import`): every `tests/schema/import/<case>.json`
//! is imported, and
//!
//! - the declarations pass lt's checker (`lt::types::check_declarations`),
//!   and declare the imported tools in order, each with its description as
//!   its doc comment;
//! - the `tools.toml` loads (`lt::exec::Registry::from_str`), with one table
//!   per tool, and its check schemas compile as the executors compile them;
//! - both match the snapshot `tests/schema/import/<case>.snap`.
//!
//! Then: what the checks accept and refuse, inputs that are not tool
//! definitions (library and CLI, exit 2), deep and huge schemas, the CLI's
//! files and exit codes, and live MCP servers (`mcp-server-time` and the
//! fixture server, from the venv `support::mcp` makes): imported, then run
//! with their checks enforced.
//!
//! Updating: `INSTA_UPDATE=always cargo test --test schema_import`, then
//! read every changed `.snap`.

mod support;

use lt::schema::import::{import_text, ImportOptions, Imported};
use lt::schema::Dialect;
use serde_json::{json, Value as Json};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use support::{lt_in, TempDir, LT};

/// One case per mapping rule of `docs/tool-schemas.md`, the two reference
/// MCP servers' `tools/list` results, and each dialect's forms.
const REQUIRED: [&str; 28] = [
    "required_optional",
    "nullable",
    "enum",
    "const",
    "numbers",
    "arrays",
    "nested_objects",
    "defs_ref",
    "recursive_ref",
    "additional_properties",
    "unsupported",
    "bad_names",
    "formats_bounds",
    "annotations",
    "no_output_schema",
    "mcp_time",
    "mcp_git",
    "openai",
    "openai_functions",
    "anthropic",
    "single_tool",
    "jsonrpc_result",
    "all_of",
    "ref_siblings",
    "duplicate_names",
    "bad_annotations",
    "draft3_required",
    "big_integers",
];

fn case_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/schema/import")
}

fn import(text: &str, origin: &str) -> Result<Imported, lt::schema::import::ImportError> {
    import_text(
        text,
        &ImportOptions {
            origin: origin.to_string(),
            ..ImportOptions::default()
        },
    )
}

/// Every way the two generated texts could be unusable, as messages.
fn problems(name: &str, source: &Json, imported: &Imported) -> Vec<String> {
    let mut out = Vec::new();
    let decls = lt::types::check_declarations(&imported.declarations);
    for d in &decls.diagnostics {
        out.push(format!(
            "{name}: the declarations do not check: [{}] {}",
            d.code.as_str(),
            d.message
        ));
    }
    let declared: Vec<String> = decls.tools.iter().map(|t| t.sig.name.to_string()).collect();
    let imported_names: Vec<String> = imported.tools.iter().map(|t| t.name.clone()).collect();
    if declared != imported_names {
        out.push(format!(
            "{name}: declares {declared:?}, imported {imported_names:?}"
        ));
    }
    // Each tool's doc comment is its description: the importer's notes are
    // not part of it.
    let defs: Vec<&Json> = match source {
        Json::Array(items) => items.iter().collect(),
        Json::Object(map) => match map
            .get("tools")
            .or_else(|| map.get("functions"))
            .or_else(|| map.get("result").and_then(|r| r.get("tools")))
        {
            Some(Json::Array(items)) => items.iter().collect(),
            _ => vec![source],
        },
        _ => Vec::new(),
    };
    for (def, tool) in defs.iter().zip(&imported.tools) {
        let body = def.get("function").unwrap_or(def);
        let Some(description) = body.get("description").and_then(Json::as_str) else {
            continue;
        };
        if description.lines().count() > 60 || description.len() > 1000 {
            continue;
        }
        let doc = decls.tool(&tool.name).and_then(|t| t.doc.clone());
        if doc.as_deref() != Some(description.trim()) {
            out.push(format!(
                "{name}: the doc of {} is {doc:?}, not its description",
                tool.name
            ));
        }
    }
    let dir = std::env::temp_dir();
    match lt::exec::Registry::from_str(&imported.tools_toml, &dir, "tools.toml") {
        Ok(registry) => {
            let mut tables: Vec<String> = registry.names().map(str::to_string).collect();
            let mut names = imported_names.clone();
            tables.sort();
            names.sort();
            if tables != names {
                out.push(format!(
                    "{name}: tools.toml has tables {tables:?} for tools {names:?}"
                ));
            }
        }
        Err(e) => out.push(format!("{name}: tools.toml does not load: {e}")),
    }
    out
}

fn snapshot(path: &Path, imported: &Imported) -> Result<(), String> {
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let text = format!(
        "// ===== tools.lt =====\n{}\n# ===== tools.toml =====\n{}",
        imported.declarations, imported.tools_toml
    );
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        insta::with_settings!({
            snapshot_path => case_dir(),
            prepend_module_to_snapshot => false,
            snapshot_suffix => "",
            input_file => path,
            omit_expression => true,
            description => format!("lt tools import tests/schema/import/{stem}.json"),
        }, {
            insta::assert_snapshot!(stem.clone(), text);
        });
    }));
    result.map_err(|_| {
        format!("{stem}: output differs from {stem}.snap (or it is new): run `INSTA_UPDATE=always cargo test --test schema_import` and review it")
    })
}

#[test]
fn every_case_checks_loads_and_matches_its_snapshot() {
    let mut cases: Vec<PathBuf> = std::fs::read_dir(case_dir())
        .expect("tests/schema/import")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    cases.sort();
    let stems: Vec<String> = cases
        .iter()
        .filter_map(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
        .collect();
    let mut failures = Vec::new();
    for required in REQUIRED {
        if !stems.iter().any(|s| s == required) {
            failures.push(format!("missing case tests/schema/import/{required}.json"));
        }
    }
    for path in &cases {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let text = std::fs::read_to_string(path).expect("read case");
        let source: Json = serde_json::from_str(&text).expect("cases are JSON");
        let imported = match import(&text, &name) {
            Ok(i) => i,
            Err(e) => {
                failures.push(format!("{name}: not imported: {e}"));
                continue;
            }
        };
        failures.extend(problems(&name, &source, &imported));
        if let Err(e) = snapshot(path, &imported) {
            failures.push(e);
        }
    }
    for entry in std::fs::read_dir(case_dir()).expect("dir").flatten() {
        let p = entry.path();
        if p.extension().is_some_and(|e| e == "snap") && !p.with_extension("json").exists() {
            failures.push(format!("{}: snapshot without its case", p.display()));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The `[tools.NAME.checks]` of a tools.toml, as JSON.
fn checks_of(tools_toml: &str, tool: &str, which: &str) -> Json {
    let value: toml::Value = toml::from_str(tools_toml).expect("tools.toml parses");
    let schema = value["tools"][tool]["checks"][which].clone();
    serde_json::to_value(schema).expect("TOML → JSON")
}

fn validator(schema: &Json) -> jsonschema::Validator {
    jsonschema::options()
        .with_draft(jsonschema::Draft::Draft202012)
        .should_validate_formats(true)
        .build(schema)
        .expect("the checks compile")
}

#[test]
fn checks_accept_what_the_schema_accepts_and_refuse_the_rest() {
    let text = std::fs::read_to_string(case_dir().join("formats_bounds.json")).expect("case");
    let imported = import(&text, "formats_bounds.json").expect("imports");
    let input = validator(&checks_of(&imported.tools_toml, "schedule", "input"));
    let good = json!({
        "when": "2026-03-01T10:00:00Z", "day": "2026-03-01", "link": "https://example.com/a",
        "contact": "a@example.com", "request_id": "6f1c1c1e-2b7d-4c2a-9a57-0b1e2f3a4b5c",
        "big": 12, "seats": 12, "discount": 0, "old_style": 0.5, "code": "ABC",
        "bad_pattern": "anything", "guests": ["b@example.com"], "note": null,
        "slot": {"start": "10:00:00Z", "minutes": 30}, "slots": [{"start": "11:30:00Z", "minutes": 15}]
    });
    assert!(
        input.is_valid(&good),
        "{:?}",
        input
            .iter_errors(&good)
            .map(|e| e.to_string())
            .collect::<Vec<_>>()
    );
    for (field, bad) in [
        ("when", json!("tomorrow")),
        ("day", json!("01/03/2026")),
        ("contact", json!("nobody")),
        ("request_id", json!("not-a-uuid")),
        ("seats", json!(0)),
        ("seats", json!(13)),
        ("discount", json!(1)),
        ("old_style", json!(0)),
        ("code", json!("AB")),
        ("code", json!("abc")),
        ("guests", json!([])),
        ("guests", json!(["x"])),
        ("note", json!("x".repeat(201))),
        ("slot", json!({"start": "10:00:00Z", "minutes": 20})),
        ("slots", json!([{"start": "noon", "minutes": 15}])),
    ] {
        let mut arg = good.clone();
        arg[field] = bad.clone();
        assert!(!input.is_valid(&arg), "{field} = {bad} passes the checks");
    }
    let output = validator(&checks_of(&imported.tools_toml, "schedule", "output"));
    assert!(output.is_valid(&json!({"confirmed_at": "2026-03-01T10:00:00Z", "count": 0})));
    assert!(!output.is_valid(&json!({"confirmed_at": "later"})));
    assert!(!output.is_valid(&json!({"confirmed_at": "2026-03-01T10:00:00Z", "count": -1})));

    // Values lt cannot write as an enum are checked, null where it may be.
    let text = std::fs::read_to_string(case_dir().join("enum.json")).expect("case");
    let imported = import(&text, "enum.json").expect("imports");
    let input = validator(&checks_of(&imported.tools_toml, "set_status", "input"));
    let base = json!({"status": "open", "severity": 2, "size": "small"});
    assert!(input.is_valid(&base));
    for (field, value, ok) in [
        ("severity", json!(4), false),
        ("weight", json!(2.5), true),
        ("weight", json!(3), false),
        ("flag", json!(false), false),
        ("mixed", json!(1), true),
        ("mixed", json!(null), true),
        ("mixed", json!(2), false),
        ("nullable_level", json!(null), true),
        ("nullable_level", json!(2), true),
        ("nullable_level", json!(3), false),
    ] {
        let mut arg = base.clone();
        arg[field] = value.clone();
        assert_eq!(input.is_valid(&arg), ok, "{field} = {value}");
    }

    // Keywords beside a `$ref` and in `allOf` are checked with the
    // target's.
    let text = std::fs::read_to_string(case_dir().join("ref_siblings.json")).expect("case");
    let imported = import(&text, "ref_siblings.json").expect("imports");
    let input = validator(&checks_of(&imported.tools_toml, "contact", "input"));
    for (h, ok) in [("a@b", true), ("", false), ("a@bc", false), ("abc", false)] {
        let arg = json!({"h": h, "person": {"name": "n", "email": "e"}});
        assert_eq!(input.is_valid(&arg), ok, "h = {h:?}");
    }
    let text = std::fs::read_to_string(case_dir().join("all_of.json")).expect("case");
    let imported = import(&text, "all_of.json").expect("imports");
    let input = validator(&checks_of(&imported.tools_toml, "p3", "input"));
    assert!(input.is_valid(&json!({"f": "a@example.com"})));
    assert!(!input.is_valid(&json!({"f": "nobody"})));
    let input = validator(&checks_of(&imported.tools_toml, "merged", "input"));
    let pet = json!({"name": "Rex", "age": 3});
    assert!(input.is_valid(&json!({"pet": pet, "count": 5})));
    assert!(!input.is_valid(&json!({"pet": pet, "count": 6})));
    assert!(!input.is_valid(&json!({"pet": {"name": "", "age": 3}})));
}

/// An input that is not tool definitions, the dialect forced, what the
/// message says, and the line:column it names.
type ErrorCase = (
    &'static str,
    Option<Dialect>,
    &'static str,
    Option<(usize, usize)>,
);

const ERRORS: [ErrorCase; 16] = [
    ("{\"tools\": [\n  {\"name\": \"a\",\n   \"inputSchema\" {}}]}", None, "not JSON: expected `:`", Some((3, 18))),
    ("", None, "the file is empty", None),
    ("   \n", None, "the file is empty", None),
    ("42", None, "the file holds a number, not tool definitions", None),
    ("[]", None, "the file lists no tools", None),
    ("{\"tools\": []}", None, "the file lists no tools", None),
    ("{\"tools\": 3}", None, "`tools` is not a list of tool definitions", None),
    ("[\"get_time\"]", None, "[0] is a string, not a tool definition", None),
    ("{\"tools\": [{\"name\": \"x\", \"description\": \"d\"}]}", None, "tools[0] (`x`) is not a recognisable tool definition", None),
    ("{\"tools\": [{\"inputSchema\": {}}]}", None, "tools[0] has no `name`", None),
    ("[{\"name\": 3, \"inputSchema\": {}}]", None, "the `name` of [0] is a number, not a string", None),
    ("[{\"name\": \"\", \"input_schema\": {}}]", None, "[0] has an empty `name`", None),
    ("[{\"name\": \"a\", \"inputSchema\": \"object\"}]", None, "the `inputSchema` of [0] (`a`) is a string, not a JSON Schema", None),
    ("[{\"name\": \"a\", \"inputSchema\": {}}]", Some(Dialect::Anthropic), "[0] (`a`) has no `input_schema`", None),
    ("[{\"type\": \"web_search_20250305\", \"name\": \"web_search\"}]", None, "an Anthropic built-in tool", None),
    ("{\"jsonrpc\": \"2.0\", \"id\": 1, \"error\": {\"code\": -32601, \"message\": \"Method not found\"}}", None, "JSON-RPC error response", None),
];

#[test]
fn input_that_is_not_tool_definitions_is_an_error_saying_where_and_what() {
    for (text, dialect, expected, at) in ERRORS {
        let options = ImportOptions {
            dialect,
            origin: "t.json".into(),
            ..ImportOptions::default()
        };
        let err = match import_text(text, &options) {
            Ok(_) => panic!("{text:?} was imported"),
            Err(e) => e,
        };
        assert!(err.message.contains(expected), "{text:?}: {err}");
        assert_eq!(err.line.zip(err.column), at, "{text:?}: {err}");
    }
}

#[test]
fn what_the_import_works_around_is_warned_about() {
    // A byte order mark is skipped.
    let imported =
        import("\u{feff}{\"name\": \"a\", \"inputSchema\": {}}", "bom.json").expect("imports");
    assert_eq!(imported.tools.len(), 1);
    assert!(imported.warnings.is_empty(), "{:?}", imported.warnings);
    // Repeated names, hints that are not booleans: warnings, and notes.
    let text = std::fs::read_to_string(case_dir().join("duplicate_names.json")).expect("case");
    let imported = import(&text, "duplicate_names.json").expect("imports");
    assert_eq!(
        imported.warnings,
        ["2 definitions repeat the tool name \"dup\" (tools[0], tools[2]): imported as `dup`, `dup_2`, each calling the one tool of that name; keep the right definition"]
    );
    assert!(imported
        .declarations
        .contains("// dup_2: the definitions repeat the name \"dup\""));
    let text = std::fs::read_to_string(case_dir().join("bad_annotations.json")).expect("case");
    let imported = import(&text, "bad_annotations.json").expect("imports");
    assert_eq!(imported.warnings.len(), 6, "{:?}", imported.warnings);
    assert!(imported.warnings[0].contains("tools[0] (`quoted`): readOnlyHint is \"true\", not a boolean: MCP's default (false) applies"));
    assert!(imported
        .declarations
        .contains("readOnlyHint is \"true\", not a boolean"));
    // The dialect forced, and the definition looks like another one.
    let err = import_text(
        "[{\"type\": \"function\", \"function\": {\"name\": \"f\", \"parameters\": {}}}]",
        &ImportOptions {
            dialect: Some(Dialect::Mcp),
            ..ImportOptions::default()
        },
    )
    .err()
    .and_then(|e| e.help);
    assert_eq!(
        err.as_deref(),
        Some("is `--format mcp` right? it looks like an OpenAI tool (`--format openai`)")
    );
}

#[test]
fn deep_schemas_are_cut_off_and_never_overflow() {
    // A property nested 100,000 objects deep, and a default as deep.
    let depth = 100_000;
    let mut schema = String::new();
    for _ in 0..depth {
        schema.push_str("{\"type\": \"object\", \"properties\": {\"a\": ");
    }
    schema.push_str("{\"type\": \"string\"}");
    for _ in 0..depth {
        schema.push_str("}}");
    }
    let deep_default = format!("{}1{}", "[".repeat(depth), "]".repeat(depth));
    let text = format!(
        "[{{\"name\": \"deep\", \"inputSchema\": {{\"type\": \"object\", \"properties\": {{\"x\": {schema}, \"d\": {{\"type\": \"array\", \"default\": {deep_default}}}}}}}}}]"
    );
    let imported = import(&text, "deep.json").expect("imports");
    assert!(imported
        .declarations
        .contains("nested more than 32 levels deep"));
    assert!(
        imported.declarations.contains("default [[[[[…]]]]]"),
        "{}",
        imported.declarations
    );
    let source = json!(null);
    assert_eq!(problems("deep", &source, &imported), Vec::<String>::new());

    // JSON nested a million levels is read, and refused as not a tool.
    let text = format!("{}{}", "[".repeat(1_000_000), "]".repeat(1_000_000));
    let err = import(&text, "deep.json").expect_err("not a tool");
    assert!(err.message.contains("[0] is an array"), "{err}");
}

#[test]
fn exponential_and_huge_schemas_stay_bounded() {
    // D0 has a checked field; each D(i) holds two D(i-1): expanded, D13 has
    // 2^14 parts (deeper chains reach the depth bound first). Aliases past
    // the size bound are Json; the checks, inlined at each use, are cut.
    let mut defs = serde_json::Map::new();
    defs.insert("D0".into(), json!({"type": "object", "properties": {"n": {"type": "integer", "minimum": 0}}, "required": ["n"]}));
    for i in 1..=13 {
        let prev = format!("#/$defs/D{}", i - 1);
        defs.insert(format!("D{i}"), json!({"type": "object", "properties": {"a": {"$ref": prev}, "b": {"$ref": prev}}, "required": ["a", "b"]}));
    }
    let tool = json!({"name": "laughs", "inputSchema": {"type": "object", "$defs": defs, "properties": {"top": {"$ref": "#/$defs/D13"}}, "required": ["top"]}});
    let started = std::time::Instant::now();
    let imported = import(&json!([tool]).to_string(), "laughs.json").expect("imports");
    assert!(started.elapsed() < std::time::Duration::from_secs(20));
    assert!(imported
        .declarations
        .contains("too large for lt once its aliases are expanded"));
    assert!(imported
        .declarations
        .contains("some run-time checks were left out"));
    assert_eq!(
        problems("laughs", &json!(null), &imported),
        Vec::<String>::new()
    );

    // 300 tools of 40 properties each.
    let tools: Vec<Json> = (0..300)
        .map(|t| {
            let props: serde_json::Map<String, Json> = (0..40)
                .map(|p| (format!("p{p}"), json!({"type": "string", "description": format!("property {p}"), "maxLength": 10})))
                .collect();
            json!({"name": format!("tool-{t}"), "description": "x", "inputSchema": {"type": "object", "properties": props}})
        })
        .collect();
    let imported = import(&json!({"tools": tools}).to_string(), "huge.json").expect("imports");
    assert_eq!(imported.tools.len(), 300);
    assert_eq!(
        problems("huge", &json!(null), &imported),
        Vec::<String>::new()
    );
}

fn lt_stdin(dir: &Path, args: &[&str], stdin: &str) -> support::Out {
    let mut child = Command::new(LT)
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run lt");
    if let Some(mut input) = child.stdin.take() {
        let _ = input.write_all(stdin.as_bytes());
    }
    let out = child.wait_with_output().expect("lt ends");
    support::Out {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

#[test]
fn cli_prints_both_files_and_exits_0() {
    let dir = TempDir::new("schema-import", "print");
    let case = case_dir().join("mcp_time.json");
    let out = lt_in(
        &dir.0,
        &["tools", "import", &case.display().to_string()],
        &[],
    );
    assert_eq!(out.code, 0, "{out:?}");
    assert!(
        out.stdout.starts_with("// ===== tools.lt =====\n"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains("\n# ===== tools.toml =====\n[tools.")
            || out.stdout.contains("\n# ===== tools.toml =====\n# ")
    );
    assert!(out.stdout.contains("tool convert_time: {"));
    assert!(out.stderr.is_empty(), "{}", out.stderr);

    // Standard input, and --format.
    let text = std::fs::read_to_string(case_dir().join("anthropic.json")).expect("case");
    let out = lt_stdin(
        &dir.0,
        &["tools", "import", "-", "--format", "anthropic"],
        &text,
    );
    assert_eq!(out.code, 0, "{out:?}");
    assert!(
        out.stdout.contains("from standard input (Anthropic)"),
        "{}",
        out.stdout
    );
    let out = lt_stdin(&dir.0, &["tools", "import", "-", "--format", "mcp"], &text);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(
        out.stderr.contains("has no `inputSchema`"),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr
            .contains("help: it has `input_schema`: is `--format mcp` right?"),
        "{}",
        out.stderr
    );
}

#[test]
fn cli_writes_the_files_with_out_and_keeps_existing_ones() {
    let dir = TempDir::new("schema-import", "out");
    let case = case_dir().join("formats_bounds.json").display().to_string();
    let out = lt_in(
        &dir.0,
        &["tools", "import", &case, "--out", "gen/tools"],
        &[],
    );
    assert_eq!(out.code, 0, "{out:?}");
    assert!(out.stdout.is_empty());
    assert!(out.stderr.contains("tools.lt and"), "{}", out.stderr);
    let decls = std::fs::read_to_string(dir.0.join("gen/tools/tools.lt")).expect("tools.lt");
    let toml = std::fs::read_to_string(dir.0.join("gen/tools/tools.toml")).expect("tools.toml");
    assert!(lt::types::check_declarations(&decls).is_ok());
    assert!(toml.contains("[tools.schedule.checks]"));

    // The files are there: not replaced without --force.
    let out = lt_in(
        &dir.0,
        &["tools", "import", &case, "--out", "gen/tools"],
        &[],
    );
    assert_eq!(out.code, 2, "{out:?}");
    assert!(
        out.stderr
            .contains("exists; lt tools import does not replace it"),
        "{}",
        out.stderr
    );
    let out = lt_in(
        &dir.0,
        &["tools", "import", &case, "--out", "gen/tools", "--force"],
        &[],
    );
    assert_eq!(out.code, 0, "{out:?}");

    // A program made of the declarations runs against the skeleton: the
    // placeholder executor answers Err, which the program handles.
    let program = format!(
        "{decls}\nmatch exec tool schedule {{when = \"2026-03-01T10:00:00Z\", seats = 2}} {{ Ok(r) => r.confirmed_at, Err(e) => e }}\n"
    );
    dir.write("gen/tools/main.lt", &program);
    let out = lt_in(
        &dir.0,
        &[
            "run",
            "gen/tools/main.lt",
            "--executors",
            "gen/tools/tools.toml",
        ],
        &[],
    );
    assert_eq!(out.code, 0, "{out:?}");
    assert!(
        out.stdout.contains("schedule has no executor yet"),
        "{}",
        out.stdout
    );
}

#[test]
fn cli_errors_exit_2_with_a_message() {
    let dir = TempDir::new("schema-import", "errors");
    let bad = dir.write(
        "bad.json",
        "{\"tools\": [\n  {\"name\": \"a\",\n   \"inputSchema\" {}}]}",
    );
    let nameless = dir.write("nameless.json", "{\"tools\": [{\"inputSchema\": {}}]}");
    let cases: [(Vec<&str>, &str); 9] = [
        (
            vec!["tools", "import", &bad],
            "bad.json:3:18: not JSON: expected `:`",
        ),
        (vec!["tools", "import", &nameless], "tools[0] has no `name`"),
        (
            vec!["tools", "import", "missing.json"],
            "cannot read `missing.json`",
        ),
        (vec!["tools", "import"], "name the definitions file"),
        (
            vec!["tools", "import", "x.json", "--mcp", "--", "server"],
            "give a definitions file, or --mcp -- COMMAND…, not both",
        ),
        (
            vec!["tools", "import", "--mcp"],
            "--mcp needs the server's command line",
        ),
        (
            vec!["tools", "import", "--mcp", "cat"],
            "help: to run `cat` as the MCP server, put it after `--`: lt tools import --mcp -- cat",
        ),
        (
            vec!["tools", "import", "x.json", "--", "server"],
            "add --mcp",
        ),
        (
            vec![
                "tools", "import", "--mcp", "--format", "openai", "--", "server",
            ],
            "--format must be mcp",
        ),
    ];
    for (args, expected) in cases {
        let out = lt_in(&dir.0, &args, &[]);
        assert_eq!(out.code, 2, "{args:?}: {out:?}");
        assert!(out.stderr.contains(expected), "{args:?}: {}", out.stderr);
        assert!(out.stdout.is_empty(), "{args:?}: {}", out.stdout);
        assert!(!out.stderr.contains("panicked"), "{args:?}: {}", out.stderr);
    }
    // A server that cannot start.
    let out = lt_in(
        &dir.0,
        &["tools", "import", "--mcp", "--", "./no-such-server"],
        &[],
    );
    assert_eq!(out.code, 2, "{out:?}");
    assert!(
        out.stderr.contains("could not be started"),
        "{}",
        out.stderr
    );
    // --force needs --out.
    let out = lt_in(&dir.0, &["tools", "import", "x.json", "--force"], &[]);
    assert_eq!(out.code, 2, "{out:?}");

    // Not UTF-8; --out that is empty or a file.
    let latin = dir.0.join("latin.json");
    std::fs::write(
        &latin,
        b"{\"tools\": [{\"name\": \"caf\xe9\", \"inputSchema\": {}}]}",
    )
    .expect("write");
    let good = dir.write("good.json", "{\"name\": \"a\", \"inputSchema\": {}}");
    dir.write("afile", "");
    for (args, expected) in [
        (vec!["tools", "import", "latin.json"], "is not valid UTF-8: invalid byte at line 1, column 25 (byte offset 24); JSON must be UTF-8"),
        (vec!["tools", "import", &good, "--out", ""], "--out needs a folder name"),
        (vec!["tools", "import", &good, "--out", "afile"], "`afile` is a file, not a folder"),
        (vec!["tools", "import", &good, "--out", "afile/sub"], "`afile` is a file, not a folder"),
    ] {
        let out = lt_in(&dir.0, &args, &[]);
        assert_eq!(out.code, 2, "{args:?}: {out:?}");
        assert!(out.stderr.contains(expected), "{args:?}: {}", out.stderr);
    }
    assert!(!dir.0.join("tools.lt").exists());
}

#[test]
fn cli_warns_about_what_it_works_around_and_skips_a_bom() {
    let dir = TempDir::new("schema-import", "warnings");
    let case = case_dir()
        .join("duplicate_names.json")
        .display()
        .to_string();
    let out = lt_in(&dir.0, &["tools", "import", &case], &[]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(
        out.stderr.starts_with(&format!(
            "warning: {case}: 2 definitions repeat the tool name \"dup\""
        )),
        "{}",
        out.stderr
    );
    assert!(out.stdout.contains("tool dup_2:"), "{}", out.stdout);
    let text = std::fs::read_to_string(case_dir().join("mcp_time.json")).expect("case");
    let out = lt_stdin(
        &dir.0,
        &["tools", "import", "-"],
        &format!("\u{feff}{text}"),
    );
    assert_eq!(out.code, 0, "{out:?}");
    assert!(out.stderr.is_empty(), "{}", out.stderr);
    assert!(out.stdout.contains("tool convert_time: {"));
}

#[test]
fn cli_imports_a_live_mcp_server_and_the_result_runs() {
    let dir = TempDir::new("schema-import", "live");
    let server = support::mcp::script("mcp-server-time")
        .display()
        .to_string();
    let out = lt_in(
        &dir.0,
        &["tools", "import", "--mcp", "--out", "gen", "--", &server],
        &[],
    );
    assert_eq!(out.code, 0, "{out:?}");
    let decls = std::fs::read_to_string(dir.0.join("gen/tools.lt")).expect("tools.lt");
    let toml = std::fs::read_to_string(dir.0.join("gen/tools.toml")).expect("tools.toml");
    // The same declarations as from the recorded tools/list.
    let recorded = std::fs::read_to_string(case_dir().join("mcp_time.json")).expect("case");
    let recorded = import(&recorded, "x").expect("imports");
    let body = |d: &str| d.lines().skip(1).collect::<Vec<_>>().join("\n");
    assert_eq!(body(&decls), body(&recorded.declarations));
    assert!(
        toml.contains(&format!(
            "mcp = {{ command = [\"{server}\"], tool = \"get_current_time\" }}"
        )),
        "{toml}"
    );
    let program = format!(
        "{decls}\nmatch exec tool get_current_time {{timezone = \"Etc/UTC\"}} {{ Ok(t) => t.timezone, Err(e) => e }}\n"
    );
    dir.write("gen/main.lt", &program);
    let out = lt_in(
        &dir.0,
        &["run", "gen/main.lt", "--executors", "gen/tools.toml"],
        &[],
    );
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(out.stdout.trim(), "\"Etc/UTC\"", "{out:?}");
}

#[test]
fn checks_imported_from_a_live_server_are_enforced() {
    // The fixture server's `schedule` takes a date-time, an email and
    // bounded numbers. Its command has a relative argument: the import
    // makes the program absolute and sets `cwd`, so tools.toml runs it
    // from any folder.
    let dir = TempDir::new("schema-import", "live-checks");
    let fixtures = support::mcp::fixtures();
    let python = support::mcp::python().display().to_string();
    let out = lt_in(
        &fixtures,
        &[
            "tools",
            "import",
            "--mcp",
            "--out",
            &dir.path("gen"),
            "--",
            &python,
            "server.py",
        ],
        &[],
    );
    assert_eq!(out.code, 0, "{out:?}");
    let toml = std::fs::read_to_string(dir.0.join("gen/tools.toml")).expect("tools.toml");
    assert!(
        toml.contains(&format!("cwd = {:?}", fixtures.display().to_string())),
        "{toml}"
    );
    assert!(toml.contains("[tools.schedule.checks]"), "{toml}");
    let decls = std::fs::read_to_string(dir.0.join("gen/tools.lt")).expect("tools.lt");
    assert!(
        decls.contains("// checked at run time: format date-time"),
        "{decls}"
    );
    let call = |at: &str, seats: i64| {
        let program = format!(
            "{decls}\nmatch exec tool schedule {{at = {at:?}, contact = \"a@example.com\", seats = Some({seats})}} {{ Ok(r) => r.contact, Err(e) => e }}\n"
        );
        dir.write("gen/main.lt", &program);
        lt_in(
            &dir.0,
            &["run", "gen/main.lt", "--executors", "gen/tools.toml"],
            &[],
        )
    };
    let out = call("2026-03-01T10:00:00Z", 2);
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(out.stdout.trim(), "\"a@example.com\"", "{out:?}");
    for (at, seats, why) in [
        ("soon", 2, "is not a \\\"date-time\\\""),
        ("2026-03-01T10:00:00Z", 13, "maximum of 12"),
    ] {
        let out = call(at, seats);
        assert_eq!(out.code, 0, "{out:?}");
        assert!(
            out.stdout
                .contains("was not run: its argument fails the checks of tools.toml"),
            "{out:?}"
        );
        assert!(out.stdout.contains(why), "{why}: {out:?}");
    }
}
