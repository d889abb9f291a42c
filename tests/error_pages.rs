//! The error-code pages in `docs/errors/` (printed by `lt explain CODE`).
//!
//! * every code in [`Code::ALL`] has a page, titled `# E0xxx: <title>`;
//! * every page file is named after a code;
//! * each page has exactly one ```` ```lt ```` block under `## Example`, which
//!   yields a diagnostic with the page's code, and exactly one
//!   ```` ```lt-ok ```` block under `## Fix`, which checks with no diagnostics.
//!
//! Some errors only occur in programs too large to print (E0103: nesting
//! deeper than 1000). In a page's blocks, a line containing [`REPEAT_MARKER`]
//! (an lt comment, so the block is still a valid program as printed) is
//! repeated [`REPEAT_COUNT`] times before checking.
//!
//! Some errors only occur under a profile (E07xx: `lt check --profile`). A
//! page may hold at most one ```` ```toml ```` block, anywhere (by convention
//! in `## Example`, before the ```` ```lt ```` block): the `[profile]` table
//! both examples are checked against, as `lt check --profile` would (the
//! calls it would deny are diagnostics too). A page without one is checked
//! with no profile; a ```` ```toml ```` block that is not a valid profile
//! is a page problem.
//!
//! Some errors only occur in an agent session (E0704, E0705: `lt agent
//! --tools DECLS.lt`). A page may hold at most one ```` ```lt-tools ````
//! block, anywhere (by convention in `## Example`, before the ```` ```lt ````
//! block): the session's tool list, a declarations file. Both examples are
//! then also checked against it with `lt::agent::tool_list::check_tool_list`
//! (the list read by `lt::types::check_declarations`), as `lt agent` checks
//! every proposed program, and its diagnostics count too. A page without one
//! is checked with no tool list; an ```` ```lt-tools ```` block whose
//! declarations have errors is a page problem.

use lt::agent::tool_list::check_tool_list;
use lt::control::profile::Profile;
use lt::control::static_check;
use lt::diag::Code;
use lt::diag::Diagnostic;
use lt::types::{check_declarations, check_source};
use std::collections::BTreeSet;
use std::path::PathBuf;

/// A line containing this is repeated [`REPEAT_COUNT`] times before checking.
const REPEAT_MARKER: &str = "(* repeat this line 1000 times *)";
/// How often a marked line is repeated.
const REPEAT_COUNT: usize = 1000;

fn pages_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("docs/errors")
}

/// The page's relative path, for failure messages.
fn page_name(code: Code) -> String {
    format!("docs/errors/{}.md", code.as_str())
}

/// The bodies of the fenced blocks whose info string is exactly `tag`.
fn fenced_blocks(page: &str, tag: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current: Option<String> = None;
    let mut in_other_fence = false;
    for line in page.lines() {
        let trimmed = line.trim_end();
        match &mut current {
            Some(body) => {
                if trimmed == "```" {
                    out.push(std::mem::take(body));
                    current = None;
                } else {
                    body.push_str(line);
                    body.push('\n');
                }
            }
            None if in_other_fence => {
                if trimmed == "```" {
                    in_other_fence = false;
                }
            }
            None => {
                if let Some(info) = trimmed.strip_prefix("```") {
                    if info == tag {
                        current = Some(String::new());
                    } else {
                        in_other_fence = true;
                    }
                }
            }
        }
    }
    out
}

/// The 1-based line of the first `## heading` equal to `heading`.
fn heading_line(page: &str, heading: &str) -> Option<usize> {
    page.lines()
        .position(|l| l.trim_end() == heading)
        .map(|i| i + 1)
}

/// The 1-based line of the fence that opens the first block tagged `tag`.
fn fence_line(page: &str, tag: &str) -> Option<usize> {
    let open = format!("```{tag}");
    page.lines()
        .position(|l| l.trim_end() == open)
        .map(|i| i + 1)
}

