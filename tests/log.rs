//! The event log (`src/log`, `docs/log-format.md`): writing, reading,
//! verifying, and detecting every kind of alteration at the right line.
//!
//! Fixtures in `tests/log/`: `golden.jsonl`, a log of every event kind
//! written with a fixed clock and session id (the format, byte for byte:
//! a change here changes every hash), and `timeline.snap`, its timeline.
//! After an intended format change: `LT_BLESS=1 cargo test --test log`
//! rewrites `golden.jsonl`, `INSTA_UPDATE=always` the snapshot; read both
//! diffs.
//!
//! Every kind (`EventKind::ALL`, declared once in `src/log/event.rs`) is
//! written, read back, verified and shown, and `docs/log-format.md`
//! documents each with exactly its fields (`every_kind_…` below).

#[path = "support/doc_tables.rs"]
mod doc_tables;

use lt::log::{
    canonical_bytes, read_log, read_prefix, sha256_hex, timeline, verify, Decision, Event,
    EventBody, EventKind, LogError, LogWriter, MemoryLog, ProblemKind, VerifyReport, KINDS,
    ZERO_HASH,
};
use quickcheck::{Arbitrary, Gen, QuickCheck, TestResult};
use serde_json::{json, Value as Json};
use std::path::{Path, PathBuf};

const SESSION: &str = "0123456789abcdef0123456789abcdef";
const OTHER_SESSION: &str = "fedcba9876543210fedcba9876543210";

fn fixed_clock() -> String {
    "2026-11-29T21:04:05.123Z".to_string()
}

fn log_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join("log")
}

fn temp_path(name: &str) -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("log-{}-{name}.jsonl", std::process::id()))
}

/// A session with every event kind: an allowed call that completes, a
/// denied one, one that fails, one that times out, a dry run, and the end.
fn every_kind() -> Vec<EventBody> {
    let started = EventBody::SessionStarted {
        lt_version: "0.1.0".into(),
        program:
            "tool lookup : {id : String} -> {tier : String} ! Read\nexec lookup {id = \"c1\"}\n"
                .into(),
        program_hash: sha256_hex(b"program"),
        profile: json!({"name": "support", "allow": ["lookup", "refund"], "deny": ["delete"],
                        "effects": null, "max_calls": 20, "dry_run": false, "tools": {}}),
        registry_hash: sha256_hex(b""),
        limits: json!({"max_calls": 10000, "max_steps": 100000000, "timeout_ms": 300000}),
    };
    let call = |id: &str, tool: &str, arg: Json| {
        vec![
            EventBody::Proposed {
                call_id: id.into(),
                tool: tool.into(),
                argument: arg,
            },
            EventBody::Decided {
                call_id: id.into(),
                decision: Decision::Allow,
                rule: "policy".into(),
                reason: "every rule passed".into(),
            },
            EventBody::Scheduled {
                call_id: id.into(),
                tool: tool.into(),
                venue: "server".into(),
                idempotency_key: format!("{SESSION}:{id}"),
            },
        ]
    };
    let mut out = vec![started];
    out.extend(call("n7[n3:0]", "lookup", json!({"id": "c1"})));
    out.push(EventBody::Completed {
        call_id: "n7[n3:0]".into(),
        output: json!({"tier": "gold", "extra": [1, 2.5, -3, null, true]}),
        result: json!({"Ok": {"tier": "gold"}}),
    });
    out.push(EventBody::Proposed {
        call_id: "n9".into(),
        tool: "delete".into(),
        argument: json!({"id": "c1", "note": "line one\nline two \"quoted\" é \u{1}"}),
    });
    out.push(EventBody::Decided {
        call_id: "n9".into(),
        decision: Decision::Deny,
        rule: "denylist".into(),
        reason: "profile support denies tool delete".into(),
    });
    out.extend(call("n11", "refund", json!({"amount": 12.75})));
    out.push(EventBody::Failed {
        call_id: "n11".into(),
        failure: "failed".into(),
        message: "tool refund failed (exit status 1): card declined".into(),
        result: json!({"Err": "tool refund failed (exit status 1): card declined"}),
        stderr: None,
    });
    out.extend(call("n12", "lookup", json!({"id": "c2"})));
    out.push(EventBody::TimedOut {
        call_id: "n12".into(),
        message: "tool lookup timed out after 2000 ms".into(),
        result: json!({"Err": "tool lookup timed out after 2000 ms"}),
        stderr: None,
    });
    out.push(EventBody::Proposed {
        call_id: "n14".into(),
        tool: "refund".into(),
        argument: json!({"amount": 1}),
    });
    out.push(EventBody::Decided {
        call_id: "n14".into(),
        decision: Decision::Allow,
        rule: "dry_run".into(),
        reason: "dry run: refund has effects and is not executed".into(),
    });
    out.push(EventBody::Completed {
        call_id: "n14".into(),
        output: json!({"tx_id": "dry-run"}),
        result: json!({"Ok": {"tx_id": "dry-run"}}),
    });
    out.push(EventBody::SessionEnded {
        status: "ok".into(),
        value: Some(json!({"tier": "gold", "refunded": false})),
        r#type: Some("{refunded : Bool, tier : String}".into()),
        error: None,
        calls: 4,
        steps: 120,
    });
    out
}

fn memory_log(bodies: Vec<EventBody>, session: &str) -> MemoryLog {
    let mut log = MemoryLog::new(session)
        .expect("valid session id")
        .with_clock(fixed_clock);
    for body in bodies {
        log.append(body).expect("memory never fails");
    }
    log
}

/// The all-kinds log's text.
fn base_text() -> String {
    memory_log(every_kind(), SESSION).to_jsonl()
}

fn lines(text: &str) -> Vec<String> {
    text.lines().map(str::to_string).collect()
}

fn join(lines: &[String]) -> String {
    lines.iter().map(|l| format!("{l}\n")).collect()
}

fn parse(line: &str) -> Json {
    serde_json::from_str(line).expect("a JSON line")
}

/// `event` (a JSON object with `hash`) with its `hash` recomputed.
fn rehash(mut event: Json) -> String {
    let map = event.as_object_mut().expect("object");
    map.remove("hash");
    let hash = sha256_hex(&canonical_bytes(&event));
    event
        .as_object_mut()
        .expect("object")
        .insert("hash".into(), Json::String(hash));
    String::from_utf8(canonical_bytes(&event)).expect("UTF-8")
}

