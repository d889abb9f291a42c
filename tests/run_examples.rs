//! End-to-end runs of the SQLite examples (`examples/support_desk`,
//! `examples/batch_refunds`, `examples/revenue_report`): the real `lt` binary
//! runs each program with the example's `tools.toml` (Python tools), on a fresh
//! database in the system temp directory (`LT_EXAMPLE_DB`), and the test then
//! reads the database with `python3 -c "import sqlite3 …"` to check what the
//! tools wrote.
//!
//! Every test also checks that it left the example folder as it found it: no
//! `example.db`, no `__pycache__`, no other new file.

use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::SystemTime;

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// A database file in the temp directory, unique to this process and test,
/// removed (with its journal files) when dropped.
struct TempDb {
    path: PathBuf,
}

impl TempDb {
    fn new(test: &str) -> TempDb {
        let path =
            std::env::temp_dir().join(format!("lt-run-examples-{}-{test}.db", std::process::id()));
        let db = TempDb { path };
        db.remove();
        assert!(db.path.is_absolute(), "{}", db.path.display());
        db
    }

    fn remove(&self) {
        for suffix in ["", "-journal", "-wal", "-shm"] {
            let mut p = self.path.clone().into_os_string();
            p.push(suffix);
            let _ = std::fs::remove_file(PathBuf::from(p));
        }
    }
}

impl Drop for TempDb {
    fn drop(&mut self) {
        self.remove();
    }
}

/// What an example folder holds: every path under it, with size and mtime.
type Listing = BTreeMap<PathBuf, (u64, Option<SystemTime>)>;

fn listing(dir: &Path) -> Listing {
    let mut out = Listing::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            let meta = e.metadata().ok();
            if meta.as_ref().is_some_and(|m| m.is_dir()) {
                stack.push(p.clone());
            }
            out.insert(
                p,
                (
                    meta.as_ref().map_or(0, |m| m.len()),
                    meta.and_then(|m| m.modified().ok()),
                ),
            );
        }
    }
    out
}

/// Watches one example folder for the length of a test.
struct CleanFolder {
    dir: PathBuf,
    before: Listing,
}

impl CleanFolder {
    fn watch(example: &str) -> CleanFolder {
        let dir = repo().join("examples").join(example);
        assert!(dir.is_dir(), "{} is not a directory", dir.display());
        CleanFolder {
            before: listing(&dir),
            dir,
        }
    }

    /// Asserts that nothing was created or changed in the folder: in
    /// particular no `example.db` (the run used `LT_EXAMPLE_DB`) and no
    /// `__pycache__` (the tools set `sys.dont_write_bytecode`).
    fn assert_clean(&self) {
        let after = listing(&self.dir);
        let mut problems = Vec::new();
        for (p, meta) in &after {
            let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
            match self.before.get(p) {
                None if name == "__pycache__" => problems.push(format!(
                    "created {} (a tool imported a module without sys.dont_write_bytecode)",
                    p.display()
                )),
                None if name.starts_with("example.db") => problems.push(format!(
                    "created {} (a tool ignored LT_EXAMPLE_DB)",
                    p.display()
                )),
                None => problems.push(format!("created {}", p.display())),
                Some(old) if old != meta && !p.is_dir() => {
                    problems.push(format!("changed {}", p.display()))
                }
                _ => {}
            }
        }
        for p in self.before.keys() {
            if !after.contains_key(p) {
                problems.push(format!("removed {}", p.display()));
            }
        }
        assert!(
            problems.is_empty(),
            "the example folder {} is not as the test found it:\n  {}",
            self.dir.display(),
            problems.join("\n  ")
        );
    }
}

/// `lt ARGS` from the repository root, on the database `db`.
fn lt(args: &[&str], db: &TempDb) -> Output {
    Command::new(env!("CARGO_BIN_EXE_lt"))
        .current_dir(repo())
        .args(args)
        .env("LT_EXAMPLE_DB", &db.path)
        // The tools themselves must keep the folder free of bytecode.
        .env_remove("PYTHONDONTWRITEBYTECODE")
        .output()
        .expect("run the lt binary")
}

