//! The whole path a user takes with an MCP server they did not write:
//! `lt tools import --mcp -- SERVER --out DIR` against the live server,
//! a program written against the imported declarations, `lt check`, then
//! `lt run` with the imported `tools.toml`, then `lt replay`. Against
//! `mcp-server-git` (from PyPI) on a repository the test creates, and
//! `examples/mcp_repo_report`, which composes two servers; and against
//! `tests/fixtures/mcp/content.py`, whose tools answer images, resource
//! links and embedded resources, and one of which runs only as a task.

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
        decls.contains("tool git_status: {repo_path: String} -{Read}-> Json;"),
        "{decls}"
    );
    assert!(
        decls.contains("tool git_reset: {repo_path: String} -{Write, Delete}-> Json;"),
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
let text = fn (r: Result<Json, String>) => match r {{ Ok(j) => with_default "not text" (json_string j), Err(e) => "Err: " ++ e }} in
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

    // Its declarations are what the import prints (description, fields
    // and their comments, effects, output type), word for word.
    let program = std::fs::read_to_string(root.join("examples/mcp_repo_report/program.lt"))
        .expect("program.lt");
    let mut printed = String::new();
    for server in ["mcp-server-time", "mcp-server-git"] {
        let bin = mcp::venv().join("bin").join(server).display().to_string();
        let import = lt_in(&dir.0, &["tools", "import", "--mcp", "--", &bin], &[]);
        assert_eq!(import.code, 0, "{import:?}");
        printed.push_str(&import.stdout);
    }
    let lines: Vec<&str> = program.lines().collect();
    let mut checked = 0;
    for (i, line) in lines.iter().enumerate() {
        if !line.starts_with("tool ") {
            continue;
        }
        let end = (i..lines.len())
            .find(|&j| lines[j].ends_with(';'))
            .expect("a declaration's end");
        // With the description line above it.
        let declaration = lines[i - 1..=end].join("\n");
        assert!(
            printed.contains(&declaration),
            "examples/mcp_repo_report/program.lt declares\n{declaration}\nbut the import prints\n{printed}"
        );
        checked += 1;
    }
    assert_eq!(checked, 3, "{program}");
}

#[test]
fn a_tool_answering_images_and_links_is_imported_as_json_and_a_task_only_tool_is_left_out() {
    let dir = TempDir::new("mcp-import-run", "content");
    let server = mcp::fixtures().join("content.py").display().to_string();
    let import = lt_in(
        &dir.0,
        &[
            "tools", "import", "--out", "imported", "--mcp", "--", "python3", &server,
        ],
        &[],
    );
    assert_eq!(import.code, 0, "{import:?}");
    assert!(
        import
            .stderr
            .contains("(`long_job`): left out: its execution.taskSupport is \"required\""),
        "{import:?}"
    );
    let decls = std::fs::read_to_string(dir.0.join("imported/tools.lt")).expect("tools.lt");
    assert!(
        decls.contains("tool picture: {label: String} -{Read}-> Json;"),
        "{decls}"
    );
    assert!(
        decls.contains("narrow it with json_string or json_list"),
        "{decls}"
    );
    assert!(!decls.contains("long_job"), "{decls}");
    let toml = std::fs::read_to_string(dir.0.join("imported/tools.toml")).expect("tools.toml");
    assert!(!toml.contains("long_job"), "{toml}");

    // Every block reaches the program; the text-only answer is a string.
    let program = format!(
        r#"{decls}
let kinds = match exec tool picture {{label = "a cat"}} {{
  Ok(j) => match json_list j {{
    Some(blocks) => map (fn (b: Json) => match json_get "type" b {{
      Some(t) => with_default "?" (json_string t),
      None => "?"
    }}) blocks,
    None => ["not a list"]
  }},
  Err(e) => [e]
}} in
let hello = match exec tool greeting {{label = "you"}} {{
  Ok(j) => with_default "not text" (json_string j),
  Err(e) => e
}} in
{{kinds = kinds, hello = hello}}
"#
    );
    dir.write("pictures.lt", &program);
    let run = lt_in(
        &dir.0,
        &[
            "run",
            "pictures.lt",
            "--executors",
            "imported/tools.toml",
            "--json",
        ],
        &[],
    );
    assert_eq!(run.code, 0, "{run:?}");
    let v = run.json();
    assert_eq!(
        v["value"]["kinds"],
        serde_json::json!(["text", "image", "resource_link", "resource"]),
        "{v}"
    );
    assert_eq!(v["value"]["hello"], serde_json::json!("hello you"), "{v}");
}

/// `lt tools import --mcp` against programs that are not MCP servers: each
/// fails in a few seconds (not the 60 s timeout) with what the program did
/// and a help line.
#[test]
fn importing_from_a_program_that_is_not_an_mcp_server_fails_fast() {
    let dir = TempDir::new("mcp-import-run", "not-a-server");
    let cases: [(&[&str], &str, u64); 5] = [
        // Sends lt's request back.
        (&["cat"], "sent lt's own initialize request back", 3),
        // Exits at once.
        (&["true"], "exited (exit status 0) before it answered initialize", 3),
        (
            &["sh", "-c", "echo usage: frob FILE >&2; exit 64"],
            "exited (exit status 64) before it answered initialize; stderr: usage: frob FILE",
            3,
        ),
        // Chatters on stdout, none of it JSON-RPC.
        (
            &["sh", "-c", "while :; do echo 'ready> '; sleep 0.2; done"],
            "none of them JSON-RPC (the last: \"ready>\"), and did not answer `initialize`; is it an MCP server?",
            8,
        ),
        // Silent: reads nothing, writes nothing.
        (
            &["sleep", "60"],
            "has written nothing, on stdout or stderr, for 10 s, and did not answer `initialize`",
            16,
        ),
    ];
    for (command, expected, within) in cases {
        let started = std::time::Instant::now();
        let mut args = vec!["tools", "import", "--mcp", "--"];
        args.extend_from_slice(command);
        let out = lt_in(&dir.0, &args, &[]);
        let took = started.elapsed();
        assert_eq!(out.code, 2, "{command:?}: {out:?}");
        assert!(out.stdout.is_empty(), "{command:?}: {out:?}");
        assert!(out.stderr.contains(expected), "{command:?}: {}", out.stderr);
        assert!(
            out.stderr.contains("\nhelp: --mcp runs `")
                && out.stderr.contains("name the server's own command"),
            "{command:?}: {}",
            out.stderr
        );
        assert!(
            took < std::time::Duration::from_secs(within),
            "{command:?} took {took:?}: {}",
            out.stderr
        );
    }
}