#[track_caller]
fn assert_problem(report: &VerifyReport, line: usize, kind: ProblemKind) -> String {
    assert!(!report.ok, "expected a problem at line {line}: {report:?}");
    let problem = report.problem.as_ref().expect("a problem");
    assert_eq!(
        (problem.line, problem.kind),
        (line, kind),
        "wrong line or kind: {problem}"
    );
    assert_eq!(report.events, line - 1, "{report:?}");
    problem.to_string()
}

#[test]
fn writer_output_reads_back_and_verifies() {
    let path = temp_path("roundtrip");
    let bodies = every_kind();
    let mut writer = LogWriter::create(&path, SESSION)
        .expect("create")
        .with_clock(fixed_clock);
    let mut written = Vec::new();
    for (i, body) in bodies.iter().enumerate() {
        let event = writer.append(body.clone()).expect("append");
        assert_eq!(event.seq, i as u64);
        assert_eq!(event.hash, event.compute_hash());
        // Events that record or precede an action are on disk (in the OS)
        // before append returns, with everything before them; `proposed`
        // and an allowing `decided` wait for the next such event.
        let buffered = matches!(
            &event.body,
            EventBody::Proposed { .. }
                | EventBody::Decided {
                    decision: lt::log::Decision::Allow,
                    ..
                }
        );
        let on_disk = std::fs::read_to_string(&path).expect("read");
        if buffered {
            assert!(on_disk.lines().count() <= i, "{} buffered", event.kind());
        } else {
            assert_eq!(on_disk.lines().count(), i + 1);
            assert!(on_disk.ends_with(&format!("{}\n", event.to_line())));
        }
        written.push(event.clone());
    }
    assert_eq!(writer.len(), bodies.len() as u64);
    for pair in written.windows(2) {
        assert_eq!(pair[1].prev, pair[0].hash);
    }
    assert_eq!(written[0].prev, ZERO_HASH);

    let text = std::fs::read_to_string(&path).expect("read");
    let _ = std::fs::remove_file(&path);
    let report = verify(&text);
    assert!(report.ok, "{report}");
    assert_eq!(report.events, bodies.len());
    assert!(!report.incomplete_tail);
    assert_eq!(report.session.as_deref(), Some(SESSION));
    assert_eq!(report.last_hash.as_ref(), written.last().map(|e| &e.hash));

    let events = read_log(&text).expect("reads");
    assert_eq!(events, written);
    assert_eq!(
        events.iter().map(|e| e.body.clone()).collect::<Vec<_>>(),
        bodies
    );
    // The memory log chains and prints exactly the same bytes.
    assert_eq!(memory_log(bodies, SESSION).to_jsonl(), text);
}

#[test]
fn create_truncates_an_existing_file() {
    let path = temp_path("truncate");
    std::fs::write(&path, "old content\n").expect("write");
    let mut writer = LogWriter::create(&path, SESSION).expect("create");
    writer.append(every_kind().remove(0)).expect("append");
    let text = std::fs::read_to_string(&path).expect("read");
    let _ = std::fs::remove_file(&path);
    assert!(verify(&text).ok);
    assert!(LogWriter::create(&path, "short").is_err());
}

#[cfg(target_os = "linux")]
#[test]
fn a_failed_write_stops_the_writer() {
    // Linux always has /dev/full; a sandbox without it fails the test
    // rather than skipping it silently.
    let mut writer = LogWriter::create("/dev/full", SESSION).expect("open /dev/full");
    let first = writer.append(every_kind().remove(0));
    assert!(first.is_err(), "writing to /dev/full succeeded");
    let second = writer.append(every_kind().remove(0)).expect_err("broken");
    assert!(
        second.to_string().contains("earlier write failed"),
        "{second}"
    );
    assert!(writer.is_empty());
}

#[test]
fn the_golden_log_is_stable_and_verifies() {
    let path = log_dir().join("golden.jsonl");
    let text = base_text();
    if std::env::var_os("LT_BLESS").is_some() {
        std::fs::write(&path, &text).expect("write golden.jsonl");
    }
    let golden = std::fs::read_to_string(&path).expect("tests/log/golden.jsonl");
    // Checked on its own first: the file pins the hash algorithm and the
    // canonical form independently of the writer.
    let report = verify(&golden);
    assert!(report.ok, "{report}");
    assert_eq!(report.events, every_kind().len());
    assert!(
        golden == text,
        "the writer's output differs from tests/log/golden.jsonl: the log format changed \
         (LT_BLESS=1 cargo test --test log to accept an intended change)"
    );
}

#[test]
fn timeline_snapshot() {
    let events = read_log(&base_text()).expect("reads");
    let shown = timeline(&events);
    insta::with_settings!({
        snapshot_path => log_dir(),
        prepend_module_to_snapshot => false,
        omit_expression => true,
        description => "timeline of tests/log/golden.jsonl",
    }, {
        insta::assert_snapshot!("timeline", shown);
    });
}

#[test]
fn timeline_of_an_unfinished_session_and_of_an_error() {
    let mut bodies = every_kind();
    bodies.truncate(3);
    let shown = timeline(memory_log(bodies.clone(), SESSION).events());
    assert!(
        shown.ends_with("not ended: no session_ended event after 3 events (the session is running, or lt stopped)\n"),
        "{shown}"
    );
    bodies.push(EventBody::SessionEnded {
        status: "error".into(),
        value: None,
        r#type: None,
        error: Some(
            json!({"kind": "step_limit", "message": "more than 100 steps", "line": 3, "column": 7}),
        ),
        calls: 1,
        steps: 101,
    });
    let shown = timeline(memory_log(bodies, SESSION).events());
    assert!(
        shown
            .ends_with("ended error: step_limit: more than 100 steps at 3:7 (1 call, 101 steps)\n"),
        "{shown}"
    );
    let long = "x".repeat(500);
    let shown = timeline(
        memory_log(
            vec![EventBody::Proposed {
                call_id: "n1".into(),
                tool: "t".into(),
                argument: json!({ "text": long }),
            }],
            SESSION,
        )
        .events(),
    );
    let line = shown.lines().nth(1).expect("the event line");
    assert!(line.chars().count() < 140 && line.ends_with('…'), "{line}");
}

