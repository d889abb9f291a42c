//! Human rendering of diagnostics with ariadne. This is the only module that
//! imports ariadne.

use super::{Diagnostic, Severity};
use crate::source::SourceFile;
use ariadne::{Color, Config, IndexType, Label, Report, ReportKind, Source};

/// Renders `diags` for people. `color` turns ANSI colours on.
pub fn render(file: &SourceFile, diags: &[Diagnostic], color: bool) -> String {
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
