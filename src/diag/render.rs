//! Human rendering of diagnostics with ariadne. This is the only module that
//! imports ariadne.

use super::{Diagnostic, Severity};
use crate::source::SourceFile;
use ariadne::{Color, Config, IndexType, Label, Report, ReportKind, Source};

/// Renders `diags` for people. `color` turns ANSI colours on.
/// A [joined](SourceFile::joined) file's diagnostics are each shown in
/// the part they are in (the `--tools` file or the program).
pub fn render(file: &SourceFile, diags: &[Diagnostic], color: bool) -> String {
    if file.prelude_len() > 0 {
        return diags
            .iter()
            .map(|d| {
                let (part, d) = super::in_part(file, d);
                render(part, std::slice::from_ref(&d), color)
            })
            .collect();
    }
    let mut out = Vec::new();
    let name = file.name.as_str();
    let source = Source::from(file.text.as_str());
    let len = file.text.len();
    let clamp = |s: crate::source::Span| {
        let a = (s.start as usize).min(len);
        let b = (s.end as usize).min(len).max(a);
        a..b
    };
    for d in diags {
        if touches_long_line(file, d) {
            out.extend_from_slice(render_plain(file, d).as_bytes());
            continue;
        }
        let kind = match d.severity {
            Severity::Error => ReportKind::Error,
            Severity::Warning => ReportKind::Warning,
        };
        let mut report = Report::build(kind, (name, clamp(d.span)))
            .with_config(
                Config::default()
                    .with_color(color)
                    .with_index_type(IndexType::Byte),
            )
            .with_code(d.code.as_str())
            .with_message(&d.message);
        let primary = if d.primary_label.is_empty() {
            d.message.clone()
        } else {
            d.primary_label.clone()
        };
        // ariadne starts a new snippet whenever a label lies before the
        // previous one, so labels are added in source order.
        let mut labels: Vec<(crate::source::Span, String, Color)> =
            vec![(d.span, primary, Color::Red)];
        labels.extend(
            d.labels
                .iter()
                .map(|l| (l.span, l.message.clone(), Color::Blue)),
        );
        labels.sort_by_key(|(s, _, _)| (s.start, s.end));
        for (span, message, color) in labels {
            report = report.with_label(
                Label::new((name, clamp(span)))
                    .with_message(message)
                    .with_color(color),
            );
        }
        if let (Some(e), Some(f)) = (&d.expected, &d.found) {
            report = report.with_note(format!("expected: {e}\n   found: {f}"));
        }
        for n in &d.notes {
            report = report.with_note(n);
        }
        if let Some(h) = &d.help {
            report = report.with_help(h);
        }
        // Writing into a Vec cannot fail; a failure would only lose this report.
        let _ = report.finish().write((name, source.clone()), &mut out);
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Lines longer than this are not echoed whole (a 10 MB one-line file would
/// be printed once per diagnostic); an excerpt around the span is shown.
const LONG_LINE: usize = 400;

fn touches_long_line(file: &SourceFile, d: &Diagnostic) -> bool {
    std::iter::once(d.span)
        .chain(d.labels.iter().map(|l| l.span))
        .any(|s| {
            let lc = file.line_col(s.start);
            file.line_text(lc.line).len() > LONG_LINE
        })
}

/// A compact rendering with an excerpt of at most ~120 characters.
fn render_plain(file: &SourceFile, d: &Diagnostic) -> String {
    let lc = file.line_col(d.span.start);
    let line = file.line_text(lc.line);
    let col = lc.column.saturating_sub(1);
    let start = col.saturating_sub(60);
    let excerpt: String = line.chars().skip(start).take(120).collect();
    let width = file
        .slice(d.span)
        .chars()
        .count()
        .clamp(1, 120 - (col - start).min(119));
    let mut out = format!(
        "[{}] {}: {}\n  --> {}:{}:{}\n   | {}{}\n   | {}{}{}\n",
        d.code,
        match d.severity {
            Severity::Error => "Error",
            Severity::Warning => "Warning",
        },
        d.message,
        file.name,
        lc.line,
        lc.column,
        if start > 0 { "…" } else { "" },
        excerpt,
        if start > 0 { " " } else { "" },
        " ".repeat(col - start),
        "^".repeat(width),
    );
    if !d.primary_label.is_empty() {
        out.push_str(&format!("   = {}\n", d.primary_label));
    }
    for n in &d.notes {
        out.push_str(&format!("   = note: {n}\n"));
    }
    if let Some(h) = &d.help {
        out.push_str(&format!("   = help: {h}\n"));
    }
    out
}