// ---- every alteration, detected at its line ------------------------------

#[test]
fn an_edited_field_in_the_middle_breaks_its_hash() {
    let mut l = lines(&base_text());
    assert!(l[5].contains("\"c1\""));
    l[5] = l[5].replace("\"c1\"", "\"c2\"");
    let message = assert_problem(&verify(&join(&l)), 6, ProblemKind::Hash);
    assert!(
        message.starts_with("line 6: hash mismatch: the event was edited after it was written"),
        "{message}"
    );
}

#[test]
fn an_edited_hash_is_a_hash_mismatch() {
    let mut l = lines(&base_text());
    let mut event = parse(&l[6]);
    let hash = event["hash"].as_str().expect("hash").to_string();
    let flipped = format!(
        "{}{}",
        if hash.starts_with('a') { "b" } else { "a" },
        &hash[1..]
    );
    event["hash"] = Json::String(flipped);
    l[6] = String::from_utf8(canonical_bytes(&event)).expect("UTF-8");
    assert_problem(&verify(&join(&l)), 7, ProblemKind::Hash);
}

#[test]
fn an_edit_with_a_recomputed_hash_breaks_the_next_prev() {
    let mut l = lines(&base_text());
    let mut event = parse(&l[4]);
    event["call_id"] = json!("n8");
    l[4] = rehash(event);
    let message = assert_problem(&verify(&join(&l)), 6, ProblemKind::Prev);
    assert_eq!(
        message,
        "line 6: prev does not match the hash of line 5 (event seq 4): the log was edited, \
         reordered or an event was removed before this line"
    );
}

#[test]
fn reordered_lines_are_out_of_sequence() {
    let mut l = lines(&base_text());
    l.swap(3, 4);
    let message = assert_problem(&verify(&join(&l)), 4, ProblemKind::Seq);
    assert_eq!(
        message,
        "line 4: seq 4, expected 3: an event is missing before this line, or the lines are out of order"
    );
}

#[test]
fn a_dropped_line_is_a_gap_in_seq() {
    let mut l = lines(&base_text());
    l.remove(6);
    assert_problem(&verify(&join(&l)), 7, ProblemKind::Seq);
    // Dropping the first line: the log no longer starts at seq 0.
    let mut l = lines(&base_text());
    l.remove(0);
    let message = assert_problem(&verify(&join(&l)), 1, ProblemKind::Seq);
    assert!(
        message.starts_with("line 1: seq 1, expected 0"),
        "{message}"
    );
}

#[test]
fn a_duplicated_line_repeats_a_seq() {
    let mut l = lines(&base_text());
    l.insert(7, l[6].clone());
    let message = assert_problem(&verify(&join(&l)), 8, ProblemKind::Seq);
    assert_eq!(
        message,
        "line 8: seq 6, expected 7: an event is repeated, or the lines are out of order"
    );
}

#[test]
fn an_appended_event_with_a_fake_hash() {
    let mut l = lines(&base_text());
    let last = parse(l.last().expect("a line"));
    let n = l.len();
    l.push(format!(
        r#"{{"call_id":"n20","hash":"{}","kind":"proposed","prev":"{}","seq":{n},"session":"{SESSION}","tool":"refund","ts":"2026-11-29T21:05:00.000Z","argument":{{"amount":1000}}}}"#,
        "ab".repeat(32),
        last["hash"].as_str().expect("hash"),
    ));
    assert_problem(&verify(&join(&l)), n + 1, ProblemKind::Hash);
}

#[test]
fn an_appended_event_with_a_correct_hash_but_a_wrong_prev() {
    let mut l = lines(&base_text());
    let n = l.len();
    let event = json!({"call_id": "n20", "hash": "", "kind": "proposed", "prev": "cd".repeat(32),
                       "seq": n, "session": SESSION, "tool": "refund",
                       "ts": "2026-11-29T21:05:00.000Z", "argument": {"amount": 1000}});
    l.push(rehash(event));
    let message = assert_problem(&verify(&join(&l)), n + 1, ProblemKind::Prev);
    assert!(
        message.contains(&format!("hash of line {n} (event seq {})", n - 1)),
        "{message}"
    );
}

#[test]
fn a_correctly_chained_event_after_the_end_is_out_of_order() {
    let mut l = lines(&base_text());
    let n = l.len();
    let last = parse(&l[n - 1]);
    let event = json!({"call_id": "n20", "hash": "", "kind": "proposed", "prev": last["hash"],
                       "seq": n, "session": SESSION, "tool": "refund",
                       "ts": "2026-11-29T21:05:00.000Z", "argument": {"amount": 1000}});
    l.push(rehash(event));
    let message = assert_problem(&verify(&join(&l)), n + 1, ProblemKind::Order);
    assert!(message.contains("after the session ended"), "{message}");
}

#[test]
fn a_cut_last_line_is_an_incomplete_tail() {
    let text = base_text();
    let cut = &text[..text.len() - 40];
    let report = verify(cut);
    let n = every_kind().len();
    assert!(report.ok, "{report}");
    assert!(report.incomplete_tail);
    assert_eq!(report.events, n - 1);
    assert_eq!(report.tail_line(), n);
    assert!(report
        .to_string()
        .contains(&format!("line {n}: incomplete")));
    // Even a complete event without its newline is a tail: the write did
    // not finish.
    let report = verify(&text[..text.len() - 1]);
    assert!(report.ok && report.incomplete_tail && report.events == n - 1);
    match read_log(cut) {
        Err(LogError::IncompleteTail { line, events }) => assert_eq!((line, events), (n, n - 1)),
        other => panic!("expected an incomplete tail, got {other:?}"),
    }
    let (events, report) = read_prefix(cut);
    assert_eq!(events.len(), n - 1);
    assert!(report.incomplete_tail);
}

#[test]
fn text_after_session_ended_is_not_a_tail_but_an_order_problem() {
    let text = base_text();
    let n = every_kind().len();
    let message = assert_problem(
        &verify(&format!("{text}{{\"seq\":")),
        n + 1,
        ProblemKind::Order,
    );
    assert!(message.contains("after session_ended"), "{message}");
}