/// `lt run examples/<dir>/<program> --executors examples/<dir>/tools.toml EXTRA…`.
fn run_example(dir: &str, program: &str, extra: &[&str], db: &TempDb) -> Output {
    let program = format!("examples/{dir}/{program}");
    let executors = format!("examples/{dir}/tools.toml");
    let mut args = vec!["run", program.as_str(), "--executors", executors.as_str()];
    args.extend_from_slice(extra);
    lt(&args, db)
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Asserts exit status 0, nothing on stderr, and exactly `value` (and a
/// newline) on stdout.
fn assert_prints(out: &Output, value: &str) {
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(
        out.status.code(),
        Some(0),
        "lt run failed\nstdout:\n{stdout}\nstderr:\n{stderr}"
    );
    assert_eq!(stdout, format!("{value}\n"), "stderr:\n{stderr}");
    assert_eq!(stderr, "", "unexpected output on stderr");
}

/// The rows of `query` on the database, as JSON arrays (read-only: the file
/// must already exist).
fn rows(db: &TempDb, query: &str) -> Value {
    let script = "import sqlite3, json, sys, urllib.request\n\
                  uri = 'file:' + urllib.request.pathname2url(sys.argv[1]) + '?mode=ro'\n\
                  c = sqlite3.connect(uri, uri=True)\n\
                  print(json.dumps(c.execute(sys.argv[2]).fetchall()))\n\
                  c.close()";
    let out = Command::new("python3")
        .arg("-c")
        .arg(script)
        .arg(&db.path)
        .arg(query)
        .output()
        .expect("run python3");
    assert!(
        out.status.success(),
        "python3 could not read {} ({query}):\n{}",
        db.path.display(),
        text(&out.stderr)
    );
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("python3 printed no JSON ({e}): {}", text(&out.stdout)))
}

/// `[lt] call N ID TOOL ARG → …` lines of a `--verbose` run: (id, tool, line).
fn calls(stderr: &str) -> Vec<(String, String, String)> {
    stderr
        .lines()
        .filter_map(|l| {
            let rest = l.strip_prefix("[lt] call ")?;
            let mut words = rest.split(' ');
            let _n = words.next()?;
            let id = words.next()?.to_string();
            let tool = words.next()?.to_string();
            Some((id, tool, l.to_string()))
        })
        .collect()
}

/// The `exec` nodes of a program's IR: node id → tool name.
fn exec_nodes(program: &str) -> BTreeMap<u32, String> {
    let src = std::fs::read_to_string(repo().join(program)).expect("program text");
    let checked = lt::types::check_source(&src)
        .into_checked()
        .unwrap_or_else(|_| panic!("{program} is rejected"));
    let ir = lt::ir::lower::lower(&checked).expect("lowering");
    ir.nodes
        .iter()
        .enumerate()
        .filter_map(|(i, n)| match n.kind {
            lt::ir::NodeKind::Exec { tool, .. } => {
                Some((i as u32, ir.tools[tool as usize].name.to_string()))
            }
            _ => None,
        })
        .collect()
}

/// Every call a `--verbose` run reports names an `exec` node of its tool
/// (the root `nK` of the call identity).
fn assert_call_ids_are_exec_nodes(program: &str, calls: &[(String, String, String)]) {
    let execs = exec_nodes(program);
    for (id, tool, line) in calls {
        let root: String = id
            .strip_prefix('n')
            .unwrap_or("")
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        let root: u32 = root
            .parse()
            .unwrap_or_else(|_| panic!("no node id in `{line}`"));
        assert_eq!(
            execs.get(&root),
            Some(tool),
            "`{line}`: n{root} is not an `exec {tool}` node of {program} (execs: {execs:?})"
        );
    }
}

const SUPPORT_DESK_OK: &str = "\"refund tx_000001 processed and ada@example.com notified\"";
const SUPPORT_DESK_AGAIN: &str = "\"refund failed: tool issue_refund failed (exit status 1): \
the last charge on cust_12345 (4999 cents) has already been refunded\"";

#[test]
fn support_desk_refunds_once_and_replies_once() {
    let folder = CleanFolder::watch("support_desk");
    let db = TempDb::new("support_desk_refunds_once_and_replies_once");

    let out = run_example("support_desk", "program.lt", &[], &db);
    assert_prints(&out, SUPPORT_DESK_OK);
    assert_eq!(
        rows(&db, "SELECT tx_id, account_id, amount_cents FROM refunds"),
        json!([["tx_000001", "cust_12345", 4999]])
    );
    let replies = json!([[
        "ada@example.com",
        "Your last charge has been refunded. Transaction: tx_000001"
    ]]);
    assert_eq!(rows(&db, "SELECT recipient, body FROM replies"), replies);

    // Again on the same database: the charge is already refunded, so the
    // refund fails, and the reply (nested in its Ok arm) is never sent.
    let out = run_example("support_desk", "program.lt", &["--verbose"], &db);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "stderr:\n{stderr}");
    assert_eq!(
        stdout,
        format!("{SUPPORT_DESK_AGAIN}\n"),
        "stderr:\n{stderr}"
    );
    let calls = calls(&stderr);
    let tools: Vec<&str> = calls.iter().map(|(_, t, _)| t.as_str()).collect();
    assert_eq!(
        tools,
        ["lookup_account", "issue_refund"],
        "stderr:\n{stderr}"
    );
    assert!(calls[1].2.contains("→ failed"), "{}", calls[1].2);
    assert_call_ids_are_exec_nodes("examples/support_desk/program.lt", &calls);
    assert!(
        stderr.contains("[lt] done: 2 tool calls"),
        "stderr:\n{stderr}"
    );
    assert_eq!(
        rows(&db, "SELECT tx_id, account_id, amount_cents FROM refunds"),
        json!([["tx_000001", "cust_12345", 4999]])
    );
    assert_eq!(rows(&db, "SELECT recipient, body FROM replies"), replies);

    drop(db);
    folder.assert_clean();
}