/// Repeats every line containing [`REPEAT_MARKER`].
fn expand(block: &str) -> String {
    let mut out = String::with_capacity(block.len());
    for line in block.lines() {
        let n = if line.contains(REPEAT_MARKER) {
            REPEAT_COUNT
        } else {
            1
        };
        for _ in 0..n {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

/// What checking an example found.
struct Checked {
    diagnostics: Vec<Diagnostic>,
    truncated: usize,
}

impl Checked {
    fn is_ok(&self) -> bool {
        self.diagnostics.is_empty() && self.truncated == 0
    }
}

/// The page's profile, as TOML text: `Ok(None)` when it has no
/// ```` ```toml ```` block, `Err` (a problem to report) when it has several
/// or one that is not a valid `[profile]` table. (The text, not a
/// [`Profile`], crosses to the checker's thread: a profile is not `Send`.)
fn page_profile(name: &str, page: &str) -> Result<Option<String>, String> {
    let blocks = fenced_blocks(page, "toml");
    match blocks.as_slice() {
        [] => Ok(None),
        [toml] => match Profile::from_toml(toml, name) {
            Ok(Some(_)) => Ok(Some(toml.clone())),
            Ok(None) => Err(format!("{name}: the ```toml block has no [profile] table")),
            Err(e) => Err(format!(
                "{name}: the ```toml block is not a valid profile: {e}"
            )),
        },
        _ => Err(format!(
            "{name}: has {} ```toml blocks; expected at most one (the profile of both examples)",
            blocks.len()
        )),
    }
}

/// The page's tool list, as declarations text: `Ok(None)` when it has no
/// ```` ```lt-tools ```` block, `Err` (a problem to report) when it has
/// several or one whose declarations do not check.
fn page_tools(name: &str, page: &str) -> Result<Option<String>, String> {
    let blocks = fenced_blocks(page, "lt-tools");
    match blocks.as_slice() {
        [] => Ok(None),
        [decls] => {
            let checked = check_declarations(decls);
            if checked.is_ok() {
                Ok(Some(decls.clone()))
            } else {
                Err(format!(
                    "{name}: the ```lt-tools block's declarations have errors:{}",
                    describe(&Checked {
                        diagnostics: checked.diagnostics,
                        truncated: checked.truncated,
                    })
                ))
            }
        }
        _ => Err(format!(
            "{name}: has {} ```lt-tools blocks; expected at most one (the tool list of both examples)",
            blocks.len()
        )),
    }
}

/// The context an example is checked in: the page's profile (TOML text,
/// from [`page_profile`]) and tool list (declarations text, from
/// [`page_tools`]), each when the page has one.
#[derive(Default)]
struct Context {
    profile: Option<String>,
    tools: Option<String>,
}

/// The page's [`Context`], or the problems with it.
fn page_context(name: &str, page: &str) -> Result<Context, Vec<String>> {
    let profile = page_profile(name, page);
    let tools = page_tools(name, page);
    match (profile, tools) {
        (Ok(profile), Ok(tools)) => Ok(Context { profile, tools }),
        (profile, tools) => Err(profile.err().into_iter().chain(tools.err()).collect()),
    }
}

/// Checks `text` on a thread with a large stack (some examples are deep):
/// under the context's profile, when given, as `lt check --profile` does, and
/// against its tool list, when given, as `lt agent` does.
fn check(text: String, context: Context) -> Checked {
    std::thread::Builder::new()
        .stack_size(256 * 1024 * 1024)
        .spawn(move || {
            let mut a = check_source(&text);
            if let Some(toml) = &context.profile {
                let p = Profile::from_toml(toml, "page")
                    .expect("page_profile checked the profile")
                    .expect("page_profile checked the [profile] table");
                static_check::check_analysis(&mut a, &p);
            }
            if let Some(tools) = &context.tools {
                let decls = check_declarations(tools);
                let listed = check_tool_list(&a, &decls, tools);
                a.diagnostics.extend(listed);
            }
            Checked {
                diagnostics: a.diagnostics,
                truncated: a.truncated,
            }
        })
        .expect("spawn a checker thread")
        .join()
        .expect("the checker must not panic")
}

fn describe(a: &Checked) -> String {
    if a.diagnostics.is_empty() {
        return "no diagnostics".to_string();
    }
    let mut s = String::new();
    for d in &a.diagnostics {
        s.push_str(&format!(
            "\n      {} {} (bytes {}..{})",
            d.code.as_str(),
            d.message,
            d.span.start,
            d.span.end
        ));
    }
    if a.truncated > 0 {
        s.push_str(&format!("\n      … and {} more", a.truncated));
    }
    s
}

fn indent(text: &str) -> String {
    text.lines().map(|l| format!("      | {l}\n")).collect()
}

/// Panics with every problem found, one per line, if there are any.
fn report(what: &str, problems: Vec<String>) {
    if !problems.is_empty() {
        panic!(
            "{} page problem(s) ({what}):\n\n{}\n",
            problems.len(),
            problems.join("\n\n")
        );
    }
}

#[test]
fn every_code_has_a_page() {
    let mut problems = Vec::new();
    for &code in Code::ALL {
        let name = page_name(code);
        let path = pages_dir().join(format!("{}.md", code.as_str()));
        if !path.is_file() {
            problems.push(format!(
                "{name}: missing (write a page for {} \"{}\")",
                code.as_str(),
                code.title()
            ));
            continue;
        }
        let Some(page) = code.page() else {
            problems.push(format!(
                "{name}: exists but is not embedded by build.rs (rebuild?)"
            ));
            continue;
        };
        let title = format!("# {}: {}", code.as_str(), code.title());
        let first = page.lines().next().unwrap_or("").trim_end();
        if first != title {
            problems.push(format!(
                "{name}: first line is `{first}`, expected `{title}`"
            ));
        }
        for heading in ["## Example", "## Fix"] {
            if heading_line(page, heading).is_none() {
                problems.push(format!("{name}: has no `{heading}` section"));
            }
        }
    }
    report("missing or malformed pages", problems);
}

#[test]
fn every_page_is_a_code() {
    let known: BTreeSet<&str> = Code::ALL.iter().map(|c| c.as_str()).collect();
    let mut problems = Vec::new();
    let entries = std::fs::read_dir(pages_dir()).expect("docs/errors/ exists");
    for entry in entries {
        let path = entry.expect("readable directory entry").path();
        let file = path
            .file_name()
            .map(|f| f.to_string_lossy().into_owned())
            .unwrap_or_default();
        let stem = file.strip_suffix(".md");
        match stem {
            Some(stem) if known.contains(stem) => {}
            Some(stem) => problems.push(format!(
                "docs/errors/{file}: `{stem}` is not a code in src/diag/codes.rs (pages are named E0xxx.md after a code)"
            )),
            None => problems.push(format!("docs/errors/{file}: not a `.md` page; only code pages belong here")),
        }
    }
    for (code, _) in lt::diag::codes::PAGES {
        if !known.contains(code) && !pages_dir().join(format!("{code}.md")).exists() {
            problems
                .push(format!("docs/errors/{code}.md: embedded for an unknown code but no longer on disk (rebuild)"));
        }
    }
    report("pages that correspond to no code", problems);
}

#[test]
fn every_example_yields_its_code() {
    let mut problems = Vec::new();
    for &code in Code::ALL {
        let Some(page) = code.page() else { continue };
        let name = page_name(code);
        let blocks = fenced_blocks(page, "lt");
        if blocks.len() != 1 {
            problems.push(format!(
                "{name}: has {} ```lt blocks; expected exactly one (the example)",
                blocks.len()
            ));
            continue;
        }
        if let (Some(h), Some(f)) = (heading_line(page, "## Example"), fence_line(page, "lt")) {
            let fix = heading_line(page, "## Fix").unwrap_or(usize::MAX);
            if !(h < f && f < fix) {
                problems.push(format!(
                    "{name}: the ```lt block (line {f}) must be in the `## Example` section"
                ));
            }
        }
        let context = match page_context(&name, page) {
            Ok(c) => c,
            Err(found) => {
                problems.extend(found);
                continue;
            }
        };
        let analysis = check(expand(&blocks[0]), context);
        if !analysis.diagnostics.iter().any(|d| d.code == code) {
            problems.push(format!(
                "{name}: the ```lt example should yield {} ({}), but it yields: {}\n    example:\n{}",
                code.as_str(),
                code.title(),
                describe(&analysis),
                indent(&blocks[0])
            ));
        }
    }
    report("examples that do not yield their code", problems);
}

#[test]
fn every_fix_checks_cleanly() {
    let mut problems = Vec::new();
    for &code in Code::ALL {
        let Some(page) = code.page() else { continue };
        let name = page_name(code);
        let blocks = fenced_blocks(page, "lt-ok");
        if blocks.len() != 1 {
            problems.push(format!(
                "{name}: has {} ```lt-ok blocks; expected exactly one (the fix)",
                blocks.len()
            ));
            continue;
        }
        if let (Some(h), Some(f)) = (heading_line(page, "## Fix"), fence_line(page, "lt-ok")) {
            if f < h {
                problems.push(format!(
                    "{name}: the ```lt-ok block (line {f}) must be in the `## Fix` section"
                ));
            }
        }
        let context = match page_context(&name, page) {
            Ok(c) => c,
            Err(found) => {
                problems.extend(found);
                continue;
            }
        };
        let analysis = check(expand(&blocks[0]), context);
        if !analysis.is_ok() {
            problems.push(format!(
                "{name}: the ```lt-ok fix should check with no diagnostics, but it yields: {}\n    fix:\n{}",
                describe(&analysis),
                indent(&blocks[0])
            ));
        }
    }
    report("fixes that do not check", problems);
}

#[test]
fn page_profiles_are_read() {
    let one = "# T\n\n```toml\n[profile]\nname = \"p\"\nallow = []\n```\n";
    let toml = page_profile("one", one).expect("a valid profile");
    assert_eq!(
        toml.as_deref(),
        Some("[profile]\nname = \"p\"\nallow = []\n")
    );
    assert!(matches!(page_profile("none", "# T\n"), Ok(None)));
    let two = format!("{one}{one}");
    assert!(page_profile("two", &two).is_err());
    assert!(page_profile("bad", "```toml\n[profile]\nbogus = 1\n```\n").is_err());
    assert!(page_profile("empty", "```toml\n[tools.t]\n```\n").is_err());
}

#[test]
fn page_tool_lists_are_read() {
    let one = "# T\n\n```lt-tools\ntool t: String -{Read}-> String;\n```\n";
    let decls = page_tools("one", one).expect("a valid tool list");
    assert_eq!(decls.as_deref(), Some("tool t: String -{Read}-> String;\n"));
    assert!(matches!(page_tools("none", "# T\n"), Ok(None)));
    let two = format!("{one}{one}");
    assert!(page_tools("two", &two).is_err());
    assert!(page_tools("bad", "```lt-tools\ntool t: Strin -{Read}-> String;\n```\n").is_err());
    // The tool list's block is not an example.
    assert!(fenced_blocks(one, "lt").is_empty());
    // A program declaring a tool of the list differently, or one the list
    // does not have, yields E0704 and E0705.
    let context = || Context {
        profile: None,
        tools: decls.clone(),
    };
    let codes = |a: Checked| -> Vec<Code> { a.diagnostics.iter().map(|d| d.code).collect() };
    let wrong = "tool t: String -{Write}-> String;\ntool u: Int -> Int;\n1".to_string();
    assert_eq!(
        codes(check(wrong, context())),
        vec![Code::E0704, Code::E0705]
    );
    let right = "tool t: String -{Read}-> String;\n1".to_string();
    assert!(check(right, context()).is_ok());
}

#[test]
fn fenced_blocks_are_found() {
    let page = "# T\n\n```lt\na\n```\n\n```text\n```lt\n```\n\n```lt-ok\nb\nc\n```\n";
    assert_eq!(fenced_blocks(page, "lt"), vec!["a\n".to_string()]);
    assert_eq!(fenced_blocks(page, "lt-ok"), vec!["b\nc\n".to_string()]);
    assert_eq!(
        expand(&format!("x\ny {REPEAT_MARKER}\nz\n"))
            .lines()
            .count(),
        REPEAT_COUNT + 2
    );
}