#[test]
fn an_empty_file() {
    let message = assert_problem(&verify(""), 1, ProblemKind::Empty);
    assert!(message.contains("empty"), "{message}");
    // Only a cut first line: nothing complete either.
    let text = base_text();
    let report = verify(&text[..20]);
    assert_problem(&report, 1, ProblemKind::Empty);
    assert!(report.incomplete_tail);
}

#[test]
fn a_non_json_line() {
    let mut l = lines(&base_text());
    l[3] = "<html>not JSON</html>".into();
    let message = assert_problem(&verify(&join(&l)), 4, ProblemKind::NotJson);
    assert!(
        message.starts_with("line 4: not JSON: expected value"),
        "{message}"
    );
    assert!(message.contains("(column 1)"), "{message}");
    let mut l = lines(&base_text());
    l.insert(2, String::new());
    assert_problem(&verify(&join(&l)), 3, ProblemKind::NotJson);
}

#[test]
fn a_line_missing_its_hash() {
    let mut l = lines(&base_text());
    let mut event = parse(&l[8]);
    event.as_object_mut().expect("object").remove("hash");
    l[8] = event.to_string();
    let message = assert_problem(&verify(&join(&l)), 9, ProblemKind::Malformed);
    assert_eq!(
        message,
        "line 9: an event needs the field `hash` (a string)"
    );
}

#[test]
fn malformed_events_name_the_field() {
    let mut l = lines(&base_text());
    let mut event = parse(&l[2]);
    event.as_object_mut().expect("object").remove("reason");
    l[2] = rehash(event);
    let message = assert_problem(&verify(&join(&l)), 3, ProblemKind::Malformed);
    assert_eq!(
        message,
        "line 3: a `decided` event needs the field `reason` (a string)"
    );
    let mut l = lines(&base_text());
    let mut event = parse(&l[2]);
    event["kind"] = json!("approved");
    l[2] = rehash(event);
    let message = assert_problem(&verify(&join(&l)), 3, ProblemKind::Malformed);
    assert!(
        message
            .starts_with("line 3: unknown event kind \"approved\" (the kinds are session_started,"),
        "{message}"
    );
    let mut l = lines(&base_text());
    l[2] = "[1,2,3]".into();
    assert_problem(&verify(&join(&l)), 3, ProblemKind::Malformed);
}

#[test]
fn a_repeated_key_is_rejected() {
    let mut l = lines(&base_text());
    // A second `seq` that serde_json alone would silently let win or lose.
    l[3] = l[3].replacen('{', "{\"seq\":99,", 1);
    let message = assert_problem(&verify(&join(&l)), 4, ProblemKind::NotJson);
    assert!(message.contains("\"seq\" appears twice"), "{message}");
}

#[test]
fn a_line_of_another_session() {
    let mut l = lines(&base_text());
    let other = lines(&memory_log(every_kind(), OTHER_SESSION).to_jsonl());
    l[4] = other[4].clone();
    let message = assert_problem(&verify(&join(&l)), 5, ProblemKind::Session);
    assert_eq!(
        message,
        format!(
            "line 5: session {OTHER_SESSION} differs from the first event's {SESSION}: \
             lines of another session's log were mixed in"
        )
    );
}

#[test]
fn reencoded_lines_are_not_canonical() {
    // Same content, same hash, different bytes: a space, an escape, CRLF.
    let mut l = lines(&base_text());
    l[3] = l[3].replacen(",", ", ", 1);
    let message = assert_problem(&verify(&join(&l)), 4, ProblemKind::NotCanonical);
    assert!(
        message.contains("the content matches its hash"),
        "{message}"
    );
    let mut l = lines(&base_text());
    assert!(l[5].contains('é'));
    l[5] = l[5].replace('é', "\\u00e9");
    assert_problem(&verify(&join(&l)), 6, ProblemKind::NotCanonical);
    let crlf = base_text().replace('\n', "\r\n");
    let message = assert_problem(&verify(&crlf), 1, ProblemKind::NotCanonical);
    assert!(message.contains("CRLF"), "{message}");
}

#[test]
fn a_log_not_starting_with_session_started() {
    let mut bodies = every_kind();
    bodies.remove(0);
    let text = memory_log(bodies, SESSION).to_jsonl();
    let message = assert_problem(&verify(&text), 1, ProblemKind::Order);
    assert!(
        message.contains("a log starts with `session_started`"),
        "{message}"
    );
    let mut bodies = every_kind();
    bodies.insert(3, every_kind().remove(0));
    assert_problem(
        &verify(&memory_log(bodies, SESSION).to_jsonl()),
        4,
        ProblemKind::Order,
    );
}

#[test]
fn a_first_event_with_a_nonzero_prev() {
    let mut l = lines(&base_text());
    let mut event = parse(&l[0]);
    event["prev"] = json!("12".repeat(32));
    l[0] = rehash(event);
    assert_problem(&verify(&join(&l)), 1, ProblemKind::Prev);
}

#[test]
fn read_log_refuses_what_verify_refuses() {
    let mut l = lines(&base_text());
    l[5] = l[5].replace("\"c1\"", "\"c2\"");
    match read_log(&join(&l)) {
        Err(LogError::Invalid(p)) => assert_eq!((p.line, p.kind), (6, ProblemKind::Hash)),
        other => panic!("expected a hash problem, got {other:?}"),
    }
    let (events, report) = read_prefix(&join(&l));
    assert_eq!(events.len(), 5);
    assert!(!report.ok);
}

#[test]
fn a_full_rewrite_verifies_but_changes_the_last_hash() {
    // The documented limit: whoever can write the file can recompute the
    // whole chain. Only a last hash kept elsewhere reveals it.
    let original = verify(&base_text());
    let mut bodies = every_kind();
    if let EventBody::Decided { decision, .. } = &mut bodies[6] {
        *decision = Decision::Allow;
    }
    let rewritten = verify(&memory_log(bodies, SESSION).to_jsonl());
    assert!(rewritten.ok);
    assert_ne!(rewritten.last_hash, original.last_hash);
}

