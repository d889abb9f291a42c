//! `lt tools export` and the declarations-only checker.
//!
//! - Snapshots of each dialect over `tests/schema/export/every_type.lt`
//!   (every type feature), with the problems reported.
//! - Every OpenAI definition marked `"strict": true` obeys OpenAI's strict-mode
//!   rules (the checker below), for the files under `tests/schema/export` and
//!   the declarations of every example program.
//! - Every emitted schema is valid JSON Schema (draft 2020-12): it conforms
//!   to the meta-schema and compiles (its `$ref`s resolve); sample arguments
//!   are accepted or rejected as lt's boundary would.
//! - `lt::types::check_declarations`: a file without an expression.
//! - The command line: exit codes and messages.
//!
//! Updating the snapshots: `INSTA_UPDATE=always cargo test --test schema_export`,
//! then read every changed `.snap`.

use lt::schema::export::{export, Export, Severity};
use lt::schema::Dialect;
use lt::types::check_declarations;
use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

const LT: &str = env!("CARGO_BIN_EXE_lt");
const DIALECTS: [Dialect; 3] = [Dialect::Openai, Dialect::Anthropic, Dialect::Mcp];

fn repo(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// `.lt` files under `dir`, recursively, sorted.
fn lt_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut work = vec![dir.to_path_buf()];
    while let Some(d) = work.pop() {
        for entry in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = entry.path();
            if p.is_dir() {
                work.push(p);
            } else if p.extension().is_some_and(|x| x == "lt") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// The files exported by the property tests: the export inputs without
/// errors, and every example whose declarations check.
fn corpus() -> Vec<(PathBuf, String)> {
    lt_files(&repo("tests/schema/export"))
        .into_iter()
        .chain(lt_files(&repo("examples")))
        .map(|p| {
            let text = read(&p);
            (p, text)
        })
        .filter(|(_, text)| check_declarations(text).is_ok())
        .collect()
}

fn export_text(text: &str, dialect: Dialect) -> Export {
    let decls = check_declarations(text);
    assert!(decls.is_ok(), "{:?}", decls.diagnostics);
    export(&decls, dialect)
}

/// The definitions as printed, then the problems, one a line.
fn report(e: &Export) -> String {
    let mut s = e.definitions.to_pretty_string();
    s.push_str("\n--- problems\n");
    for p in &e.problems {
        s.push_str(&format!("{:?}: {}\n", p.severity, p.message));
        if let Some(h) = &p.help {
            s.push_str(&format!("  help: {h}\n"));
        }
    }
    s
}

fn tool_list(e: &Export, dialect: Dialect) -> Vec<Value> {
    let v = e.definitions.to_value();
    let list = match dialect {
        Dialect::Mcp => v["tools"].clone(),
        Dialect::Openai | Dialect::Anthropic => v,
    };
    list.as_array().cloned().unwrap_or_default()
}

/// Every schema root of a definition: (label, schema).
fn schemas(def: &Value, dialect: Dialect) -> Vec<(String, Value)> {
    match dialect {
        Dialect::Openai => vec![(
            format!("{} parameters", def["function"]["name"]),
            def["function"]["parameters"].clone(),
        )],
        Dialect::Anthropic => vec![(
            format!("{} input_schema", def["name"]),
            def["input_schema"].clone(),
        )],
        Dialect::Mcp => {
            let mut v = vec![(
                format!("{} inputSchema", def["name"]),
                def["inputSchema"].clone(),
            )];
            if let Some(out) = def.get("outputSchema") {
                v.push((format!("{} outputSchema", def["name"]), out.clone()));
            }
            v
        }
    }
}

// ------------------------------------------------------------------ snapshots

#[test]
fn every_type_in_each_dialect() {
    let text = read(&repo("tests/schema/export/every_type.lt"));
    for dialect in DIALECTS {
        let e = export_text(&text, dialect);
        assert!(!e.has_errors(), "{}", report(&e));
        let name = format!("every_type_{dialect:?}").to_lowercase();
        insta::assert_snapshot!(name, report(&e));
    }
}

// ------------------------------------------------------------------ OpenAI strict mode

const STRICT_KEYWORDS: [&str; 20] = [
    "type",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "enum",
    "const",
    "anyOf",
    "$ref",
    "$defs",
    "description",
    "pattern",
    "format",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "minItems",
    "maxItems",
];

struct Strict<'a> {
    root: &'a Value,
    at: String,
    problems: Vec<String>,
    properties: usize,
    enum_values: usize,
}

impl Strict<'_> {
    fn fail(&mut self, path: &str, what: &str) {
        self.problems.push(format!("{}{path}: {what}", self.at));
    }

    /// `depth`: objects enclosing this schema.
    fn schema(&mut self, s: &Value, path: &str, depth: usize) {
        let Some(obj) = s.as_object() else {
            return self.fail(path, "a schema must be an object");
        };
        for k in obj.keys() {
            if !STRICT_KEYWORDS.contains(&k.as_str()) {
                self.fail(
                    path,
                    &format!("keyword `{k}` is not supported in strict mode"),
                );
            }
        }
        if let Some(r) = obj.get("$ref") {
            if obj.len() != 1 {
                self.fail(path, "`$ref` must stand alone");
            }
            let target = r.as_str().and_then(|r| r.strip_prefix("#/$defs/"));
            match target {
                Some(name) if self.root["$defs"].get(name).is_some() => {}
                _ => self.fail(
                    path,
                    &format!("`$ref` {r} does not point into the root's $defs"),
                ),
            }
            return;
        }
        if obj.contains_key("$defs") && !path.is_empty() {
            self.fail(path, "`$defs` only at the root");
        }
        if let Some(branches) = obj.get("anyOf") {
            if path.is_empty() {
                self.fail(path, "the root must not be `anyOf`");
            }
            for (i, b) in branches.as_array().into_iter().flatten().enumerate() {
                self.schema(b, &format!("{path}/anyOf/{i}"), depth);
            }
            return;
        }
        let types: Vec<&str> = match obj.get("type") {
            Some(Value::String(t)) => vec![t.as_str()],
            Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
            _ => return self.fail(path, "every schema needs `type`, `anyOf` or `$ref`"),
        };
        for t in &types {
            if ![
                "string", "number", "integer", "boolean", "object", "array", "null",
            ]
            .contains(t)
            {
                self.fail(path, &format!("unknown type `{t}`"));
            }
        }
        if let Some(values) = obj.get("enum") {
            self.enum_values += values.as_array().map_or(0, Vec::len);
        }
        if types.contains(&"array") {
            match obj.get("items") {
                Some(items) => self.schema(items, &format!("{path}/items"), depth),
                None => self.fail(path, "an array needs `items`"),
            }
        }
        if types.contains(&"object") {
            if depth + 1 > 10 {
                self.fail(path, "more than 10 levels of nested objects");
            }
            if obj.get("additionalProperties") != Some(&Value::Bool(false)) {
                self.fail(path, "an object needs `additionalProperties: false`");
            }
            let props = obj.get("properties").and_then(Value::as_object);
            let Some(props) = props else {
                return self.fail(path, "an object needs `properties`");
            };
            let keys: BTreeSet<&str> = props.keys().map(String::as_str).collect();
            let required: BTreeSet<&str> = obj
                .get("required")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            if keys != required {
                self.fail(
                    path,
                    &format!("`required` {required:?} must list every property {keys:?}"),
                );
            }
            self.properties += props.len();
            for (k, v) in props {
                self.schema(v, &format!("{path}/properties/{k}"), depth + 1);
            }
        }
    }
}

