//! `docs/llm-guide.md`, the guide for models (the system prompt of `lt
//! agent`), is true: every ```` ```lt ```` block checks clean, and every
//! ```` ```lt fails=E0202 ```` block (`fails=E0401,E0602` for several) is
//! rejected with each code listed among its diagnostics. Blocks in other
//! languages (```` ```text ````, ```` ```python ````) are not checked.
//!
//! Also `lt prompt --tools DECLS.lt`: the guide, then the declarations.

use lt::agent::prompt::{system_prompt, GUIDE, TOOLS_HEADING};
use lt::types::check_source;
use std::process::Command;

const GUIDE_PATH: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/llm-guide.md");

/// A fenced block of the guide.
struct Block {
    /// The line of its first code line (1-based).
    line: usize,
    /// The info string, e.g. `lt fails=E0202`.
    info: String,
    /// Its text.
    code: String,
}

fn blocks(text: &str) -> Vec<Block> {
    let mut out = Vec::new();
    let mut lines = text.lines().enumerate();
    while let Some((i, line)) = lines.next() {
        let Some(info) = line.strip_prefix("```") else {
            continue;
        };
        let mut code = String::new();
        let mut closed = false;
        for (_, l) in lines.by_ref() {
            if l.starts_with("```") {
                closed = true;
                break;
            }
            code.push_str(l);
            code.push('\n');
        }
        assert!(closed, "docs/llm-guide.md:{}: unclosed code block", i + 1);
        out.push(Block {
            line: i + 2,
            info: info.trim().to_string(),
            code,
        });
    }
    out
}

/// The codes a block claims (`fails=E0202,E0401`), or `None` for a block
/// that must check clean; `Err` when the info string is malformed.
fn claimed(info: &str) -> Result<Option<Vec<String>>, String> {
    let mut words = info.split_whitespace();
    words.next(); // `lt`
    let mut codes = None;
    for w in words {
        match w.strip_prefix("fails=") {
            Some(list) => {
                let list: Vec<String> = list.split(',').map(str::to_string).collect();
                for c in &list {
                    if lt::diag::Code::parse(c).is_none_or(|code| code.as_str() != c) {
                        return Err(format!("`{c}` is not an lt error code"));
                    }
                }
                codes = Some(list);
            }
            None => return Err(format!("unknown attribute `{w}`")),
        }
    }
    Ok(codes)
}