#[test]
fn support_desk_no_charge_writes_nothing() {
    let folder = CleanFolder::watch("support_desk");
    let db = TempDb::new("support_desk_no_charge_writes_nothing");

    let out = run_example("support_desk", "program_no_charge.lt", &[], &db);
    assert_prints(
        &out,
        "\"refund failed: tool issue_refund failed (exit status 1): \
         account cust_00000 has no charge to refund\"",
    );
    assert_eq!(rows(&db, "SELECT COUNT(*) FROM refunds"), json!([[0]]));
    assert_eq!(rows(&db, "SELECT COUNT(*) FROM replies"), json!([[0]]));
    // The account was read, not changed.
    assert_eq!(
        rows(
            &db,
            "SELECT email, last_charge_cents FROM accounts WHERE id = 'cust_00000'"
        ),
        json!([["grace@example.com", 0]])
    );

    drop(db);
    folder.assert_clean();
}

#[test]
fn batch_refunds_stops_at_the_first_failure() {
    let folder = CleanFolder::watch("batch_refunds");
    let db = TempDb::new("batch_refunds_stops_at_the_first_failure");

    let out = run_example("batch_refunds", "program.lt", &["--verbose"], &db);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(
        out.status.code(),
        Some(0),
        "stdout:\n{stdout}\nstderr:\n{stderr}"
    );
    let error = "tool issue_refund failed (exit status 1): \
                 request req_003: no account with id cust_9999";
    assert_eq!(
        stdout,
        format!("\"batch stopped at the first failure: {error}\"\n"),
        "stderr:\n{stderr}"
    );

    // traverse called issue_refund on req_001, req_002, req_003 (which
    // failed), in order, and never on req_004 or req_005.
    let calls = calls(&stderr);
    let tools: Vec<&str> = calls.iter().map(|(_, t, _)| t.as_str()).collect();
    assert_eq!(
        tools,
        [
            "pending_refunds",
            "issue_refund",
            "issue_refund",
            "issue_refund",
            "log_batch"
        ],
        "stderr:\n{stderr}"
    );
    let refunds: Vec<&(String, String, String)> = calls
        .iter()
        .filter(|(_, t, _)| t == "issue_refund")
        .collect();
    for (i, (id, _, line)) in refunds.iter().enumerate() {
        assert!(
            line.contains(&format!("\"request_id\":\"req_00{}\"", i + 1)),
            "{line}"
        );
        assert!(id.ends_with(&format!(":{i}]")), "item {i} in `{line}`");
    }
    assert!(refunds[2].2.contains("→ failed"), "{}", refunds[2].2);
    assert!(!stderr.contains("req_004") && !stderr.contains("req_005"));
    assert_call_ids_are_exec_nodes("examples/batch_refunds/program.lt", &calls);
    assert!(stderr.contains("[lt] done: 5 tool calls"), "{stderr}");

    assert_eq!(
        rows(
            &db,
            "SELECT tx_id, request_id, account_id, amount_cents FROM refunds ORDER BY id"
        ),
        json!([
            ["tx_000001", "req_001", "cust_1001", 1500],
            ["tx_000002", "req_002", "cust_1002", 2500]
        ])
    );
    assert_eq!(
        rows(&db, "SELECT id, status FROM refund_requests ORDER BY seq"),
        json!([
            ["req_001", "refunded"],
            ["req_002", "refunded"],
            ["req_003", "pending"],
            ["req_004", "pending"],
            ["req_005", "pending"]
        ])
    );
    assert_eq!(
        rows(&db, "SELECT status, detail FROM batch_log"),
        json!([["stopped", error]])
    );

    drop(db);
    folder.assert_clean();
}