/// The strict-mode problems of one OpenAI definition (empty: none).
fn strict_problems(def: &Value) -> Vec<String> {
    let f = &def["function"];
    let name = f["name"].as_str().unwrap_or("");
    let mut out = Vec::new();
    if def["type"] != "function" {
        out.push(format!("{name}: `type` must be \"function\""));
    }
    let name_ok = (1..=64).contains(&name.len())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if !name_ok {
        out.push(format!("{name}: invalid function name"));
    }
    let root = &f["parameters"];
    if root["type"] != "object" {
        out.push(format!("{name}: the root must be an object"));
    }
    let mut ck = Strict {
        root,
        at: format!("{name}: parameters"),
        problems: Vec::new(),
        properties: 0,
        enum_values: 0,
    };
    ck.schema(root, "", 0);
    for (k, d) in root
        .get("$defs")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        ck.schema(d, &format!("/$defs/{k}"), 0);
    }
    if ck.properties > 5000 || ck.enum_values > 1000 {
        ck.problems
            .push(format!("{name}: beyond strict mode's size limits"));
    }
    out.extend(ck.problems);
    out
}

#[test]
fn the_strict_checker_catches_violations() {
    let def = |params: Value| json!({"type": "function", "function": {"name": "t", "parameters": params, "strict": true}});
    let bad = [
        json!({"type": "object", "properties": {"a": {"type": "string"}}, "required": [], "additionalProperties": false}),
        json!({"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}),
        json!({"type": "object", "properties": {"a": {}}, "required": ["a"], "additionalProperties": false}),
        json!({"type": "object", "properties": {"a": {"type": "string", "minLength": 1}}, "required": ["a"], "additionalProperties": false}),
        json!({"type": "object", "properties": {"a": {"$ref": "#/$defs/A", "description": "x"}}, "required": ["a"], "additionalProperties": false, "$defs": {"A": {"type": "string"}}}),
        json!({"type": "object", "properties": {"a": {"$ref": "#/$defs/B"}}, "required": ["a"], "additionalProperties": false}),
        json!({"anyOf": [{"type": "object", "properties": {}, "required": [], "additionalProperties": false}]}),
    ];
    for params in bad {
        assert!(
            !strict_problems(&def(params.clone())).is_empty(),
            "accepted {params}"
        );
    }
    let good = json!({"type": "object", "properties": {"a": {"anyOf": [{"$ref": "#/$defs/A"}, {"type": "null"}]}}, "required": ["a"], "additionalProperties": false, "$defs": {"A": {"type": "string"}}});
    assert_eq!(strict_problems(&def(good)), Vec::<String>::new());
}

#[test]
fn openai_output_obeys_strict_mode() {
    let mut checked = 0;
    for (path, text) in corpus() {
        let e = export_text(&text, Dialect::Openai);
        for def in tool_list(&e, Dialect::Openai) {
            let name = def["function"]["name"].as_str().unwrap_or("").to_string();
            if def["function"]["strict"] == true {
                let problems = strict_problems(&def);
                assert!(problems.is_empty(), "{}: {problems:#?}", path.display());
                checked += 1;
            } else {
                assert_eq!(def["function"]["strict"], false);
                let warned = e
                    .problems
                    .iter()
                    .any(|p| p.severity == Severity::Warning && p.tool.as_ref() == name);
                assert!(
                    warned,
                    "{}: {name} is not strict, and no warning says why",
                    path.display()
                );
            }
        }
    }
    assert!(checked > 20, "only {checked} strict definitions checked");
}

#[test]
fn json_is_exported_without_strict_mode_with_a_warning() {
    let e = export_text(
        &read(&repo("tests/schema/export/every_type.lt")),
        Dialect::Openai,
    );
    let defs = tool_list(&e, Dialect::Openai);
    let store = defs.iter().find(|d| d["function"]["name"] == "store_event");
    let store = store.cloned().unwrap_or_default();
    assert_eq!(store["function"]["strict"], false);
    let warnings: Vec<&str> = e
        .problems
        .iter()
        .filter(|p| p.severity == Severity::Warning)
        .map(|p| p.message.as_str())
        .collect();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].contains("store_event") && warnings[0].contains("payload.meta"),
        "{warnings:?}"
    );
}

