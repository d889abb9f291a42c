//! The declarations text: `effect` labels, `type` aliases, tools.
//!
//! Descriptions are the `//` lines directly above a tool, an alias or a
//! field (so `lt tools export` reads them back as descriptions); the
//! importer's own notes are trailing comments, or a paragraph above the
//! tool's description separated from it by a blank line.

use super::text::lt_string;
use super::ty::{Alias, Field, Ty};

/// A record is written on one line when it has no comments and fits.
const ONE_LINE: usize = 80;

/// One tool declaration to write.
#[derive(Debug)]
pub(super) struct ToolDecl {
    /// The lt name.
    pub name: String,
    /// The description, as comment lines.
    pub doc: Vec<String>,
    /// The importer's notes (one comment line each, prefixed by the name).
    pub notes: Vec<String>,
    /// Input and output types.
    pub input: Ty,
    pub output: Ty,
    /// The effect row's labels.
    pub effects: Vec<String>,
}

/// The whole declarations file.
pub(super) fn declarations(
    header: &[String],
    labels: &[String],
    aliases: &[Alias],
    tools: &[ToolDecl],
) -> String {
    let mut out = String::new();
    for line in header {
        comment(&mut out, "", line);
    }
    if !labels.is_empty() {
        out.push('\n');
        out.push_str(&format!("effect {};\n", labels.join(", ")));
    }
    for alias in aliases {
        out.push('\n');
        for line in &alias.doc {
            comment(&mut out, "", line);
        }
        out.push_str(&format!("type {} = ", alias.name));
        write_ty(&alias.ty, 0, &mut out);
        out.push(';');
        trailing(&mut out, &alias.notes);
        out.push('\n');
    }
    for tool in tools {
        out.push('\n');
        if !tool.notes.is_empty() {
            for note in &tool.notes {
                comment(&mut out, "", &format!("{}: {note}", tool.name));
            }
            // A blank line, so that the notes are not the tool's doc comment.
            out.push('\n');
        }
        for line in &tool.doc {
            comment(&mut out, "", line);
        }
        out.push_str(&format!("tool {}: ", tool.name));
        write_ty(&tool.input, 0, &mut out);
        out.push_str(&format!(" -{{{}}}-> ", tool.effects.join(", ")));
        write_ty(&tool.output, 0, &mut out);
        out.push_str(";\n");
    }
    out
}

/// A `//` line (an empty one for an empty text).
fn comment(out: &mut String, indent: &str, text: &str) {
    let text = clean(text);
    if text.is_empty() {
        out.push_str(&format!("{indent}//\n"));
    } else {
        out.push_str(&format!("{indent}// {text}\n"));
    }
}

/// `  // a; b` after code on the same line, when there are notes.
fn trailing(out: &mut String, notes: &[String]) {
    if !notes.is_empty() {
        out.push_str("  // ");
        out.push_str(&clean(&notes.join("; ")));
    }
}

/// Comment text on one line: control characters become spaces.
fn clean(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect::<String>()
        .trim_end()
        .to_string()
}

/// Writes `ty`; records with comments (or too long) across lines, the
/// fields indented one level more than `indent`.
fn write_ty(ty: &Ty, indent: usize, out: &mut String) {
    match ty {
        Ty::Record(fields) if !fields.is_empty() && multi_line(fields) => {
            let pad = "  ".repeat(indent + 1);
            out.push_str("{\n");
            for (i, f) in fields.iter().enumerate() {
                if let Some(doc) = &f.doc {
                    comment(out, &pad, doc);
                }
                out.push_str(&pad);
                out.push_str(&field_head(f));
                write_ty(&f.ty, indent + 1, out);
                if i + 1 < fields.len() {
                    out.push(',');
                }
                trailing(out, &f.notes);
                out.push('\n');
            }
            out.push_str(&"  ".repeat(indent));
            out.push('}');
        }
        _ => out.push_str(&inline(ty)),
    }
}

fn multi_line(fields: &[Field]) -> bool {
    fields
        .iter()
        .any(|f| f.doc.is_some() || !f.notes.is_empty() || has_comments(&f.ty))
        || inline(&Ty::Record(fields.to_vec())).len() > ONE_LINE
}

fn has_comments(ty: &Ty) -> bool {
    match ty {
        Ty::Record(fields) => fields
            .iter()
            .any(|f| f.doc.is_some() || !f.notes.is_empty() || has_comments(&f.ty)),
        Ty::List(t) | Ty::Option(t) => has_comments(t),
        _ => false,
    }
}

fn field_head(f: &Field) -> String {
    format!("{}{}: ", f.name, if f.optional { "?" } else { "" })
}

/// `ty` on one line (comments left out).
fn inline(ty: &Ty) -> String {
    match ty {
        Ty::Unit => "Unit".into(),
        Ty::Bool => "Bool".into(),
        Ty::Int => "Int".into(),
        Ty::Float => "Float".into(),
        Ty::Str => "String".into(),
        Ty::Json => "Json".into(),
        Ty::Named(n) => n.clone(),
        Ty::Enum(lits) => lits
            .iter()
            .map(|l| lt_string(l))
            .collect::<Vec<_>>()
            .join(" | "),
        Ty::List(t) => format!("List {}", argument(t)),
        Ty::Option(t) => format!("Option {}", argument(t)),
        Ty::Record(fields) => {
            let parts: Vec<String> = fields
                .iter()
                .map(|f| format!("{}{}", field_head(f), inline(&f.ty)))
                .collect();
            format!("{{{}}}", parts.join(", "))
        }
    }
}

/// The argument of `List` / `Option`, parenthesised unless it is one word
/// or a record.
fn argument(ty: &Ty) -> String {
    match ty {
        Ty::List(_) | Ty::Option(_) => format!("({})", inline(ty)),
        Ty::Enum(lits) if lits.len() > 1 => format!("({})", inline(ty)),
        _ => inline(ty),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field(name: &str, ty: Ty, optional: bool) -> Field {
        Field {
            name: name.into(),
            ty,
            optional,
            doc: None,
            notes: Vec::new(),
        }
    }

    #[test]
    fn types_inline() {
        let t = Ty::Record(vec![
            field(
                "a",
                Ty::List(Box::new(Ty::Option(Box::new(Ty::Int)))),
                false,
            ),
            field("b", Ty::Enum(vec!["x".into(), "y\"".into()]), true),
            field("c", Ty::Option(Box::new(Ty::Enum(vec!["z".into()]))), false),
        ]);
        assert_eq!(
            inline(&t),
            "{a: List (Option Int), b?: \"x\" | \"y\\\"\", c: Option \"z\"}"
        );
    }

    #[test]
    fn records_with_comments_span_lines() {
        let mut a = field("a", Ty::Str, false);
        a.doc = Some("The a.".into());
        a.notes = vec!["checked at run time: format uri".into()];
        let t = Ty::Record(vec![a, field("b", Ty::Int, true)]);
        let mut out = String::new();
        write_ty(&t, 0, &mut out);
        assert_eq!(
            out,
            "{\n  // The a.\n  a: String,  // checked at run time: format uri\n  b?: Int\n}"
        );
    }
}