const REVENUE_REPORT: &str = "{paid_orders = 15, revenue_cents = 68596, largest_cents = 15000, \
refunded_orders = 4, refunded_cents = 39200, error = \"\"}";

#[test]
fn revenue_report_reads_and_never_writes() {
    let folder = CleanFolder::watch("revenue_report");
    let db = TempDb::new("revenue_report_reads_and_never_writes");

    let out = run_example("revenue_report", "program.lt", &[], &db);
    assert_prints(&out, REVENUE_REPORT);

    // The numbers are the database's: May 2024, by status.
    assert_eq!(
        rows(
            &db,
            "SELECT status, COUNT(*), SUM(amount_cents), MAX(amount_cents) FROM orders \
             WHERE placed_on LIKE '2024-05-%' GROUP BY status ORDER BY status"
        ),
        json!([
            ["paid", 15, 68596, 15000],
            ["pending", 1, 18500, 18500],
            ["refunded", 4, 39200, 25000]
        ])
    );
    let all_orders = "SELECT id, customer, placed_on, amount_cents, status FROM orders ORDER BY id";
    let orders = rows(&db, all_orders);
    assert_eq!(orders.as_array().map(Vec::len), Some(23), "{orders}");
    let file_before = std::fs::read(&db.path).expect("the database file");

    // Again, as JSON: the same value; the orders (and the file) unchanged.
    let out = run_example("revenue_report", "program.lt", &["--json"], &db);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "stderr:\n{stderr}");
    let v: Value = serde_json::from_str(&stdout)
        .unwrap_or_else(|e| panic!("--json printed no JSON object ({e}):\n{stdout}"));
    assert_eq!(v["ok"], json!(true), "{v}");
    assert_eq!(
        v["value"],
        json!({
            "paid_orders": 15,
            "revenue_cents": 68596,
            "largest_cents": 15000,
            "refunded_orders": 4,
            "refunded_cents": 39200,
            "error": ""
        }),
        "{v}"
    );
    assert_eq!(
        v["type"],
        json!(
            "{paid_orders: Int, revenue_cents: Int, largest_cents: Int, \
             refunded_orders: Int, refunded_cents: Int, error: String}"
        ),
        "{v}"
    );
    assert_eq!(v["effects"], json!(["Read"]), "{v}");
    assert_eq!(v["calls"], json!(1), "{v}");
    assert!(v["steps"].as_u64().is_some_and(|s| s > 0), "{v}");

    assert_eq!(rows(&db, all_orders), orders);
    assert_eq!(
        std::fs::read(&db.path).expect("the database file"),
        file_before,
        "a read-only report changed the database file"
    );

    drop(db);
    folder.assert_clean();
}

#[test]
fn temp_databases_are_distinct_and_removed() {
    let a = TempDb::new("temp_a");
    let b = TempDb::new("temp_b");
    assert_ne!(a.path, b.path);
    std::fs::write(&a.path, b"x").expect("write");
    let p = a.path.clone();
    drop(a);
    assert!(!p.exists());
}