// ------------------------------------------------------------------ JSON Schema validity

#[test]
fn every_schema_is_valid_json_schema_2020_12() {
    let mut n = 0;
    for (path, text) in corpus() {
        for dialect in DIALECTS {
            let e = export_text(&text, dialect);
            for def in tool_list(&e, dialect) {
                for (label, schema) in schemas(&def, dialect) {
                    let at = format!("{} {dialect:?} {label}", path.display());
                    if let Err(err) = jsonschema::draft202012::meta::validate(&schema) {
                        panic!("{at}: not a valid 2020-12 schema: {err}\n{schema:#}");
                    }
                    if let Err(err) = jsonschema::draft202012::new(&schema) {
                        panic!("{at}: does not compile: {err}\n{schema:#}");
                    }
                    n += 1;
                }
            }
        }
    }
    assert!(n > 60, "only {n} schemas checked");
}

/// The input schema of `tool` in `dialect`, compiled.
fn validator(dialect: Dialect, tool: &str) -> jsonschema::Validator {
    let e = export_text(&read(&repo("tests/schema/export/every_type.lt")), dialect);
    let defs = tool_list(&e, dialect);
    let def = defs
        .iter()
        .find(|d| d["name"] == tool || d["function"]["name"] == tool)
        .cloned()
        .unwrap_or_else(|| panic!("no {tool}"));
    let schema = schemas(&def, dialect).remove(0).1;
    jsonschema::draft202012::new(&schema).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn arguments_are_accepted_as_lt_would_send_them() {
    let charge = json!({"customer": "c1", "amount": {"cents": 500, "currency": "EUR"}, "idempotency_key": "k"});
    let anthropic = validator(Dialect::Anthropic, "charge");
    let openai = validator(Dialect::Openai, "charge");
    // lt leaves a `None` field out; a null means `None` too.
    assert!(anthropic.is_valid(&charge));
    let mut with_null = charge.clone();
    with_null["note"] = Value::Null;
    assert!(anthropic.is_valid(&with_null));
    // Strict mode: every property present, `None` as null.
    assert!(!openai.is_valid(&charge));
    assert!(openai.is_valid(&with_null));
    let mut bad_enum = with_null.clone();
    bad_enum["amount"]["currency"] = json!("GBP");
    assert!(!anthropic.is_valid(&bad_enum) && !openai.is_valid(&bad_enum));
    let mut extra = with_null.clone();
    extra["surprise"] = json!(1);
    assert!(!anthropic.is_valid(&extra) && !openai.is_valid(&extra));
    let mut float_cents = with_null;
    float_cents["amount"]["cents"] = json!(1.5);
    assert!(!anthropic.is_valid(&float_cents));
    // Unit input: the empty object. Approval fields are not parameters.
    assert!(validator(Dialect::Mcp, "ping").is_valid(&json!({})));
    let delete = validator(Dialect::Mcp, "delete_file");
    assert!(delete.is_valid(&json!({"path": "a"})));
    assert!(!delete.is_valid(&json!({"path": "a", "approval": "apv-1"})));
    // Json: anything.
    let store = validator(Dialect::Anthropic, "store_event");
    assert!(store.is_valid(&json!({"kind": "k", "payload": {"meta": [1, {"a": null}], "at": 3}})));
}

// ------------------------------------------------------------------ MCP specifics

#[test]
fn mcp_annotations_follow_effects() {
    let e = export_text(
        &read(&repo("tests/schema/export/every_type.lt")),
        Dialect::Mcp,
    );
    let defs = tool_list(&e, Dialect::Mcp);
    let get = |name: &str| {
        defs.iter()
            .find(|d| d["name"] == name)
            .cloned()
            .unwrap_or_default()
    };
    let hints = |name: &str| {
        let a = &get(name)["annotations"];
        (
            a["readOnlyHint"].clone(),
            a["destructiveHint"].clone(),
            a["openWorldHint"].clone(),
        )
    };
    assert_eq!(
        hints("lookup_customer"),
        (json!(true), json!(false), json!(false))
    );
    assert_eq!(hints("ping"), (json!(true), json!(false), json!(false)));
    assert_eq!(hints("charge"), (json!(false), json!(false), json!(false)));
    assert_eq!(
        hints("delete_file"),
        (json!(false), json!(true), json!(false))
    );
    assert_eq!(
        hints("list_orders"),
        (json!(false), json!(false), json!(true))
    );
    assert_eq!(
        get("charge")["_meta"]["lt/effects"],
        json!(["Write", "Payment"])
    );
    assert_eq!(
        get("delete_file")["_meta"]["lt/approval"],
        json!(["approval"])
    );
    // Output schemas: records only.
    assert!(get("lookup_customer").get("outputSchema").is_some());
    assert!(get("ping").get("outputSchema").is_none());
    assert!(get("refund").get("outputSchema").is_none());
    assert!(get("list_orders").get("outputSchema").is_none());
    let notes: Vec<&str> = e
        .problems
        .iter()
        .filter(|p| p.severity == Severity::Note)
        .map(|p| p.tool.as_ref())
        .collect();
    assert_eq!(notes, ["list_orders"]);
}

// ------------------------------------------------------------------ declarations

#[test]
fn declarations_need_no_expression() {
    let text = read(&repo("tests/schema/export/every_type.lt"));
    assert!(lt::types::check_source(&text)
        .diagnostics
        .iter()
        .any(|d| d.code.as_str() == "E0104"));
    let d = check_declarations(&text);
    assert!(d.is_ok(), "{:?}", d.diagnostics);
    assert!(!d.has_expression);
    let names: Vec<&str> = d.tools.iter().map(|t| &*t.sig.name).collect();
    assert_eq!(
        names,
        [
            "lookup_customer",
            "charge",
            "refund",
            "list_orders",
            "delete_file",
            "ping",
            "poll",
            "store_event"
        ]
    );
    let aliases: Vec<&str> = d.aliases.iter().map(|a| &*a.name).collect();
    assert_eq!(aliases, ["Money", "CustomerId", "Address", "Order"]);
    let effects: Vec<&str> = d.effects.iter().map(|e| &**e).collect();
    assert_eq!(effects, ["Payment", "Delete"]);
    let charge = d.tool("charge").map(|t| (&t.sig, t.doc.as_deref()));
    let (sig, doc) = charge.unwrap_or_else(|| panic!("charge"));
    assert_eq!(doc, Some("Charges a customer."));
    assert_eq!(sig.effects.to_string(), "{Write, Payment}");
    assert_eq!(
        sig.input.to_string(),
        "{customer: String, amount: {cents: Int, currency: \"EUR\" | \"USD\"}, note: Option String, idempotency_key: !String}"
    );
    assert_eq!(d.tool("refund").and_then(|t| t.doc.clone()), None);
    assert_eq!(
        d.alias("Money").and_then(|a| a.doc.as_deref()),
        Some("An amount of money in a currency.")
    );
}

#[test]
fn a_program_is_read_for_its_declarations() {
    let d = check_declarations(&read(&repo("tests/schema/export/program.lt")));
    assert!(d.is_ok() && d.has_expression, "{:?}", d.diagnostics);
    assert_eq!(d.tools.len(), 1);
    // The expression is parsed (syntax errors count) but not type-checked.
    assert!(check_declarations("tool t: {a: Int} -> Unit;\nlet x = in")
        .diagnostics
        .iter()
        .any(|d| d.code.as_str() == "E0101"));
    assert!(check_declarations("tool t: {a: Int} -> Unit;\nx.y + 1").is_ok());
}

#[test]
fn declaration_errors_are_reported() {
    let d = check_declarations(&read(&repo("tests/schema/export/bad_decls.lt")));
    let codes: Vec<&str> = d.diagnostics.iter().map(|d| d.code.as_str()).collect();
    assert_eq!(codes, ["E0205", "E0212"]);
    let d = check_declarations(
        "tool a: {x: Int} -> Unit;\ntool a: {y: Int} -> Unit;\ntype T = Int;\ntype T = Bool;",
    );
    let codes: Vec<&str> = d.diagnostics.iter().map(|d| d.code.as_str()).collect();
    assert_eq!(codes, ["E0213", "E0213"]);
    assert_eq!(d.tools.len(), 1);
    assert_eq!(d.aliases.len(), 1);
    assert!(check_declarations("").is_ok());
}

// ------------------------------------------------------------------ command line

struct Out {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

fn lt(args: &[&str], stdin: Option<&str>) -> Out {
    let mut cmd = Command::new(LT);
    cmd.args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("NO_COLOR", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap_or_else(|e| panic!("{LT}: {e}"));
    if let (Some(text), Some(mut input)) = (stdin, child.stdin.take()) {
        use std::io::Write as _;
        let _ = input.write_all(text.as_bytes());
    }
    drop(child.stdin.take());
    let out = child.wait_with_output().unwrap_or_else(|e| panic!("{e}"));
    let o = Out {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    };
    assert!(!o.stderr.contains("panicked"), "{}", o.stderr);
    o
}

#[test]
fn cli_exports_each_dialect() {
    for format in ["openai", "anthropic", "mcp"] {
        let o = lt(
            &[
                "tools",
                "export",
                "--format",
                format,
                "tests/schema/export/every_type.lt",
            ],
            None,
        );
        assert_eq!(o.code, Some(0), "{format}: {}", o.stderr);
        let v: Value = serde_json::from_str(&o.stdout).unwrap_or_else(|e| panic!("{format}: {e}"));
        let n = if format == "mcp" {
            v["tools"].as_array().map(Vec::len)
        } else {
            v.as_array().map(Vec::len)
        };
        assert_eq!(n, Some(8), "{format}");
        if format == "openai" {
            assert!(
                o.stderr.contains(
                    "warning: tests/schema/export/every_type.lt:48:1: tool `store_event`"
                ),
                "{}",
                o.stderr
            );
        }
    }
    // Properties keep their declared order.
    let o = lt(
        &["tools", "export", "--format", "anthropic", "-"],
        Some("tool t: {zeta: Int, alpha: Int} -> Unit;"),
    );
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    let (z, a) = (o.stdout.find("zeta"), o.stdout.find("alpha"));
    assert!(z < a, "{}", o.stdout);
}

#[test]
fn cli_reports_a_tool_that_takes_no_object_and_prints_the_others() {
    let o = lt(
        &[
            "tools",
            "export",
            "--format",
            "openai",
            "tests/schema/export/not_object.lt",
        ],
        None,
    );
    assert_eq!(o.code, Some(1), "{}", o.stderr);
    let v: Value = serde_json::from_str(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", o.stdout));
    let names: Vec<&str> = v
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|d| d["function"]["name"].as_str())
        .collect();
    assert_eq!(names, ["count"]);
    assert!(
        o.stderr
            .contains("error: tests/schema/export/not_object.lt:1:1: tool `lookup` takes `String`"),
        "{}",
        o.stderr
    );
    assert!(
        o.stderr.contains("= help: declare its input as a record"),
        "{}",
        o.stderr
    );
    assert!(
        o.stderr.contains("tool `tags` takes `List String`"),
        "{}",
        o.stderr
    );
    assert!(
        o.stderr.contains("2 of 3 tools not exported"),
        "{}",
        o.stderr
    );
}

#[test]
fn cli_errors_and_exit_codes() {
    let o = lt(
        &[
            "tools",
            "export",
            "--format",
            "mcp",
            "tests/schema/export/bad_decls.lt",
        ],
        None,
    );
    assert_eq!(o.code, Some(1));
    assert!(o.stdout.is_empty());
    assert!(
        o.stderr.contains("[E0205]") && o.stderr.contains("[E0212]"),
        "{}",
        o.stderr
    );
    assert!(
        o.stderr
            .contains("error: 2 errors found in tests/schema/export/bad_decls.lt"),
        "{}",
        o.stderr
    );
    assert!(!o.stderr.contains("E0104"), "{}", o.stderr);

    let o = lt(
        &[
            "tools",
            "export",
            "--format",
            "mcp",
            "tests/schema/export/no_tools.lt",
        ],
        None,
    );
    assert_eq!(o.code, Some(1));
    assert!(o.stdout.is_empty());
    assert!(
        o.stderr.contains("declares no tools") && o.stderr.contains("= help: declare each tool"),
        "{}",
        o.stderr
    );

    let o = lt(
        &[
            "tools",
            "export",
            "--format",
            "mcp",
            "tests/schema/export/missing.lt",
        ],
        None,
    );
    assert_eq!(o.code, Some(2));
    assert!(
        o.stderr
            .contains("cannot read `tests/schema/export/missing.lt`"),
        "{}",
        o.stderr
    );

    let o = lt(
        &[
            "tools",
            "export",
            "--format",
            "gemini",
            "tests/schema/export/program.lt",
        ],
        None,
    );
    assert_eq!(o.code, Some(2));

    let o = lt(
        &[
            "tools",
            "export",
            "--format",
            "anthropic",
            "tests/schema/export/program.lt",
        ],
        None,
    );
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    assert!(
        o.stdout
            .contains("\"description\": \"Finds a customer's email.\""),
        "{}",
        o.stdout
    );

    // `lt check` still wants an expression.
    let o = lt(&["check", "tests/schema/export/every_type.lt"], None);
    assert_eq!(o.code, Some(1));
    assert!(o.stderr.contains("E0104"), "{}", o.stderr);
}
