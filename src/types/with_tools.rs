//! A program checked with a declarations file: `lt check prog.lt --tools
//! tools.lt`, `lt run prog.lt --tools tools.lt`.
//!
//! ```text
//! tools.lt ──check_declarations──▶ Declarations        (errors: shown in tools.lt)
//! tools.lt with the declarations prog.lt makes itself blanked out, then prog.lt
//!          ──SourceFile::joined──▶ one file, one program ──check_source──▶ Analysis
//!          ──agreement──▶ + E0704 (a tool declared in both, differently)
//!                         + E0213 (a type alias declared in both, differently)
//! ```
//!
//! The declarations file comes first, byte for byte (a declaration the
//! program makes too is replaced by spaces, so positions in the prelude are
//! positions in `tools.lt`); every diagnostic is shown in the file it is in
//! ([`SourceFile::locate`]). The joined text is one whole program: it is
//! what runs and what a session's log records, so `lt replay` needs no
//! `--tools`.

use super::{check_declarations, check_source, Analysis, Declarations, Type};
use crate::diag::{Code, Diagnostic};
use crate::source::{SourceFile, Span};
use crate::syntax::{self, ast::Decl};

/// A program joined with its declarations file, and its analysis.
#[derive(Debug)]
pub struct WithTools {
    /// The joined file ([`SourceFile::joined`]): the declarations file's
    /// text, then the program's.
    pub file: SourceFile,
    /// The joined program's analysis, with the agreement diagnostics.
    pub analysis: Analysis,
}

/// Checks the program `text` (shown as `name`) with the declarations of
/// `tools_text` (shown as `tools_name`). `Err`: the declarations file has
/// errors of its own (its [`Declarations`], to render in that file).
pub fn check_with_tools(
    tools_name: &str,
    tools_text: &str,
    name: &str,
    text: &str,
) -> Result<WithTools, Box<Declarations>> {
    let decls = check_declarations(tools_text);
    if !decls.is_ok() {
        return Err(Box::new(decls));
    }
    let (program, _) = syntax::parse(text);
    let mut declared = Vec::new();
    for d in &program.decls {
        match d {
            Decl::Tool(t) => declared.push(t.name.name.to_string()),
            Decl::Type(a) => declared.push(a.name.name.to_string()),
            Decl::Effect(labels, _) => declared.extend(labels.iter().map(|l| l.name.to_string())),
            Decl::Error(_) => {}
        }
    }
    // The prelude: the declarations file, its declarations the program
    // makes again (and an expression after them) blanked out.
    let mut blanks: Vec<Span> = Vec::new();
    let mut last_end = 0;
    for d in &decls.program.decls {
        let (span, names): (Span, Vec<&str>) = match d {
            Decl::Tool(t) => (t.span, vec![&*t.name.name]),
            Decl::Type(a) => (a.span, vec![&*a.name.name]),
            Decl::Effect(labels, span) => (*span, labels.iter().map(|l| &*l.name).collect()),
            Decl::Error(span) => (*span, Vec::new()),
        };
        let span = with_semicolon(tools_text, span);
        last_end = last_end.max(span.end);
        if names.iter().any(|n| declared.iter().any(|d| d == n)) {
            blanks.push(span);
        }
    }
    if decls.has_expression {
        blanks.push(Span::new(last_end as usize, tools_text.len()));
    }
    let mut prelude = blank(tools_text, &blanks);
    prelude.push('\n');
    let shown = format!("{tools_text}\n");
    let split = prelude.len() as u32;
    let joined = |prelude: &str, program: &str| {
        SourceFile::joined(
            name,
            format!("{prelude}{program}"),
            (tools_name, &shown),
            text,
        )
    };
    let file = joined(&prelude, text);
    let mut analysis = check_source(&file.text);
    let found = agreement(&file, &decls, &program.decls, split, &analysis);
    if found.is_empty() {
        return Ok(WithTools { file, analysis });
    }
    // One mistake, one diagnostic: the program is checked again with the
    // declarations file's version of what it declared differently.
    let mut restored = blanks.clone();
    let mut moved = Vec::new();
    for (d, theirs) in &found {
        restored.retain(|b| !(b.start <= theirs.start && theirs.end <= b.end));
        moved.push(with_semicolon(
            text,
            Span::new(
                (d.span.start - split) as usize,
                (d.span.end - split) as usize,
            ),
        ));
    }
    let mut prelude = blank(tools_text, &restored);
    prelude.push('\n');
    let file = joined(&prelude, &blank(text, &moved));
    analysis = check_source(&file.text);
    analysis
        .diagnostics
        .extend(found.into_iter().map(|(d, _)| d));
    analysis
        .diagnostics
        .sort_by_key(|d| (d.span.start, d.span.end, d.code));
    Ok(WithTools { file, analysis })
}

