//! Round trips: lt declarations → `lt tools export` → `lt tools import` → lt
//! declarations, in each dialect. The imported declarations must check, and
//! every tool's input type must equal the original's (for MCP, the output
//! type and the effects too), as checked types.
//!
//! What JSON Schema cannot carry is normalised away on the original's side,
//! and each normalisation is a documented part of the mapping
//! (docs/tool-schemas.md):
//!
//! - linearity: `!T` is exported as `T`;
//! - `!Approval` input fields are left out of the model-facing schema;
//! - a `Unit` input is the empty object, imported as `{}`;
//! - a `Result` (in an MCP output record) is an untagged `anyOf`, imported as `Json`;
//! - an MCP output that is not a record has no `outputSchema`, and is
//!   imported as `String` (the tool's text content);
//! - OpenAI and Anthropic definitions have no output or effects.
//!
//! Record fields are compared as sets (the importer lists optional fields last).

use lt::schema::export::export;
use lt::schema::import::{import_text, ImportOptions};
use lt::schema::Dialect;
use lt::types::{check_declarations, Declarations, Type};
use std::path::Path;

const DIALECTS: [Dialect; 3] = [Dialect::Openai, Dialect::Anthropic, Dialect::Mcp];

/// Files whose declarations make the round trip.
const FILES: [&str; 2] = [
    "tests/schema/export/every_type.lt",
    "tests/schema/export/program.lt",
];

fn read(rel: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(rel);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// `t` with its record fields sorted by name, `!` removed, and (with
/// `results_as_json`) every `Result` replaced by `Json`.
fn normal(t: &Type, results_as_json: bool) -> Type {
    let n = |t: &Type| normal(t, results_as_json);
    match t {
        Type::Linear(inner) => n(inner),
        Type::Record(fields) => {
            let mut fields: Vec<_> = fields.iter().map(|(k, v)| (k.clone(), n(v))).collect();
            fields.sort_by(|a, b| a.0.cmp(&b.0));
            Type::Record(fields)
        }
        Type::List(e) => Type::list(n(e)),
        Type::Option(e) => Type::option(n(e)),
        Type::Result(..) if results_as_json => Type::Json,
        Type::Result(a, b) => Type::result(n(a), n(b)),
        other => other.clone(),
    }
}

/// A tool's input as exported: approval fields left out, `Unit` as `{}`.
fn exported_input(t: &Type) -> Type {
    match t.peel_linear() {
        Type::Unit => Type::Record(Vec::new()),
        Type::Record(fields) => Type::Record(
            fields
                .iter()
                .filter(|(_, f)| !f.is_approval())
                .cloned()
                .collect(),
        ),
        other => other.clone(),
    }
}

/// A tool's output as an MCP import sees it.
fn mcp_output(t: &Type) -> Type {
    match t.peel_linear() {
        Type::Record(_) => normal(t, true),
        _ => Type::String,
    }
}

fn round_trip(original: &Declarations, dialect: Dialect, file: &str) -> Declarations {
    let exported = export(original, dialect);
    assert!(
        !exported.has_errors(),
        "{file} {dialect:?}: {:?}",
        exported.problems
    );
    let json = exported.definitions.to_pretty_string();
    let options = ImportOptions {
        dialect: Some(dialect),
        origin: format!("{file} ({dialect:?})"),
        ..ImportOptions::default()
    };
    let imported = import_text(&json, &options)
        .unwrap_or_else(|e| panic!("{file} {dialect:?}: import failed: {e:?}\n{json}"));
    let back = check_declarations(&imported.declarations);
    assert!(
        back.is_ok(),
        "{file} {dialect:?}: the imported declarations do not check: {:?}\n{}",
        back.diagnostics,
        imported.declarations
    );
    back
}

#[test]
fn export_then_import_keeps_the_types() {
    for file in FILES {
        let original = check_declarations(&read(file));
        assert!(original.is_ok(), "{file}: {:?}", original.diagnostics);
        for dialect in DIALECTS {
            let back = round_trip(&original, dialect, file);
            let names: Vec<&str> = back.tools.iter().map(|t| &*t.sig.name).collect();
            let want: Vec<&str> = original.tools.iter().map(|t| &*t.sig.name).collect();
            assert_eq!(names, want, "{file} {dialect:?}");
            for t in &original.tools {
                let at = format!("{file} {dialect:?} tool {}", t.sig.name);
                let Some(b) = back.tool(&t.sig.name) else {
                    panic!("{at}: not imported");
                };
                assert_eq!(
                    normal(&b.sig.input, false),
                    normal(&exported_input(&t.sig.input), false),
                    "{at}: input"
                );
                if dialect == Dialect::Mcp {
                    assert_eq!(
                        normal(&b.sig.output, false),
                        mcp_output(&t.sig.output),
                        "{at}: output"
                    );
                    assert_eq!(b.sig.effects, t.sig.effects, "{at}: effects");
                }
                if t.doc.is_some() && t.sig.input.holds(|x| matches!(x, Type::Approval)) {
                    // The approval sentence is appended; the doc comes first.
                    let doc = b.doc.clone().unwrap_or_default();
                    assert!(
                        doc.starts_with(t.doc.as_deref().unwrap_or("")),
                        "{at}: {doc}"
                    );
                } else {
                    assert_eq!(b.doc, t.doc, "{at}: description");
                }
            }
            let declared: Vec<&str> = original.effects.iter().map(|e| &**e).collect();
            if dialect == Dialect::Mcp {
                for e in declared {
                    assert!(
                        back.effects.iter().any(|b| &**b == e),
                        "{file}: effect {e} lost"
                    );
                }
            }
        }
    }
}

#[test]
fn a_second_round_trip_changes_nothing() {
    // export ∘ import is a fixed point after one round: the definitions
    // exported from the imported declarations are the same again.
    let file = FILES[0];
    let original = check_declarations(&read(file));
    for dialect in DIALECTS {
        let once = round_trip(&original, dialect, file);
        let twice = round_trip(&once, dialect, file);
        assert_eq!(
            export(&once, dialect).definitions.to_value(),
            export(&twice, dialect).definitions.to_value(),
            "{dialect:?}"
        );
    }
}
