//! Diagnostics on stderr, as `lt check` prints them: the rendered
//! reports, then a count. Every command that checks a source text prints
//! its rejections through here.

use crate::diag::render::render;
use crate::source::SourceFile;
use crate::types::Analysis;

/// Prints the diagnostics of a rejected program on stderr, with a count.
pub fn print_diagnostics(file: &SourceFile, a: &Analysis, color: bool) {
    print_diagnostic_list(file, &a.diagnostics, a.truncated, color);
}

/// Prints `diagnostics` (and `truncated` more not kept) on stderr as `lt
/// check` does, with a count; for every command that checks a source text.
pub fn print_diagnostic_list(
    file: &SourceFile,
    diagnostics: &[crate::diag::Diagnostic],
    truncated: usize,
    color: bool,
) {
    {
        use std::io::Write as _;
        super::note_write(write!(
            std::io::stderr().lock(),
            "{}",
            render(file, diagnostics, color)
        ));
    }
    let n = diagnostics.len() + truncated;
    if truncated > 0 {
        err!("… and {truncated} more errors not shown");
    }
    err!(
        "error: {} found in {}",
        if n == 1 {
            "1 error".to_string()
        } else {
            format!("{n} errors")
        },
        file.name
    );
}