/// E0704 for each tool the program declares differently from the
/// declarations file; E0213 for each type alias; each with the span of the
/// declarations file's declaration.
fn agreement(
    file: &SourceFile,
    decls: &Declarations,
    program_decls: &[Decl],
    split: u32,
    analysis: &Analysis,
) -> Vec<(Diagnostic, Span)> {
    let tools_name = file.locate(0).0.name.clone();
    let mut found = Vec::new();
    for sig in analysis.tools.iter().filter(|s| s.span.start >= split) {
        let Some(listed) = decls.tool(&sig.name) else {
            continue;
        };
        let l = &listed.sig;
        let mut differs = Vec::new();
        if !same_type(&sig.input, &l.input) {
            differs.push(format!("input {} ({tools_name}: {})", sig.input, l.input));
        }
        if !same_type(&sig.output, &l.output) {
            differs.push(format!(
                "output {} ({tools_name}: {})",
                sig.output, l.output
            ));
        }
        if sig.effects != l.effects {
            differs.push(format!(
                "effects {} ({tools_name}: {})",
                sig.effects, l.effects
            ));
        }
        if sig.undo != l.undo {
            differs.push("its undo clause".to_string());
        }
        if differs.is_empty() {
            continue;
        }
        let at = file.locate(l.span.start);
        let lc = at.0.line_col(at.1);
        found.push((
            Diagnostic::error(
                Code::E0704,
                sig.span,
                format!(
                    "tool `{}` is declared here and in {tools_name}:{}, differently: {}",
                    sig.name,
                    lc.line,
                    differs.join(", ")
                ),
            )
            .with_label("differs from the declarations file")
            .with_secondary(
                l.span,
                format!("`{}` as {tools_name} declares it", sig.name),
            )
            .with_help(format!(
                "delete this declaration: the program gets `{}` from {tools_name}",
                sig.name
            )),
            with_semicolon(file.locate(0).0.text.as_str(), l.span),
        ));
    }
    for d in program_decls {
        let Decl::Type(a) = d else { continue };
        let Some(listed) = decls.alias(&a.name.name) else {
            continue;
        };
        let ours = squeeze(file.slice(shift(a.ty.span, split)));
        let theirs = squeeze(file.locate(0).0.slice(listed.written.span));
        if ours == theirs {
            continue;
        }
        let lc = file.locate(listed.span.start).0.line_col(listed.span.start);
        found.push((
            Diagnostic::error(
                Code::E0213,
                shift(a.span, split),
                format!(
                    "type `{}` is declared here and in {tools_name}:{}, differently",
                    a.name.name, lc.line
                ),
            )
            .with_label("differs from the declarations file")
            .with_secondary(
                listed.span,
                format!("`{}` as {tools_name} declares it", a.name.name),
            )
            .with_help(format!(
                "delete this declaration: the program gets `{}` from {tools_name}",
                a.name.name
            )),
            with_semicolon(file.locate(0).0.text.as_str(), listed.span),
        ));
    }
    found
}

/// Whether `a` and `b` are the same type, record fields in any order (at
/// every depth).
pub fn same_type(a: &Type, b: &Type) -> bool {
    fn fields(
        x: &[(crate::syntax::ast::Name, Type)],
        y: &[(crate::syntax::ast::Name, Type)],
    ) -> bool {
        x.len() == y.len()
            && x.iter()
                .all(|(n, t)| y.iter().any(|(m, u)| m == n && same_type(t, u)))
    }
    match (a, b) {
        (Type::Record(x), Type::Record(y)) | (Type::OpenRecord(x), Type::OpenRecord(y)) => {
            fields(x, y)
        }
        (Type::List(x), Type::List(y))
        | (Type::Option(x), Type::Option(y))
        | (Type::Linear(x), Type::Linear(y)) => same_type(x, y),
        (Type::Result(x, e), Type::Result(y, f)) => same_type(x, y) && same_type(e, f),
        (Type::Fun(x, e, r), Type::Fun(y, f, s)) => same_type(x, y) && e == f && same_type(r, s),
        _ => a == b,
    }
}

/// A span of the program's own text, as a span of the joined file.
fn shift(s: Span, by: u32) -> Span {
    Span {
        start: s.start.saturating_add(by),
        end: s.end.saturating_add(by),
    }
}

/// `span`, extended over a `;` that follows it (after blanks).
fn with_semicolon(text: &str, span: Span) -> Span {
    let end = span.end as usize;
    let rest = text.get(end..).unwrap_or("");
    let gap = rest.len() - rest.trim_start().len();
    if rest[gap..].starts_with(';') {
        Span::new(span.start as usize, end + gap + 1)
    } else {
        span
    }
}

/// `text` with every byte of `spans` but newlines replaced by a space (the
/// length and the lines are kept).
fn blank(text: &str, spans: &[Span]) -> String {
    let mut bytes = text.as_bytes().to_vec();
    for s in spans {
        let end = (s.end as usize).min(bytes.len());
        for b in bytes.iter_mut().take(end).skip(s.start as usize) {
            if *b != b'\n' {
                *b = b' ';
            }
        }
    }
    // Whole characters were replaced (spans start and end on boundaries).
    String::from_utf8(bytes).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// `s` without whitespace, to compare declarations as written.
fn squeeze(s: &str) -> String {
    s.chars().filter(|c| !c.is_whitespace()).collect()
}