#[test]
fn deep_json_is_written_verified_and_shown() {
    // A tool output nested far beyond serde_json's default limit of 128.
    let worker = std::thread::Builder::new()
        .stack_size(512 * 1024)
        .spawn(|| {
            let depth = 5_000;
            let mut deep = json!(7);
            for _ in 0..depth {
                deep = Json::Array(vec![deep]);
            }
            let mut log = MemoryLog::new(SESSION).expect("id");
            log.append(every_kind().remove(0)).expect("append");
            log.append(EventBody::Completed {
                call_id: "n1".into(),
                output: deep,
                result: json!({"Err": "too deep"}),
            })
            .expect("append");
            let jsonl = log.to_jsonl();
            assert!(verify(&jsonl).ok);
            let events = read_log(&jsonl).expect("reads");
            assert!(timeline(&events).contains("[[[["));
            events.into_iter().for_each(lt::log::drop_event);
            log.into_events().into_iter().for_each(lt::log::drop_event);
        })
        .expect("thread");
    worker.join().expect("no stack overflow");
}

#[test]
fn canonical_numbers_and_escapes_are_as_documented() {
    let value = json!({"b": [2.5, 1e300, -0.0, 2.5e-10, 3.0, -7, 18446744073709551615u64],
                       "a": "\u{1}\u{1f}\n\t\"\\/é\u{7f}"});
    assert_eq!(
        String::from_utf8(canonical_bytes(&value)).expect("UTF-8"),
        // DEL (U+007F) is not a control character to JSON: written as is.
        r#"{"a":"\u0001\u001f\n\t\"\\/é"#.to_string()
            + "\u{7f}"
            + r#"","b":[2.5,1e+300,-0.0,2.5e-10,3.0,-7,18446744073709551615]}"#
    );
    // Doubles that a parser without exact rounding can misread survive a
    // write and a verification (serde_json's `float_roundtrip`).
    let tricky = [
        5e-324,
        2.2250738585072014e-308,
        1.7976931348623157e308,
        0.1 + 0.2,
        9007199254740993.0,
        1.0000000000000002,
        8.41e21,
        4.35135e-308,
    ];
    let log = memory_log(
        vec![
            every_kind().remove(0),
            EventBody::Proposed {
                call_id: "n1".into(),
                tool: "t".into(),
                argument: json!(tricky),
            },
        ],
        SESSION,
    );
    let events = read_log(&log.to_jsonl()).expect("verifies");
    assert_eq!(events, log.into_events());
}

// ---- properties ----------------------------------------------------------

/// A random JSON value, at most `depth` levels of arrays and objects.
fn json_value(g: &mut Gen, depth: usize) -> Json {
    let choices = if depth == 0 { 6 } else { 8 };
    match u8::arbitrary(g) % choices {
        0 => Json::Null,
        1 => Json::Bool(bool::arbitrary(g)),
        2 => json!(i64::arbitrary(g)),
        3 => json!(u64::arbitrary(g)),
        4 => serde_json::Number::from_f64(f64::arbitrary(g)).map_or(Json::Null, Json::Number),
        5 => Json::String(String::arbitrary(g)),
        6 => Json::Array(
            (0..usize::arbitrary(g) % 4)
                .map(|_| json_value(g, depth - 1))
                .collect(),
        ),
        _ => Json::Object(
            (0..usize::arbitrary(g) % 4)
                .map(|_| (String::arbitrary(g), json_value(g, depth - 1)))
                .collect(),
        ),
    }
}

fn random_body(g: &mut Gen) -> EventBody {
    let s = |g: &mut Gen| String::arbitrary(g);
    match u8::arbitrary(g) % 8 {
        0 => EventBody::SessionStarted {
            lt_version: s(g),
            program: s(g),
            program_hash: s(g),
            profile: Json::Object(serde_json::Map::from_iter([(s(g), json_value(g, 2))])),
            registry_hash: s(g),
            limits: Json::Object(serde_json::Map::new()),
        },
        1 => EventBody::Proposed {
            call_id: s(g),
            tool: s(g),
            argument: json_value(g, 3),
        },
        2 => EventBody::Decided {
            call_id: s(g),
            decision: if bool::arbitrary(g) {
                Decision::Allow
            } else {
                Decision::Deny
            },
            rule: s(g),
            reason: s(g),
        },
        3 => EventBody::Scheduled {
            call_id: s(g),
            tool: s(g),
            venue: s(g),
            idempotency_key: s(g),
        },
        4 => EventBody::Completed {
            call_id: s(g),
            output: json_value(g, 3),
            result: json_value(g, 2),
        },
        5 => EventBody::Failed {
            call_id: s(g),
            failure: s(g),
            message: s(g),
            result: json_value(g, 1),
            stderr: bool::arbitrary(g).then(|| s(g)),
        },
        6 => EventBody::TimedOut {
            call_id: s(g),
            message: s(g),
            result: json_value(g, 1),
            stderr: bool::arbitrary(g).then(|| s(g)),
        },
        _ => EventBody::SessionEnded {
            status: s(g),
            value: bool::arbitrary(g).then(|| json_value(g, 2)),
            r#type: Option::<String>::arbitrary(g),
            error: bool::arbitrary(g).then(|| json_value(g, 1)),
            calls: u64::arbitrary(g),
            steps: u64::arbitrary(g),
        },
    }
}

/// A random session: `session_started`, random events, `session_ended`.
#[derive(Clone, Debug)]
struct Session(Vec<EventBody>);

impl Arbitrary for Session {
    fn arbitrary(g: &mut Gen) -> Session {
        let mut bodies = vec![loop {
            let b = random_body(g);
            if matches!(b, EventBody::SessionStarted { .. }) {
                break b;
            }
        }];
        for _ in 0..usize::arbitrary(g) % 8 {
            let b = random_body(g);
            if !matches!(
                b,
                EventBody::SessionStarted { .. } | EventBody::SessionEnded { .. }
            ) {
                bodies.push(b);
            }
        }
        if bool::arbitrary(g) {
            bodies.push(EventBody::SessionEnded {
                status: "ok".into(),
                value: Some(json_value(g, 2)),
                r#type: None,
                error: None,
                calls: 0,
                steps: 0,
            });
        }
        Session(bodies)
    }
}

