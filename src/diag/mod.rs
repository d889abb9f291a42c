//! Diagnostics: one data type for every phase, two renderers.
//!
//! Each phase (lexer, parser, validation, checker) reports problems as
//! [`Diagnostic`] values carrying a stable [`Code`], a primary span, secondary
//! labels, optional expected/found types and a concrete `help` line. Only
//! [`render`] knows about ariadne (human output); [`json`] produces the
//! machine form used by `lt check --json` and by LLM hosts.

pub mod codes;
pub mod json;
pub mod render;
pub mod toml;

pub use codes::Code;

use crate::source::{SourceFile, Span};

/// How serious a diagnostic is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// The program is rejected.
    Error,
    /// The program is accepted but something looks wrong.
    Warning,
}

/// A secondary location with a message ("first use here").
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Label {
    /// Where.
    pub span: Span,
    /// What is there.
    pub message: String,
}

/// One problem found in a program.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    /// Stable code, e.g. `E0202`; see `docs/errors/`.
    pub code: Code,
    /// Error or warning.
    pub severity: Severity,
    /// One-line statement of the problem.
    pub message: String,
    /// The primary location.
    pub span: Span,
    /// Text for the primary label (may be empty).
    pub primary_label: String,
    /// Secondary locations.
    pub labels: Vec<Label>,
    /// The expected type or token set, where one applies.
    pub expected: Option<String>,
    /// What was found instead, where it applies.
    pub found: Option<String>,
    /// Extra facts (e.g. the record's fields).
    pub notes: Vec<String>,
    /// A concrete fix.
    pub help: Option<String>,
}

impl Diagnostic {
    /// An error with `code` and `message` at `span`.
    pub fn error(code: Code, span: Span, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            code,
            severity: Severity::Error,
            message: message.into(),
            span,
            primary_label: String::new(),
            labels: Vec::new(),
            expected: None,
            found: None,
            notes: Vec::new(),
            help: None,
        }
    }

    /// Sets the text of the primary label.
    pub fn with_label(mut self, text: impl Into<String>) -> Self {
        self.primary_label = text.into();
        self
    }

    /// Adds a secondary label.
    pub fn with_secondary(mut self, span: Span, text: impl Into<String>) -> Self {
        self.labels.push(Label {
            span,
            message: text.into(),
        });
        self
    }

    /// Sets expected and found.
    pub fn with_expected_found(
        mut self,
        expected: impl Into<String>,
        found: impl Into<String>,
    ) -> Self {
        self.expected = Some(expected.into());
        self.found = Some(found.into());
        self
    }

    /// Adds a note.
    pub fn with_note(mut self, note: impl Into<String>) -> Self {
        self.notes.push(note.into());
        self
    }

    /// Sets the help line.
    pub fn with_help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }
}

/// The part of a [joined](SourceFile::joined) file `d` is in (by its
/// primary span), and `d` with its spans moved into that part; a label in
/// the other part becomes a note naming its place. For a plain file:
/// `file` and a copy of `d`.
pub fn in_part<'a>(file: &'a SourceFile, d: &Diagnostic) -> (&'a SourceFile, Diagnostic) {
    let (part, _) = file.locate(d.span.start);
    let mut d = d.clone();
    if std::ptr::eq(part, file) {
        return (part, d);
    }
    let shift = |s: Span| -> Option<Span> {
        let (p, a) = file.locate(s.start);
        let (_, b) = file.locate(s.end.max(s.start));
        std::ptr::eq(p, part).then(|| Span {
            start: a,
            end: b.max(a),
        })
    };
    d.span = shift(d.span).unwrap_or_default();
    let mut labels = Vec::new();
    for l in std::mem::take(&mut d.labels) {
        match shift(l.span) {
            Some(span) => labels.push(Label { span, ..l }),
            None => {
                let (other, at) = file.locate(l.span.start);
                let lc = other.line_col(at);
                d.notes.push(format!(
                    "{}:{}:{}: {}",
                    other.name, lc.line, lc.column, l.message
                ));
            }
        }
    }
    d.labels = labels;
    (part, d)
}

/// The closest candidate to `name` by edit distance, if it is close enough to
/// be a plausible typo ("did you mean").
pub fn did_you_mean<'a>(
    name: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    let mut best: Option<(f64, &str)> = None;
    for cand in candidates {
        if cand == name {
            continue;
        }
        let score = strsim::jaro_winkler(name, cand);
        let dist = strsim::levenshtein(name, cand);
        let close = dist <= (name.len().max(cand.len()) / 3).max(1)
            || score >= 0.85
            || (cand.contains(name) && name.len() >= 3)
            || (name.contains(cand) && cand.len() >= 3);
        if close && best.is_none_or(|(s, _)| score > s) {
            best = Some((score, cand));
        }
    }
    best.map(|(_, c)| c)
}

/// The candidate most similar to `name` (Jaro–Winkler), however far: used
/// where a message must always name the closest alternative.
pub fn closest<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let mut best: Option<(f64, &str)> = None;
    for cand in candidates {
        let score = strsim::jaro_winkler(&name.to_lowercase(), &cand.to_lowercase());
        if best.is_none_or(|(s, _)| score > s) {
            best = Some((score, cand));
        }
    }
    best.map(|(_, c)| c)
}
