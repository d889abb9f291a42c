//! MCP servers downstream of `lt mcp`: one killed (SIGKILL from outside)
//! or dying (`os._exit`) in the middle of a call makes that call an `Err`
//! in the program, and the next `run_program` starts it afresh; and the
//! reference servers `mcp-server-time` and `mcp-server-git` in one program.

use super::*;

/// A folder whose tools are the fixture server's `pid`, `slow` and
/// `crash` (one process, its starts appended to starts.txt) and the journal.
fn fixture_setup(name: &str) -> TempDir {
    let dir = TempDir::new("mcp-server", name);
    dir.write("journal.py", JOURNAL_PY);
    dir.write(
        "tools.lt",
        "tool pid: Unit -{Read}-> {pid: Int};\n\
         tool slow: {ms: Int, label: String} -{Read}-> {label: String, start_ms: Float, end_ms: Float, pid: Int};\n\
         tool crash: Unit -{Read}-> String;\n\
         tool journal: {line: String} -{Write}-> {n: Int};\n",
    );
    let server = |tool: &str| {
        format!(
            "[tools.{tool}]\nmcp = {{ command = [{:?}, {:?}], tool = {tool:?}, env = {{ LT_FIXTURE_STARTS = \"starts.txt\" }} }}\ntimeout_ms = 60000\n\n",
            mcp::python().display().to_string(),
            mcp::fixture_server().display().to_string(),
        )
    };
    dir.write(
        "tools.toml",
        &format!(
            "{}{}{}[tools.journal]\ncommand = [\"python3\", \"journal.py\"]\n",
            server("pid"),
            server("slow"),
            server("crash")
        ),
    );
    dir
}

/// The pids of starts.txt: one per start of the fixture server.
fn starts(dir: &TempDir) -> Vec<i64> {
    std::fs::read_to_string(dir.path("starts.txt"))
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|l| l.parse().ok())
        .collect()
}

const PID: &str = "match exec tool pid () { Ok(p) => p.pid, Err(e) => 0 }";

#[test]
fn a_downstream_server_killed_mid_call_is_an_err_and_the_next_program_restarts_it() {
    let dir = fixture_setup("killed");
    // The journal line marks that `slow` is next: the client kills the
    // server half a second after it appears, while `slow` waits.
    let killed = r#"
let p = exec tool pid () in
let j = exec tool journal {line = "before the kill"} in
let s = exec tool slow {ms = 30000, label = "killed"} in
{ before = match p { Ok(x) => x.pid, Err(e) => 0 },
  lines = match j { Ok(x) => x.n, Err(e) => 0 },
  slow = match s { Ok(x) => "Ok: " ++ x.label, Err(e) => e } }"#;
    let crashed = r#"
match exec tool crash () { Ok(s) => "Ok: " ++ s, Err(e) => e }"#;
    let mut kill = run(killed);
    kill["kill_pids_in"] = json!("starts.txt");
    kill["kill_when"] = json!("journal.txt");
    kill["kill_after_s"] = json!(0.5);
    let steps = drive(&dir, ARGS, json!([kill, run(PID), run(crashed), run(PID)]));
    // The killed call is an Err the program handled; the calls before it ran.
    let r = &steps[1];
    assert_eq!(r["isError"], false, "{r}");
    let value = &r["structuredContent"]["value"];
    let first = value["before"].as_i64().unwrap_or(0);
    assert!(first > 0, "{r}");
    let why = value["slow"].as_str().unwrap_or("");
    assert!(
        why.starts_with("tool slow: the MCP server ")
            && why.contains("was killed by signal 9 (SIGKILL) during the call"),
        "{r}"
    );
    assert_eq!(
        calls_made(r),
        [
            ("pid".to_string(), "ok".to_string()),
            ("journal".into(), "ok".into()),
            ("slow".into(), "crashed".into())
        ],
        "{r}"
    );
    // The next program gets a fresh server.
    let second = steps[2]["structuredContent"]["value"].as_i64().unwrap_or(0);
    assert!(second > 0 && second != first, "{}", steps[2]);
    // A server that dies by itself in a call: the same.
    let r = &steps[3];
    assert_eq!(r["isError"], false, "{r}");
    let why = r["structuredContent"]["value"].as_str().unwrap_or("");
    assert!(why.starts_with("tool crash: the MCP server "), "{r}");
    assert_eq!(
        calls_made(r),
        [("crash".to_string(), "crashed".to_string())]
    );
    let third = steps[4]["structuredContent"]["value"].as_i64().unwrap_or(0);
    assert!(third > 0 && third != second, "{}", steps[4]);
    assert_eq!(starts(&dir), [first, second, third]);
}

#[test]
fn a_program_calls_mcp_server_time_and_mcp_server_git() {
    let dir = setup(
        "git",
        &format!(
            "\n[tools.git_log]\nmcp = {{ command = [{:?}], tool = \"git_log\" }}\ntimeout_ms = 30000\n",
            mcp::script("mcp-server-git").display().to_string()
        ),
    );
    dir.write(
        "tools.lt",
        &format!("{TOOLS_LT}// Shows the commit logs\ntool git_log: {{repo_path: String, max_count?: Int}} -{{Read}}-> String;\n"),
    );
    // A repository with one commit.
    let repo = dir.path("repo");
    std::fs::create_dir_all(&repo).expect("repo");
    std::fs::write(std::path::Path::new(&repo).join("a.txt"), "a\n").expect("a.txt");
    for args in [
        &["init", "-q"][..],
        &["add", "a.txt"],
        &[
            "-c",
            "user.name=lt",
            "-c",
            "user.email=lt@example.com",
            "commit",
            "-qm",
            "the first commit of the repository",
        ],
    ] {
        let out = Command::new("git")
            .args(args)
            .current_dir(&repo)
            .output()
            .expect("git");
        assert!(out.status.success(), "git {args:?}: {out:?}");
    }
    let program = format!(
        r#"
match exec tool now {{timezone = "Etc/UTC"}} {{
  Ok(t) => match exec tool git_log {{repo_path = {repo:?}, max_count = Some(1)}} {{
    Ok(log) => {{tz = t.timezone, log = log}},
    Err(e) => {{tz = t.timezone, log = "git_log failed: " ++ e}}
  }},
  Err(e) => {{tz = "", log = e}}
}}"#,
        repo = repo
    );
    let steps = drive(&dir, ARGS, json!([run(&program)]));
    let r = &steps[1];
    assert_eq!(r["isError"], false, "{r}");
    let value = &r["structuredContent"]["value"];
    assert_eq!(value["tz"], "Etc/UTC", "{r}");
    assert!(
        value["log"]
            .as_str()
            .unwrap_or("")
            .contains("the first commit of the repository"),
        "{r}"
    );
    assert_eq!(
        calls_made(r),
        [
            ("now".to_string(), "ok".to_string()),
            ("git_log".into(), "ok".into())
        ]
    );
}