fn written(session: &Session) -> (String, Vec<Event>) {
    let log = memory_log(session.0.clone(), SESSION);
    (log.to_jsonl(), log.into_events())
}

#[test]
fn property_written_logs_verify_and_read_back() {
    fn prop(session: Session) -> bool {
        let (text, events) = written(&session);
        let report = verify(&text);
        report.ok && report.events == events.len() && read_log(&text).ok() == Some(events)
    }
    QuickCheck::new()
        .tests(150)
        .rng(Gen::new(20))
        .quickcheck(prop as fn(Session) -> bool);
}

/// Flips the bits `mask` of byte `at` of line `line` (0-based), never its
/// newline, and verifies the result (decoded lossily if no longer UTF-8).
/// With `upto_line`, the lines after `line` are left out: they cannot
/// matter to a verdict that must come at or before `line`.
fn flip_and_verify(text: &str, line: usize, at: usize, mask: u8, upto_line: bool) -> VerifyReport {
    let mut spans = text.split_inclusive('\n');
    let start: usize = spans.by_ref().take(line).map(str::len).sum();
    let end = if upto_line {
        start + spans.next().map_or(0, str::len)
    } else {
        text.len()
    };
    let mut bytes = text.as_bytes()[..end].to_vec();
    bytes[start + at] ^= mask;
    verify(&String::from_utf8_lossy(&bytes))
}

#[test]
fn property_any_flipped_byte_fails_at_or_before_its_line() {
    fn prop(session: Session, line: usize, at: usize, mask: u8) -> TestResult {
        if mask == 0 {
            return TestResult::discard();
        }
        let (text, _) = written(&session);
        let all = lines(&text);
        let line = line % all.len();
        let at = at % all[line].len();
        let report = flip_and_verify(&text, line, at, mask, false);
        match &report.problem {
            Some(p) if p.line <= line + 1 && !report.ok => TestResult::passed(),
            _ => TestResult::error(format!(
                "flipping byte {at} of line {} with {mask:#04x} gave {report:?}",
                line + 1
            )),
        }
    }
    QuickCheck::new()
        .tests(300)
        .rng(Gen::new(20))
        .quickcheck(prop as fn(Session, usize, usize, u8) -> TestResult);
}

/// One event of each kind with short values that still have escapes,
/// non-ASCII text and every sort of number.
fn small_every_kind() -> Vec<EventBody> {
    let id = || "n1".to_string();
    vec![
        EventBody::SessionStarted {
            lt_version: "0.1".into(),
            program: "p\n".into(),
            profile: json!({"name": "é\u{1f}"}),
            program_hash: "h".into(),
            registry_hash: "r".into(),
            limits: json!({"f": 1e300, "g": 2.5e-10, "n": -3}),
        },
        EventBody::Proposed {
            call_id: id(),
            tool: "t".into(),
            argument: json!({"a": [1.5, -2, null, true, "\"\\/"]}),
        },
        EventBody::Decided {
            call_id: id(),
            decision: Decision::Allow,
            rule: "r".into(),
            reason: "ok".into(),
        },
        EventBody::Scheduled {
            call_id: id(),
            tool: "t".into(),
            venue: "server".into(),
            idempotency_key: "k".into(),
        },
        EventBody::Completed {
            call_id: id(),
            output: json!(18446744073709551615u64),
            result: json!({"Ok": -0.0}),
        },
        EventBody::Failed {
            call_id: id(),
            failure: "crashed".into(),
            message: "m\t".into(),
            result: json!({"Err": "m"}),
            stderr: Some("INFO ready\n🦀".into()),
        },
        EventBody::TimedOut {
            call_id: id(),
            message: "m".into(),
            result: json!({"Err": "🦀"}),
            stderr: None,
        },
        EventBody::SessionEnded {
            status: "ok".into(),
            value: Some(Json::Null),
            r#type: Some("Unit".into()),
            error: None,
            calls: 3,
            steps: 9,
        },
    ]
}

#[test]
fn every_single_bit_flip_of_a_log_is_detected() {
    // Exhaustive over positions: one bit varying with the position, and
    // the ASCII case bit, so case-only changes (`\u001F` for `\u001f`,
    // `1E+300` for `1e+300`) and UTF-8 damage are covered.
    let text = memory_log(small_every_kind(), SESSION).to_jsonl();
    assert!(verify(&text).ok);
    let all = lines(&text);
    for (line, content) in all.iter().enumerate() {
        for at in 0..content.len() {
            for mask in [1u8 << ((at + line) % 8), 0x20] {
                let report = flip_and_verify(&text, line, at, mask, true);
                let problem = report.problem.as_ref();
                assert!(
                    !report.ok && problem.is_some_and(|p| p.line <= line + 1),
                    "flipping bits {mask:#04x} of byte {at} of line {} went unnoticed: {report:?}",
                    line + 1
                );
            }
        }
    }
}

