//! The channel through real pipes and misbehaving writers: reports, late
//! duplicates, a client that does not read, the end of the input before
//! and during a call, and the λ-Tool wire staying in step.

use super::*;
use crate::runtime::host::CallId;
use serde_json::json;
use std::io::BufRead;
use std::sync::Mutex;

/// A writer that never finishes a write (a client that does not read),
/// or fails at once.
struct Stuck(Option<mpsc::Receiver<()>>);

impl Write for Stuck {
    fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
        match &self.0 {
            Some(never) => {
                let _ = never.recv();
                Ok(0)
            }
            None => Err(std::io::Error::other("pipe closed")),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A writer into shared memory, each `write` first waiting `pause`.
#[derive(Clone)]
struct Slow {
    out: Arc<Mutex<Vec<u8>>>,
    pause: Duration,
}

impl Write for Slow {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        std::thread::sleep(self.pause);
        self.out.lock().expect("lock").extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn ask(
    channel: &mut ClientChannel,
    node: u32,
    wait: Duration,
    events: &mut Vec<EventBody>,
) -> Outcome {
    let id = CallId { node, path: vec![] };
    let request = CallRequest {
        id: &id,
        tool: "t",
        arg: json!(node),
        time_left: Some(wait),
        idempotency_key: None,
    };
    let mut record = |e: EventBody| events.push(e);
    channel.call(request, Some(&mut record))
}

/// A call that waits at most 500 ms (ample for the writer thread to begin
/// its line).
fn call(channel: &mut ClientChannel, node: u32) -> Outcome {
    ask(channel, node, Duration::from_millis(500), &mut Vec::new())
}

fn kinds(events: &[EventBody]) -> Vec<&'static str> {
    events.iter().map(EventBody::kind).collect()
}

#[test]
fn a_client_that_does_not_read_times_out_and_is_gone() {
    let (keep, never) = mpsc::channel();
    let (lt_in, _input) = std::io::pipe().expect("pipe");
    let mut channel = ClientChannel::new(Stuck(Some(never)), lt_in);
    let started = Instant::now();
    let first = call(&mut channel, 1).expect_err("times out");
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(first.kind, FailureKind::TimedOut);
    assert!(first
        .message
        .contains("writing call n1 to the client, which did not read it"));
    let second = call(&mut channel, 2).expect_err("fails at once");
    assert_eq!(second.kind, FailureKind::Unavailable);
    assert!(
        second.message.contains("stopped reading") && second.message.contains("n2 was not sent"),
        "{}",
        second.message
    );
    // Dropping the channel gives up on the stuck line after a bounded wait.
    let dropping = Instant::now();
    drop(channel);
    let waited = dropping.elapsed();
    assert!(
        waited >= FLUSH_STALL && waited < FLUSH_STALL + Duration::from_secs(3),
        "{waited:?}"
    );
    drop(keep);
}

#[test]
fn a_client_whose_output_cannot_be_written_is_gone() {
    let (lt_in, _input) = std::io::pipe().expect("pipe");
    let mut channel = ClientChannel::new(Stuck(None), lt_in);
    let first = call(&mut channel, 1).expect_err("fails");
    assert_eq!(first.kind, FailureKind::Unavailable);
    assert_eq!(
        first.message,
        "tool t: the client's output could not be written (pipe closed) before reporting call n1"
    );
    assert_eq!(
        call(&mut channel, 2).expect_err("fails").kind,
        FailureKind::Unavailable
    );
}

#[test]
fn a_report_through_pipes_and_a_late_duplicate() {
    let (client_in, lt_out) = std::io::pipe().expect("pipe");
    let (lt_in, mut client_out) = std::io::pipe().expect("pipe");
    let mut channel = ClientChannel::new(lt_out, lt_in);
    let client = std::thread::spawn(move || {
        let mut calls = std::io::BufReader::new(client_in);
        let mut seen = Vec::new();
        for _ in 0..2 {
            let mut line = String::new();
            calls.read_line(&mut line).expect("read");
            let call: Json = serde_json::from_str(&line).expect("json");
            let id = call["call_id"].as_str().expect("id").to_string();
            let report = format!(r#"{{"type":"tool_result","call_id":"{id}","ok":7}}"#);
            writeln!(client_out, "{report}").expect("write");
            writeln!(client_out, "{report}").expect("write");
            seen.push(call);
        }
        seen
    });
    let mut events = Vec::new();
    for node in [1, 2] {
        let id = CallId { node, path: vec![] };
        let request = CallRequest {
            id: &id,
            tool: "t",
            arg: json!({"a": node}),
            time_left: Some(Duration::from_secs(10)),
            idempotency_key: Some("k"),
        };
        let mut record = |e: EventBody| events.push(e.kind());
        assert_eq!(channel.call(request, Some(&mut record)), Ok(json!(7)));
    }
    let seen = client.join().expect("client thread");
    assert_eq!(
        seen[0],
        json!({"type": "tool_call", "call_id": "n1", "tool": "t", "argument": {"a": 1}, "idempotency_key": "k"})
    );
    // The duplicate of n1's report arrives while n2 is waited for
    // (before or after the writer's notice of n2's line).
    assert_eq!(events[..2], ["client_dispatched", "client_reported"]);
    let mut second = events[2..].to_vec();
    assert_eq!(second.pop(), Some("client_reported"));
    second.sort_unstable();
    assert_eq!(second, ["client_dispatched", "client_rejected"]);
}

#[test]
fn the_end_of_the_input_takes_effect_after_the_lines_before_it() {
    let out = Arc::new(Mutex::new(Vec::new()));
    let writer = Slow {
        out: Arc::clone(&out),
        pause: Duration::ZERO,
    };
    let (lt_in, mut client_out) = std::io::pipe().expect("pipe");
    writeln!(client_out, "hello").expect("write");
    writeln!(
        client_out,
        r#"{{"type":"tool_result","call_id":"n1","ok":1}}"#
    )
    .expect("write");
    drop(client_out);
    let mut channel = ClientChannel::new(writer, lt_in);
    let waited = Instant::now();
    while !channel.gate.eof_seen() {
        assert!(waited.elapsed() < Duration::from_secs(10), "no end seen");
        std::thread::sleep(Duration::from_millis(5));
    }
    // Two lines are still queued: the end is not in effect yet.
    assert!(!channel.gate.input_ended());
    let mut events = Vec::new();
    let first = ask(&mut channel, 1, Duration::from_secs(5), &mut events).expect("answered");
    assert_eq!(first, json!(1));
    let kinds_of_first = kinds(&events);
    assert_eq!(kinds_of_first.first(), Some(&"client_rejected"));
    assert_eq!(kinds_of_first.last(), Some(&"client_reported"));
    // Every line before the end was taken: now the end is in effect.
    assert!(channel.gate.input_ended());
    events.clear();
    let second = ask(&mut channel, 2, Duration::from_secs(5), &mut events).expect_err("fails");
    assert_eq!(second.kind, FailureKind::Unavailable);
    assert_eq!(
        second.message,
        "tool t: the client closed its input, so call n2 was not sent to the client"
    );
    assert!(events.is_empty(), "{events:?}");
    let third = ask(&mut channel, 3, Duration::from_secs(5), &mut events).expect_err("fails");
    assert_eq!(
        third.message,
        "tool t: the client closed its input (before call n2 of t), so call n3 was not sent to the client"
    );
    drop(channel);
    let out = out.lock().expect("lock");
    assert!(
        !String::from_utf8_lossy(&out).contains("n2"),
        "no line for n2"
    );
}

/// A writer that tells when a write begins, then waits for a go-ahead.
struct Paused {
    began: mpsc::Sender<()>,
    go: mpsc::Receiver<()>,
    out: Arc<Mutex<Vec<u8>>>,
}

impl Write for Paused {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        let _ = self.began.send(());
        let _ = self.go.recv();
        self.out.lock().expect("lock").extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn a_line_written_as_the_input_ends_is_narrated_before_the_failure() {
    let (began_tx, began) = mpsc::channel();
    let (go, go_rx) = mpsc::channel();
    let out = Arc::new(Mutex::new(Vec::new()));
    let writer = Paused {
        began: began_tx,
        go: go_rx,
        out: Arc::clone(&out),
    };
    let (lt_in, client_out) = std::io::pipe().expect("pipe");
    let mut channel = ClientChannel::new(writer, lt_in);
    let client = std::thread::spawn(move || {
        // The line has begun: the input ends, then the write completes.
        began.recv().expect("the write began");
        drop(client_out);
        std::thread::sleep(Duration::from_millis(100));
        for _ in 0..64 {
            let _ = go.send(());
        }
    });
    let mut events = Vec::new();
    let failure = ask(&mut channel, 1, Duration::from_secs(10), &mut events).expect_err("fails");
    client.join().expect("client thread");
    assert_eq!(
        failure.message,
        "tool t: the client closed its input before reporting call n1"
    );
    assert_eq!(kinds(&events), ["client_dispatched"]);
    assert!(out.lock().expect("lock").ends_with(b"\n"), "the whole line");
}

#[test]
fn dropping_the_channel_waits_for_a_slow_reader_to_take_the_line() {
    let out = Arc::new(Mutex::new(Vec::new()));
    // Five chunks of 64 KiB, 300 ms each: the call gives up after 400 ms,
    // in the middle of its line.
    let writer = Slow {
        out: Arc::clone(&out),
        pause: Duration::from_millis(300),
    };
    let (lt_in, _input) = std::io::pipe().expect("pipe");
    let mut channel = ClientChannel::new(writer, lt_in);
    let id = CallId {
        node: 1,
        path: vec![],
    };
    let request = CallRequest {
        id: &id,
        tool: "t",
        arg: json!("x".repeat(300 * 1024)),
        time_left: Some(Duration::from_millis(400)),
        idempotency_key: None,
    };
    let failure = channel.call(request, None).expect_err("times out");
    assert!(
        failure.message.contains("writing call n1"),
        "{}",
        failure.message
    );
    drop(channel);
    let out = out.lock().expect("lock");
    assert!(
        out.len() > 300 * 1024 && out.ends_with(b"\n"),
        "{}",
        out.len()
    );
}

#[test]
fn the_lambda_tool_wire_answers_calls_in_step() {
    let (client_in, lt_out) = std::io::pipe().expect("pipe");
    let (lt_in, mut client_out) = std::io::pipe().expect("pipe");
    // Lines over 64 bytes are too long.
    let mut channel = ClientChannel::with_cap(lt_out, lt_in, 64).with_wire(Wire::LambdaTool);
    let answers = [
        vec!["".to_string(), r#"{"tool_result":{"ok":7}}"#.to_string()],
        vec![r#"{"tool_result":{"error":"offline"}}"#.to_string()],
        vec!["not json".to_string()],
        vec![format!(
            r#"{{"tool_result":{{"ok":"{}"}}}}"#,
            "x".repeat(100)
        )],
        vec![r#"{"tool_result":{"ok":8}}"#.to_string()],
    ];
    let client = std::thread::spawn(move || {
        let mut calls = std::io::BufReader::new(client_in);
        let mut seen = Vec::new();
        for lines in answers {
            let mut line = String::new();
            calls.read_line(&mut line).expect("read");
            seen.push(line);
            for l in lines {
                writeln!(client_out, "{l}").expect("write");
            }
        }
        seen
    });
    let mut outcomes = Vec::new();
    let mut events = Vec::new();
    for node in 1..=5 {
        let id = CallId { node, path: vec![] };
        let request = CallRequest {
            id: &id,
            tool: "t",
            arg: json!({"n": node}),
            time_left: Some(Duration::from_secs(10)),
            idempotency_key: Some("k"),
        };
        let mut record = |e: EventBody| events.push(e.kind());
        outcomes.push(channel.call(request, Some(&mut record)));
    }
    let seen = client.join().expect("client thread");
    assert_eq!(
        seen[0],
        "{\"tool_call\":{\"tool\":\"t\",\"argument\":{\"n\":1}}}\n"
    );
    assert_eq!(outcomes[0], Ok(json!(7)));
    // The host's message, as it wrote it.
    assert_eq!(
        outcomes[1],
        Err(ToolFailure {
            stderr: None,
            kind: FailureKind::Failed,
            message: "offline".into()
        })
    );
    for bad in &outcomes[2..4] {
        let f = bad.as_ref().expect_err("a malformed answer fails its call");
        assert_eq!(f.kind, FailureKind::BadOutput);
        assert!(
            f.message
                .starts_with("tool t: the host's answer is not a tool_result: "),
            "{}",
            f.message
        );
    }
    // Still in step: the fifth answer answers the fifth call.
    assert_eq!(outcomes[4], Ok(json!(8)));
    assert_eq!(
        events.iter().filter(|k| **k == "client_rejected").count(),
        3,
        "the blank line and the two malformed answers: {events:?}"
    );
    assert_eq!(
        events.iter().filter(|k| **k == "client_dispatched").count(),
        5
    );
}

#[test]
fn a_late_lambda_tool_answer_is_not_taken_for_the_next_call() {
    let (client_in, lt_out) = std::io::pipe().expect("pipe");
    let (lt_in, mut client_out) = std::io::pipe().expect("pipe");
    let mut channel = ClientChannel::new(lt_out, lt_in).with_wire(Wire::LambdaTool);
    let (timed_out_tx, timed_out) = mpsc::channel::<()>();
    let client = std::thread::spawn(move || {
        let mut calls = std::io::BufReader::new(client_in);
        let mut line = String::new();
        calls.read_line(&mut line).expect("read call 1");
        // The host answers call 1 only after lt gave up on it, then
        // reads and answers call 2.
        timed_out.recv().expect("call 1 timed out");
        writeln!(client_out, r#"{{"tool_result":{{"ok":"late"}}}}"#).expect("write");
        line.clear();
        calls.read_line(&mut line).expect("read call 2");
        writeln!(client_out, r#"{{"tool_result":{{"ok":"second"}}}}"#).expect("write");
    });
    let mut events = Vec::new();
    let first =
        ask(&mut channel, 1, Duration::from_millis(200), &mut events).expect_err("times out");
    assert_eq!(first.kind, FailureKind::TimedOut);
    timed_out_tx.send(()).expect("tell the host");
    assert_eq!(
        ask(&mut channel, 2, Duration::from_secs(10), &mut events),
        Ok(json!("second"))
    );
    client.join().expect("client thread");
    let rejected: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            EventBody::ClientRejected { reason, .. } => Some(reason.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(
        rejected,
        ["the late answer to call n1, which timed out before it came (one line answers one call); skipped"]
    );
}