#[test]
fn every_lt_block_of_the_guide_checks_as_claimed() {
    let text = std::fs::read_to_string(GUIDE_PATH).expect("docs/llm-guide.md");
    let mut failures = Vec::new();
    let (mut checked, mut rejected) = (0, 0);
    for b in blocks(&text) {
        if b.info.split_whitespace().next() != Some("lt") {
            continue;
        }
        checked += 1;
        let expected = match claimed(&b.info) {
            Ok(e) => e,
            Err(msg) => {
                failures.push(format!("docs/llm-guide.md:{}: {msg}", b.line));
                continue;
            }
        };
        let analysis = check_source(&b.code);
        let found: Vec<&str> = analysis
            .diagnostics
            .iter()
            .map(|d| d.code.as_str())
            .collect();
        let summary = || {
            analysis
                .diagnostics
                .iter()
                .map(|d| format!("{} {}", d.code.as_str(), d.message))
                .collect::<Vec<_>>()
                .join("; ")
        };
        match expected {
            None if !analysis.is_ok() => failures.push(format!(
                "docs/llm-guide.md:{}: the block should check clean, but: {}",
                b.line,
                summary()
            )),
            None => {}
            Some(codes) => {
                rejected += 1;
                let missing: Vec<&String> = codes
                    .iter()
                    .filter(|c| !found.contains(&c.as_str()))
                    .collect();
                if !missing.is_empty() {
                    failures.push(format!(
                        "docs/llm-guide.md:{}: the block should be rejected with {}, but {}",
                        b.line,
                        codes.join(", "),
                        if found.is_empty() {
                            "it checks clean".to_string()
                        } else {
                            format!("its diagnostics are: {}", summary())
                        }
                    ));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(
        checked >= 25,
        "the guide has {checked} ```lt blocks; it should show at least 25"
    );
    assert!(
        rejected >= 10,
        "the guide has {rejected} ```lt fails= blocks; it should show at least 10"
    );
}

#[test]
fn the_guide_in_the_binary_is_the_file() {
    let text = std::fs::read_to_string(GUIDE_PATH).expect("docs/llm-guide.md");
    assert_eq!(GUIDE, text);
}

#[test]
fn the_guide_shows_the_feedback_format() {
    for line in [
        "Your program was rejected before anything ran (2 errors). Fix every error and send the whole corrected program in one ```lt block.",
        "E0202 at line 7, col 20: Field 'plan' not found in record type {id: String, email: String}",
        "  fix: the closest field is `id`; use one of the record's fields: id, email",
    ] {
        assert!(GUIDE.contains(line), "the guide does not show `{line}`");
    }
}

/// The guide's rejection is the loop's (`lt::agent::feedback::rejected`).
#[test]
fn the_guide_shows_the_loops_rejection_message() {
    use lt::agent::feedback::{rejected, Problem};
    let text = "\n\n\n\n\n\nlet p = account.plan in\n";
    let file = lt::source::SourceFile::new("p.lt".to_string(), text.to_string());
    let problem = Problem {
        code: "E0202".into(),
        line: 7,
        column: 20,
        message: "Field 'plan' not found in record type {id: String, email: String}".into(),
        help: Some("the closest field is `id`; use one of the record's fields: id, email".into()),
    };
    let message = rejected(&file, &[problem.clone(), problem], 0);
    for line in message.lines().take(4) {
        assert!(
            GUIDE.lines().any(|l| l == line),
            "the guide does not show the loop's line `{line}`"
        );
    }
}

/// The guide's run results are the loop's (`lt::agent::feedback::ran`).
#[test]
fn the_guide_shows_the_loops_run_messages() {
    use lt::agent::feedback::{ran, CallNote, CallNotes, RunEnd};
    let note = |status: &str, message: Option<&str>| CallNote {
        call_id: "n1".into(),
        tool: "issue_refund".into(),
        status: status.into(),
        message: message.map(str::to_string),
    };
    let value = ran(
        &RunEnd::Value("{refunded = 1, failed = [\"o2: card expired\"]}".into()),
        &CallNotes {
            calls: vec![note("ok", None), note("err", Some("card expired"))],
        },
        false,
    );
    let stopped = ran(
        &RunEnd::Stopped {
            kind: "call_limit".into(),
            message: "tool call limit of 20 reached before calling get_order".into(),
        },
        &CallNotes {
            calls: (0..20).map(|_| note("ok", None)).collect(),
        },
        false,
    );
    let shown: Vec<&str> = value
        .lines()
        .take(3)
        .chain(stopped.lines().take(1))
        .collect();
    for line in shown {
        assert!(
            GUIDE.lines().any(|l| l == line),
            "the guide does not show the loop's line `{line}`"
        );
    }
}

#[test]
fn the_blocks_of_a_fixture_are_found() {
    let b = blocks("a\n```lt\n1\n```\n```lt fails=E0202\nx.y\n```\n```text\nz\n```\n");
    let found: Vec<(usize, &str, &str)> = b
        .iter()
        .map(|b| (b.line, b.info.as_str(), b.code.as_str()))
        .collect();
    assert_eq!(
        found,
        vec![
            (3, "lt", "1\n"),
            (6, "lt fails=E0202", "x.y\n"),
            (9, "text", "z\n")
        ]
    );
    assert_eq!(
        claimed("lt fails=E0401,E0602").expect("well-formed"),
        Some(vec!["E0401".to_string(), "E0602".to_string()])
    );
    assert!(claimed("lt fails=E9999").is_err());
    assert!(claimed("lt fail=E0202").is_err());
}

// ---- lt prompt ----

fn lt(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_lt"))
        .args(args)
        .env("NO_COLOR", "1")
        .output()
        .expect("run lt")
}

fn temp_file(name: &str, text: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("lt-llm-guide-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write");
    path
}

const DECLS: &str = "effect Payment;\n\
type Money = {cents: Int, currency: \"EUR\" | \"USD\"};\n\
// Looks up a customer by id.\n\
tool lookup: {id: String} -{Read}-> {email: String};\n\
// Charges a customer.\n\
tool charge: {customer: String, amount: Money} -{Write, Payment}-> {id: String};\n";

#[test]
fn prompt_prints_the_guide_then_the_declarations() {
    let path = temp_file("decls.lt", DECLS);
    let out = lt(&["prompt", "--tools", path.to_str().expect("a UTF-8 path")]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let stdout = String::from_utf8(out.stdout).expect("UTF-8 output");
    assert_eq!(stdout, system_prompt(DECLS));
    // The guide comes first, without the test's `fails=` tags.
    let shown_guide: String = GUIDE
        .trim_end()
        .lines()
        .map(|l| {
            if l.starts_with("```lt fails=") {
                "```lt"
            } else {
                l
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    assert!(stdout.starts_with(&shown_guide));
    assert!(!stdout.contains("fails="));
    let tools = stdout.find(TOOLS_HEADING).expect("the tools section");
    assert!(tools >= shown_guide.len());
    assert!(stdout[tools..].contains(&format!("```lt\n{}```\n", DECLS)));
    assert!(stdout
        .trim_end()
        .ends_with("plain text without a code block."));
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn prompt_reads_standard_input() {
    use std::io::Write as _;
    let mut child = Command::new(env!("CARGO_BIN_EXE_lt"))
        .args(["prompt", "--tools", "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run lt");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(DECLS.as_bytes())
        .expect("write stdin");
    let out = child.wait_with_output().expect("wait for lt");
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        String::from_utf8(out.stdout).expect("UTF-8 output"),
        system_prompt(DECLS)
    );
}

#[test]
fn prompt_rejects_bad_declarations_with_their_diagnostics() {
    let path = temp_file(
        "bad.lt",
        "tool lookup: {id: Strin} -{Read}-> {email: String};\ntool lookup: String -{Reed}-> String;\n",
    );
    let out = lt(&["prompt", "--tools", path.to_str().expect("a UTF-8 path")]);
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    let stderr = String::from_utf8(out.stderr).expect("UTF-8 output");
    for code in ["E0205", "E0212", "E0213"] {
        assert!(stderr.contains(code), "{code} missing from:\n{stderr}");
    }
    assert!(stderr.contains("error: 3 errors found in"), "{stderr}");
}

#[test]
fn prompt_of_a_missing_file_is_a_usage_error() {
    let out = lt(&["prompt", "--tools", "/nonexistent/decls.lt"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    let stderr = String::from_utf8(out.stderr).expect("UTF-8 output");
    assert!(
        stderr.contains("error: cannot read `/nonexistent/decls.lt`"),
        "{stderr}"
    );
}

#[test]
fn prompt_needs_the_tools_option() {
    let out = lt(&["prompt"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn prompt_leaves_out_a_program_expression_with_a_warning() {
    let program = format!(
        "{DECLS}\n// the program\nmatch exec tool lookup {{id = \"c1\"}} {{ Ok(c) => c.email, Err(e) => e }}\n"
    );
    let path = temp_file("program.lt", &program);
    let out = lt(&["prompt", "--tools", path.to_str().expect("a UTF-8 path")]);
    assert_eq!(out.status.code(), Some(0));
    let stdout = String::from_utf8(out.stdout).expect("UTF-8 output");
    assert_eq!(stdout, system_prompt(DECLS));
    assert!(!stdout.contains("// the program"));
    let stderr = String::from_utf8(out.stderr).expect("UTF-8 output");
    assert!(
        stderr.contains("warning:") && stderr.contains("expression after the declarations"),
        "{stderr}"
    );
}

#[test]
fn prompt_of_a_file_without_tools_warns() {
    let path = temp_file("empty.lt", "// nothing yet\n");
    let out = lt(&["prompt", "--tools", path.to_str().expect("a UTF-8 path")]);
    assert_eq!(out.status.code(), Some(0));
    let stderr = String::from_utf8(out.stderr).expect("UTF-8 output");
    assert!(stderr.contains("declares no tools"), "{stderr}");
}