/// An event of `kind` with every field set (`session_ended`'s optional
/// ones too). The match is exhaustive: a new kind does not compile here
/// until it has a sample, and then the tests below cover it.
fn sample(kind: EventKind) -> EventBody {
    let hash = || sha256_hex(b"x");
    match kind {
        EventKind::SessionStarted => EventBody::SessionStarted {
            lt_version: "0.1.0".into(),
            program: "()\n".into(),
            program_hash: hash(),
            profile: json!({"name": "support"}),
            registry_hash: sha256_hex(b""),
            limits: json!({"max_calls": 3}),
        },
        EventKind::Proposed => EventBody::Proposed {
            call_id: "n1".into(),
            tool: "lookup".into(),
            argument: json!({"id": "c1"}),
        },
        EventKind::Decided => EventBody::Decided {
            call_id: "n1".into(),
            decision: Decision::Allow,
            rule: "policy".into(),
            reason: "every rule passed".into(),
        },
        EventKind::Scheduled => EventBody::Scheduled {
            call_id: "n1".into(),
            tool: "lookup".into(),
            venue: "client".into(),
            idempotency_key: format!("{SESSION}:n1"),
        },
        EventKind::ClientDispatched => EventBody::ClientDispatched {
            call_id: "n1".into(),
        },
        EventKind::ClientRejected => EventBody::ClientRejected {
            report: json!("hello"),
            reason: "the line is not JSON".into(),
        },
        EventKind::ClientReported => EventBody::ClientReported {
            call_id: "n1".into(),
            report: json!({"type": "tool_result", "call_id": "n1", "ok": {"tier": "gold"}}),
        },
        EventKind::Completed => EventBody::Completed {
            call_id: "n1".into(),
            output: json!({"tier": "gold"}),
            result: json!({"Ok": {"tier": "gold"}}),
        },
        EventKind::Failed => EventBody::Failed {
            call_id: "n2".into(),
            failure: "crashed".into(),
            message: "tool lookup crashed".into(),
            result: json!({"Err": "tool lookup crashed"}),
            stderr: Some("INFO lookup: connected\n".into()),
        },
        EventKind::TimedOut => EventBody::TimedOut {
            call_id: "n3".into(),
            message: "tool lookup timed out after 2000 ms".into(),
            result: json!({"Err": "tool lookup timed out after 2000 ms"}),
            stderr: Some("INFO lookup: waiting for the database\n".into()),
        },
        EventKind::ApprovalRequested => EventBody::ApprovalRequested {
            approval_id: "n4".into(),
            tool: "refund".into(),
            argument: json!({"amount": 12}),
        },
        EventKind::ApprovalDecided => EventBody::ApprovalDecided {
            approval_id: "n4".into(),
            decision: Decision::Allow,
            by: "policy".into(),
            reason: "profile support approves refund".into(),
            token: json!("tok-1"),
        },
        EventKind::AnnotationStarted => EventBody::AnnotationStarted {
            annotation_id: "n5".into(),
            intent: "refund the duplicate charge".into(),
            hypothesis: json!("one charge is a duplicate"),
            notes: json!(null),
            parent: json!(null),
        },
        EventKind::AnnotationEnded => EventBody::AnnotationEnded {
            annotation_id: "n5".into(),
            calls: json!(["n6"]),
            outcome: "ok".into(),
        },
        EventKind::SessionResumed => EventBody::SessionResumed {
            lt_version: "0.1.0".into(),
            registry_hash: sha256_hex(b""),
            dropped_bytes: 12,
        },
        EventKind::SessionInterrupted => EventBody::SessionInterrupted {
            reason: "interrupted by SIGINT".into(),
            stopped: json!([{"call_id": "n2", "started": true}]),
        },
        EventKind::SessionEnded => EventBody::SessionEnded {
            status: "error".into(),
            value: Some(json!(null)),
            r#type: Some("Unit".into()),
            error: Some(
                json!({"kind": "step_limit", "message": "too many steps", "line": 1, "column": 1}),
            ),
            calls: 3,
            steps: 120,
        },
        EventKind::AgentStarted => EventBody::AgentStarted {
            lt_version: "0.1.0".into(),
            task: "refund c1".into(),
            declarations: "tool lookup: {id: String} -> {tier: String};".into(),
            system: "You write lt programs.".into(),
            model: json!({"provider": "stdio"}),
            settings: json!({"max_turns": 3}),
            profile: json!({"name": "support"}),
            registry_hash: sha256_hex(b""),
            limits: json!({"max_calls": 3}),
            tags: json!({"lookup": ["read"]}),
        },
        EventKind::TaskClassified => EventBody::TaskClassified {
            label: "refund".into(),
            matched: true,
            profile: json!({"name": "support"}),
            settings: json!({"max_turns": 3}),
        },
        EventKind::ModelRequested => EventBody::ModelRequested {
            request_id: "t1.a1".into(),
            messages: json!([{"role": "user", "content": "refund c1"}]),
            sent: 1,
            samples: 1,
        },
        EventKind::ModelRetried => EventBody::ModelRetried {
            request_id: "t1.a1".into(),
            attempt: 1,
            error: "rate_limited".into(),
            message: "429".into(),
            delay_ms: 1000,
        },
        EventKind::ModelReplied => EventBody::ModelReplied {
            request_id: "t1.a1".into(),
            texts: json!(["```lt\n()\n```"]),
            usage: json!({"input": 10, "output": 5}),
        },
        EventKind::ModelFailed => EventBody::ModelFailed {
            request_id: "t2.a1".into(),
            error: "auth".into(),
            message: "401".into(),
            attempts: 1,
        },
        EventKind::ProgramChecked => EventBody::ProgramChecked {
            request_id: "t1.a1".into(),
            sample: 0,
            status: "ok".into(),
            program: json!("()"),
            diagnostics: json!([]),
        },
        EventKind::ProgramAccepted => EventBody::ProgramAccepted {
            request_id: "t1.a1".into(),
            sample: 0,
            votes: 1,
            program_hash: hash(),
        },
        EventKind::AgentEnded => EventBody::AgentEnded {
            status: "answered".into(),
            answer: json!("done"),
            reason: "the model answered".into(),
            turns: 1,
            requests: 2,
        },
    }
}

/// One event of every kind in an order that verifies: an agent's log
/// (`agent_started` first, `agent_ended` last) with one run inside.
fn all_kinds_in_order() -> Vec<EventBody> {
    let (first, last) = (EventKind::AgentStarted, EventKind::AgentEnded);
    std::iter::once(first)
        .chain(
            EventKind::ALL
                .into_iter()
                .filter(|k| ![first, last].contains(k)),
        )
        .chain([last])
        .map(sample)
        .collect()
}

