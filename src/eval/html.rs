//! `lt eval --html FILE`: one self-contained HTML page (no script, no
//! font, nothing fetched from another host) with an inline SVG bar chart of
//! the success rate per case and per configuration (the suite, and the
//! `--compare` suite beside it), each bar with its 95% Wilson interval,
//! then a table per configuration and the failures of each case.
//!
//! ```text
//! [SuiteSummary A, SuiteSummary B?] ──report──▶ <!doctype html> … <svg> bars … </svg> tables
//! ```

use super::summary::SuiteSummary;
use std::fmt::Write as _;

/// Escapes `s` for HTML text and attribute values.
pub fn escape(s: &str) -> String {
    html_escape::encode_quoted_attribute(s).into_owned()
}

/// The bars' colours, one per configuration.
const COLOURS: [&str; 2] = ["#3b6ea8", "#d08c2b"];

/// The chart: a row per case (in the first suite's order, then cases only
/// the others have), a bar per configuration, its interval as a whisker.
fn chart(suites: &[&SuiteSummary]) -> String {
    let mut names: Vec<&str> = Vec::new();
    for s in suites {
        for c in &s.cases {
            if !names.contains(&c.name.as_str()) {
                names.push(&c.name);
            }
        }
    }
    let (label_w, bar_w, bar_h, gap) = (220.0, 500.0, 16.0, 10.0);
    let row_h = bar_h * suites.len() as f64 + gap;
    let height = 40.0 + row_h * names.len() as f64 + 30.0;
    let width = label_w + bar_w + 80.0;
    let mut svg = String::new();
    let _ = write!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img" aria-label="success rate per case">"#
    );
    // The axis: 0, 25, 50, 75, 100%.
    for i in 0..=4 {
        let x = label_w + bar_w * f64::from(i) / 4.0;
        let _ = write!(
            svg,
            "<line x1=\"{x}\" y1=\"30\" x2=\"{x}\" y2=\"{}\" stroke=\"#ddd\"/><text x=\"{x}\" y=\"20\" font-size=\"11\" text-anchor=\"middle\">{}%</text>",
            height - 30.0,
            i * 25
        );
    }
    for (row, name) in names.iter().enumerate() {
        let top = 40.0 + row_h * row as f64;
        let _ = write!(
            svg,
            "<text x=\"{}\" y=\"{}\" font-size=\"12\" text-anchor=\"end\">{}</text>",
            label_w - 8.0,
            top + bar_h * suites.len() as f64 / 2.0 + 4.0,
            escape(name)
        );
        for (k, s) in suites.iter().enumerate() {
            let Some(c) = s.cases.iter().find(|c| c.name == *name) else {
                continue;
            };
            let y = top + bar_h * k as f64;
            let colour = COLOURS[k % COLOURS.len()];
            let _ = write!(
                svg,
                "<rect x=\"{label_w}\" y=\"{y}\" width=\"{:.1}\" height=\"{}\" fill=\"{colour}\"><title>{}: {}: {}/{} runs passed ({:.1}%, 95% interval {:.1}–{:.1}%)</title></rect>",
                bar_w * c.rate,
                bar_h - 2.0,
                escape(&s.suite),
                escape(name),
                c.passed,
                c.runs,
                c.rate * 100.0,
                c.interval.0 * 100.0,
                c.interval.1 * 100.0
            );
            let mid = y + (bar_h - 2.0) / 2.0;
            let (lo, hi) = (
                label_w + bar_w * c.interval.0,
                label_w + bar_w * c.interval.1,
            );
            let _ = write!(
                svg,
                "<line x1=\"{lo:.1}\" y1=\"{mid}\" x2=\"{hi:.1}\" y2=\"{mid}\" stroke=\"#222\"/><line x1=\"{lo:.1}\" y1=\"{}\" x2=\"{lo:.1}\" y2=\"{}\" stroke=\"#222\"/><line x1=\"{hi:.1}\" y1=\"{}\" x2=\"{hi:.1}\" y2=\"{}\" stroke=\"#222\"/><text x=\"{}\" y=\"{}\" font-size=\"11\">{:.1}%</text>",
                mid - 4.0,
                mid + 4.0,
                mid - 4.0,
                mid + 4.0,
                label_w + bar_w + 6.0,
                mid + 4.0,
                c.rate * 100.0
            );
        }
    }
    // The legend: one swatch per configuration.
    for (k, s) in suites.iter().enumerate() {
        let x = label_w + 260.0 * k as f64;
        let _ = write!(
            svg,
            "<rect x=\"{x}\" y=\"{}\" width=\"12\" height=\"12\" fill=\"{}\"/><text x=\"{}\" y=\"{}\" font-size=\"11\">{}</text>",
            height - 20.0,
            COLOURS[k % COLOURS.len()],
            x + 16.0,
            height - 10.0,
            escape(&s.suite)
        );
    }
    svg.push_str("</svg>");
    svg
}

