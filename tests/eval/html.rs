//! `lt eval --html FILE`: one self-contained page, an inline SVG bar per
//! case and configuration (the suite and `--compare`'s), nothing fetched
//! from another host, case names escaped.

use crate::fixed::{lt, path, stderr, suite};

#[test]
fn the_html_report_charts_each_case_per_configuration_offline() {
    let cases = |want: u32| {
        format!("[[case]]\nname = \"sum <b>&\"\nprogram = \"sum.lt\"\n[case.expect]\nvalue = {want}\n\n[[case]]\nname = \"always\"\nprogram = \"sum.lt\"\n")
    };
    let a = suite("html_a", &cases(2));
    let b = suite("html_b", &cases(3));
    for d in [&a, &b] {
        std::fs::write(d.join("sum.lt"), "1 + 1\n").expect("program");
    }
    let page = path(&a, "report.html");
    let o = lt(&[
        "eval",
        &path(&a, "suite.toml"),
        "--compare",
        &path(&b, "suite.toml"),
        "--runs",
        "3",
        "--min-success",
        "0",
        "--html",
        &page,
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let html = std::fs::read_to_string(&page).expect("the report");
    assert!(html.starts_with("<!doctype html>"), "{html}");
    assert!(html.contains("<svg") && html.contains("</svg>"), "{html}");
    // A bar per case per configuration, and a legend swatch per configuration.
    let bars = html.matches("<rect x=\"220\"").count();
    assert_eq!(bars, 4 + 1, "{html}");
    // A's first case passes every run, B's none: 500 px and 0 px wide.
    assert!(html.contains("width=\"500.0\" height=\"14\""), "{html}");
    assert!(html.contains("width=\"0.0\" height=\"14\""), "{html}");
    assert!(
        html.contains("sum &lt;b&gt;&amp;") && !html.contains("sum <b>"),
        "{html}"
    );
    assert!(
        html.contains("1 failing run") || html.contains("3 failing runs"),
        "{html}"
    );
    // Self-contained: no script, link, image or stylesheet from elsewhere.
    for banned in ["<script", "src=", "href=", "@import", "url("] {
        assert!(!html.contains(banned), "{banned} in {html}");
    }
    let outside = html
        .matches("http")
        .count()
        .saturating_sub(html.matches("xmlns=\"http://www.w3.org/2000/svg\"").count());
    assert_eq!(outside, 0, "{html}");
    let o = lt(&[
        "eval",
        &path(&a, "suite.toml"),
        "--html",
        "/no/such/dir/r.html",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--html /no/such/dir/r.html: cannot write"));
}