#[test]
fn every_kind_is_written_read_back_verified_and_shown() {
    let bodies = all_kinds_in_order();
    assert_eq!(bodies.len(), KINDS.len());
    for (body, kind) in bodies.iter().zip(bodies.iter().map(EventBody::event_kind)) {
        assert_eq!(body.kind(), kind.name());
        assert_eq!(EventKind::from_name(body.kind()), Some(kind));
    }
    let path = temp_path("every-kind");
    let mut writer = LogWriter::create(&path, SESSION)
        .expect("create")
        .with_clock(fixed_clock);
    for body in &bodies {
        writer.append(body.clone()).expect("append");
    }
    drop(writer);
    let text = std::fs::read_to_string(&path).expect("read");
    let report = verify(&text);
    assert!(report.ok, "{report}");
    assert_eq!(report.events, bodies.len());
    let events = read_log(&text).expect("reads");
    assert_eq!(
        events.iter().map(|e| e.body.clone()).collect::<Vec<_>>(),
        bodies
    );
    let shown = timeline(&events);
    assert_eq!(
        shown.lines().filter(|l| l.starts_with('#')).count(),
        bodies.len(),
        "{shown}"
    );
    assert!(shown.contains("agent ended answered"), "{shown}");

    // `lt log verify` and `lt log show` on it.
    let lt = env!("CARGO_BIN_EXE_lt");
    let run = |args: &[&str]| {
        let out = std::process::Command::new(lt)
            .args(args)
            .arg(&path)
            .output()
            .expect("runs lt");
        let text = String::from_utf8_lossy(&out.stdout).into_owned()
            + &String::from_utf8_lossy(&out.stderr);
        (out.status.success(), text)
    };
    let (ok, said) = run(&["log", "verify"]);
    assert!(ok, "{said}");
    assert!(
        said.contains(&format!("ok: {} events", bodies.len())),
        "{said}"
    );
    let (ok, said) = run(&["log", "show"]);
    let _ = std::fs::remove_file(&path);
    assert!(ok, "{said}");
    assert!(
        said.contains("approval_decided n4 allow by policy"),
        "{said}"
    );
}

#[test]
fn a_missing_field_of_any_kind_is_named_with_its_kind() {
    let text = memory_log(all_kinds_in_order(), SESSION).to_jsonl();
    let all = lines(&text);
    for (i, line) in all.iter().enumerate() {
        let event = parse(line);
        let kind = event["kind"].as_str().expect("kind").to_string();
        let own: Vec<String> = event
            .as_object()
            .expect("object")
            .keys()
            .filter(|k| !["hash", "kind", "prev", "seq", "session", "ts"].contains(&k.as_str()))
            .cloned()
            .collect();
        for field in own {
            if kind == "session_ended" && ["value", "type", "error"].contains(&field.as_str())
                || ["failed", "timed_out"].contains(&kind.as_str()) && field == "stderr"
            {
                continue; // optional
            }
            let mut edited = event.clone();
            edited.as_object_mut().expect("object").remove(&field);
            let mut l = all.clone();
            l[i] = rehash(edited);
            let message = assert_problem(&verify(&join(&l)), i + 1, ProblemKind::Malformed);
            let article = if kind.starts_with(['a', 'e', 'i', 'o', 'u']) {
                "an"
            } else {
                "a"
            };
            assert!(
                message.starts_with(&format!(
                    "line {}: {article} `{kind}` event needs the field `{field}` (",
                    i + 1
                )),
                "{message}"
            );
        }
    }
}

/// The rows of the `| kind | fields | when |` tables of
/// `docs/log-format.md`: each kind and the fields it lists (the backquoted
/// names outside parentheses), in the order of the document.
fn documented_kinds() -> Vec<(String, Vec<String>)> {
    let text =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/log-format.md"))
            .expect("docs/log-format.md");
    let mut out = Vec::new();
    for row in doc_tables::rows(&text, "| kind | fields | when |") {
        let (Some(kind), Some(fields)) = (row.first(), row.get(1)) else {
            panic!("a row of a kinds table without two cells: {row:?}");
        };
        let kind = kind.trim_matches('`').to_string();
        // The top level of the fields cell: parentheses and their
        // contents left out.
        let mut depth = 0usize;
        let mut top = String::new();
        for c in fields.chars() {
            match c {
                '(' => depth += 1,
                ')' => depth = depth.saturating_sub(1),
                c if depth == 0 => top.push(c),
                _ => {}
            }
        }
        let names = top
            .split('`')
            .skip(1)
            .step_by(2)
            .map(str::to_string)
            .collect();
        out.push((kind, names));
    }
    out
}

#[test]
fn every_kind_is_documented_with_exactly_its_fields() {
    let documented = documented_kinds();
    let kinds: Vec<&str> = documented.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(
        kinds, KINDS,
        "docs/log-format.md's kinds tables and the kinds of src/log/event.rs differ"
    );
    for (kind, fields) in documented {
        let Some(kind) = EventKind::from_name(&kind) else {
            continue;
        };
        let mut documented: Vec<String> = fields;
        documented.sort();
        let actual: Vec<String> = sample(kind).to_json_fields().keys().cloned().collect();
        assert_eq!(
            documented, actual,
            "the fields of `{kind}` in docs/log-format.md"
        );
    }
}

/// Every kind of verification problem, numbered by an exhaustive match
/// (a new `ProblemKind` does not compile here until it is listed).
fn problem_kinds() -> Vec<ProblemKind> {
    use ProblemKind as P;
    let all = [
        P::Empty,
        P::NotJson,
        P::Malformed,
        P::Seq,
        P::Session,
        P::Prev,
        P::Hash,
        P::NotCanonical,
        P::Order,
    ];
    let number = |k: P| match k {
        P::Empty => 0,
        P::NotJson => 1,
        P::Malformed => 2,
        P::Seq => 3,
        P::Session => 4,
        P::Prev => 5,
        P::Hash => 6,
        P::NotCanonical => 7,
        P::Order => 8,
    };
    let numbers: Vec<usize> = all.iter().map(|&k| number(k)).collect();
    assert_eq!(
        numbers,
        (0..all.len()).collect::<Vec<_>>(),
        "list every kind once"
    );
    all.to_vec()
}

#[test]
fn every_problem_kind_is_documented() {
    let text =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/log-format.md"))
            .expect("docs/log-format.md");
    let table: Vec<String> = text
        .lines()
        .skip_while(|l| !l.starts_with("| order | kind | the check |"))
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .filter_map(|l| l.split('`').nth(1).map(str::to_string))
        .collect();
    let mut documented = vec!["empty".to_string()];
    documented.extend(table);
    assert!(
        text.contains("A file with no complete line is `empty`."),
        "docs/log-format.md names the `empty` problem"
    );
    let names: Vec<String> = problem_kinds()
        .into_iter()
        .map(|k| k.as_str().to_string())
        .collect();
    assert_eq!(
        documented, names,
        "docs/log-format.md's verification table and ProblemKind"
    );
}