fn table(s: &SuiteSummary) -> String {
    let mut t = format!(
        "<h2>{}</h2>\n<table>\n<tr><th>case</th><th>runs</th><th>passed</th><th>rate</th><th>95% interval</th><th>mean calls</th><th>mean rounds</th><th>mean reward</th><th>mean ms</th><th>overhead ms</th></tr>\n",
        escape(&s.suite)
    );
    for c in &s.cases {
        let _ = writeln!(
            t,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{:.1}%</td><td>{:.1}–{:.1}%</td><td>{:.2}</td><td>{:.2}</td><td>{}</td><td>{:.2}</td><td>{:.3}</td></tr>",
            escape(&c.name),
            c.runs,
            c.passed,
            c.rate * 100.0,
            c.interval.0 * 100.0,
            c.interval.1 * 100.0,
            c.mean_calls,
            c.mean_rounds,
            c.mean_reward.map_or("–".to_string(), |r| format!("{r:.3}")),
            c.mean_ms,
            c.mean_overhead_ms
        );
    }
    let _ = writeln!(
        t,
        "<tr><th>all</th><th>{}</th><th>{}</th><th>{:.1}%</th><th>{:.1}–{:.1}%</th><th colspan=\"5\"></th></tr>\n</table>",
        s.runs,
        s.passed,
        s.rate * 100.0,
        s.interval.0 * 100.0,
        s.interval.1 * 100.0
    );
    for c in &s.cases {
        let failing: Vec<_> = c.records.iter().filter(|r| !r.passed()).collect();
        if failing.is_empty() {
            continue;
        }
        let _ = writeln!(
            t,
            "<details><summary>{}: {} failing run{}</summary><ul>",
            escape(&c.name),
            failing.len(),
            if failing.len() == 1 { "" } else { "s" }
        );
        for r in failing.iter().take(50) {
            let reasons: Vec<String> = r
                .invariants
                .iter()
                .map(|i| format!("invariant: {i}"))
                .chain(r.failed.iter().cloned())
                .chain(
                    r.errored
                        .iter()
                        .map(|e| format!("errored (not counted): {e}")),
                )
                .map(|m| escape(&m))
                .collect();
            let _ = writeln!(t, "<li>run {}: {}</li>", r.run, reasons.join("; "));
        }
        t.push_str("</ul></details>\n");
    }
    t
}

/// The page for `suites` (the suite, then the `--compare` suite).
pub fn report(suites: &[&SuiteSummary]) -> String {
    let mut page = String::from(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>lt eval</title>\n<style>body{font-family:sans-serif;margin:2em;color:#222}table{border-collapse:collapse;margin-bottom:1em}td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}td:first-child,th:first-child{text-align:left}</style>\n</head><body>\n<h1>lt eval: success rate per case</h1>\n",
    );
    page.push_str(&chart(suites));
    page.push('\n');
    for s in suites {
        page.push_str(&table(s));
    }
    page.push_str("</body></html>\n");
    page
}
