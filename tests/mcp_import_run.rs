//! The whole path a user takes with an MCP server they did not write:
//! `lt tools import --mcp -- SERVER --out DIR` against the live server,
//! a program written against the imported declarations, `lt check`, then
//! `lt run` with the imported `tools.toml`, then `lt replay`. Against
//! `mcp-server-git` (from PyPI) on a repository the test creates, and
//! `examples/mcp_repo_report`, which composes two servers.

mod support;

use support::{lt_in, mcp, TempDir};

fn git(repo: &std::path::Path, args: &[&str]) {
    let status = std::process::Command::new("git")
        .args(["-c", "user.name=lt", "-c", "user.email=lt@example.com"])
        .args(args)
        .current_dir(repo)
        .status()
        .expect("run git");
    assert!(status.success(), "git {args:?}");
}

#[test]
fn import_check_run_and_replay_against_mcp_server_git() {
    let dir = TempDir::new("mcp-import-run", "git");
    let repo = dir.0.join("repo");
    std::fs::create_dir_all(&repo).expect("repo dir");
    git(&repo, &["init", "-q", "-b", "main"]);
    std::fs::write(repo.join("notes.txt"), "one\n").expect("write");
    git(&repo, &["add", "notes.txt"]);
    git(&repo, &["commit", "-q", "-m", "first note"]);
    std::fs::write(repo.join("notes.txt"), "one\ntwo\n").expect("write");

    let server = mcp::script("mcp-server-git").display().to_string();
    let import = lt_in(
        &dir.0,
        &[
            "tools", "import", "--out", "imported", "--mcp", "--", &server,
        ],
        &[],
    );
    assert_eq!(import.code, 0, "{import:?}");
    let decls = std::fs::read_to_string(dir.0.join("imported/tools.lt")).expect("tools.lt");
    // What the server's annotations say, as effects.
    assert!(
        decls.contains("tool git_status: {repo_path: String} -{Read}-> String;"),
        "{decls}"
    );
    assert!(
        decls.contains("tool git_reset: {repo_path: String} -{Write, Delete}-> String;"),
        "{decls}"
    );
    let toml = std::fs::read_to_string(dir.0.join("imported/tools.toml")).expect("tools.toml");
    assert!(toml.contains("tool = \"git_log\""), "{toml}");

    // A program written against the imported declarations.
    let repo = repo.display().to_string();
    let program = format!(
        r#"{decls}
let changes = gather {{
  status = exec tool git_status {{repo_path = {repo:?}}},
  diff = exec tool git_diff_unstaged {{repo_path = {repo:?}, context_lines = Some(0)}},
  log = exec tool git_log {{repo_path = {repo:?}, max_count = Some(1)}}
}} in
let text = fn (r: Result<String, String>) => match r {{ Ok(s) => s, Err(e) => "Err: " ++ e }} in
{{status = text changes.status, diff = text changes.diff, log = text changes.log}}
"#
    );
    dir.write("report.lt", &program);
    let check = lt_in(&dir.0, &["check", "report.lt"], &[]);
    assert_eq!(check.code, 0, "{check:?}");
    assert!(check.stdout.contains("effects: {Read}"), "{check:?}");

    let run = lt_in(
        &dir.0,
        &[
            "run",
            "report.lt",
            "--executors",
            "imported/tools.toml",
            "--json",
            "--log",
            "report.jsonl",
        ],
        &[],
    );
    assert_eq!(run.code, 0, "{run:?}");
    let v = run.json();
    let value = &v["value"];
    let field = |k: &str| value[k].as_str().unwrap_or_default().to_string();
    assert!(field("status").contains("modified:   notes.txt"), "{value}");
    assert!(field("diff").contains("+two"), "{value}");
    assert!(field("log").contains("first note"), "{value}");

    let replay = lt_in(&dir.0, &["replay", "report.jsonl"], &[]);
    assert_eq!(replay.code, 0, "{replay:?}");
}

#[test]
fn the_mcp_repo_report_example_composes_two_servers() {
    mcp::venv();
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = TempDir::new("mcp-import-run", "example");
    let log = dir.path("example.jsonl");
    let run = lt_in(
        root,
        &[
            "run",
            "examples/mcp_repo_report/program.lt",
            "--executors",
            "examples/mcp_repo_report/tools.toml",
            "--log",
            &log,
        ],
        &[],
    );
    assert_eq!(run.code, 0, "{run:?}");
    let value: String = serde_json::from_str(run.stdout.trim()).expect("a JSON string");
    assert!(value.starts_with("Report of "), "{value}");
    assert!(value.contains("(Etc/UTC)\nBranches: "), "{value}");
    assert!(value.contains("\nLast commits: "), "{value}");
    let replay = lt_in(root, &["replay", &log], &[]);
    assert_eq!(replay.code, 0, "{replay:?}");
}
