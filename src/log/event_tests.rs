//! Tests of the event model (`event.rs`): every kind's fields and their
//! reading back, the line encoder against the reference serialisation,
//! canonical bytes and hashes, `null` apart from no value.

use super::*;
use serde_json::json;

#[test]
fn seal_encoding_matches_the_two_step_serialisation() {
    let mut e = Event {
        seq: 3,
        ts: "2026-11-29T21:04:05.123Z".into(),
        session: "0123456789abcdef0123456789abcdef".into(),
        prev: "0".repeat(64),
        hash: String::new(),
        body: EventBody::Completed {
            call_id: "n7[n3:2]".into(),
            output: json!({"z": [1, {"b": "é\u{1}\"", "a": null}], "a": 1.5}),
            result: json!({"Ok": {"z": []}}),
        },
    };
    let (hash, line) = e.seal_encoding();
    assert_eq!(hash, e.compute_hash());
    e.hash = hash;
    assert_eq!(String::from_utf8(line).expect("utf8"), e.to_line());
}

/// One body of every kind (`session_ended` in each of its shapes),
/// with strings that need escaping.
fn every_kind() -> Vec<EventBody> {
    let odd = "quote \" back \\ nl \n ctl \u{1} é λ /";
    let deep = json!({"z": [1, {"b": odd, "a": null}], "a": 1.5, "n": -0.0});
    let mut bodies = vec![
        EventBody::SessionStarted {
            lt_version: "0.1.0".into(),
            program: format!("tool t: Unit -> Unit;\n{odd}"),
            program_hash: ZERO_HASH.into(),
            profile: deep.clone(),
            registry_hash: ZERO_HASH.into(),
            limits: json!({"max_calls": 3}),
        },
        EventBody::Proposed {
            call_id: "n7[n3:2]".into(),
            tool: "t".into(),
            argument: deep.clone(),
        },
        EventBody::Decided {
            call_id: odd.into(),
            decision: Decision::Deny,
            rule: "denylist".into(),
            reason: odd.into(),
        },
        EventBody::Scheduled {
            call_id: "n1".into(),
            tool: "t".into(),
            venue: "server".into(),
            idempotency_key: "k".into(),
        },
        EventBody::ClientDispatched {
            call_id: "n1".into(),
        },
        EventBody::ClientReported {
            call_id: "n1".into(),
            report: deep.clone(),
        },
        EventBody::ClientRejected {
            report: json!(odd),
            reason: odd.into(),
        },
        EventBody::SessionResumed {
            lt_version: "0.1.0".into(),
            registry_hash: ZERO_HASH.into(),
            dropped_bytes: 17,
        },
        EventBody::SessionInterrupted {
            reason: odd.into(),
            stopped: json!([{"call_id": "n1", "started": false}]),
        },
        EventBody::Completed {
            call_id: "n1".into(),
            output: deep.clone(),
            result: json!({"Ok": deep}),
        },
        EventBody::Failed {
            call_id: "n1".into(),
            failure: "crashed".into(),
            message: odd.into(),
            result: json!({"Err": odd}),
            stderr: Some(odd.into()),
        },
        EventBody::TimedOut {
            call_id: "n1".into(),
            message: odd.into(),
            result: json!({"Err": odd}),
            stderr: None,
        },
        EventBody::ApprovalRequested {
            approval_id: "n3".into(),
            tool: "t".into(),
            argument: deep.clone(),
        },
        EventBody::ApprovalDecided {
            approval_id: "n3".into(),
            decision: Decision::Allow,
            by: "policy".into(),
            reason: odd.into(),
            token: json!(odd),
        },
        EventBody::AnnotationStarted {
            annotation_id: "n4[n2:1]".into(),
            intent: odd.into(),
            hypothesis: json!(odd),
            notes: json!(null),
            parent: json!("n4"),
        },
        EventBody::AnnotationEnded {
            annotation_id: "n4[n2:1]".into(),
            calls: json!(["n5", "n6"]),
            outcome: "ok".into(),
        },
    ];
    bodies.extend([
        EventBody::AgentStarted {
            lt_version: "0.1.0".into(),
            task: odd.into(),
            declarations: "tool t: Unit -> Unit;".into(),
            system: odd.into(),
            model: json!({"provider": "openai", "model": "m"}),
            settings: deep.clone(),
            profile: deep.clone(),
            registry_hash: ZERO_HASH.into(),
            limits: json!({"max_calls": 3}),
            tags: json!({"t": ["verify"]}),
        },
        EventBody::TaskClassified {
            label: "refund".into(),
            matched: true,
            profile: deep.clone(),
            settings: deep.clone(),
        },
        EventBody::ModelRequested {
            request_id: "t1.a1".into(),
            messages: json!([{"role": "user", "content": odd}]),
            sent: 1,
            samples: 3,
        },
        EventBody::ModelRetried {
            request_id: "t1.a1".into(),
            attempt: 1,
            error: "rate_limited".into(),
            message: odd.into(),
            delay_ms: 1000,
        },
        EventBody::ModelReplied {
            request_id: "t1.a1".into(),
            texts: json!([odd]),
            usage: json!(null),
        },
        EventBody::ModelFailed {
            request_id: "t1.a1".into(),
            error: "auth".into(),
            message: odd.into(),
            attempts: 1,
        },
        EventBody::ProgramChecked {
            request_id: "t1.a1".into(),
            sample: 0,
            status: "rejected".into(),
            program: json!(odd),
            diagnostics: json!([{"code": "E0202", "line": 1}]),
        },
        EventBody::ProgramAccepted {
            request_id: "t1.a2".into(),
            sample: 1,
            votes: 2,
            program_hash: ZERO_HASH.into(),
        },
        EventBody::AgentEnded {
            status: "answered".into(),
            answer: json!(odd),
            reason: odd.into(),
            turns: 1,
            requests: 3,
        },
    ]);
    for shape in 0..8u8 {
        bodies.push(EventBody::SessionEnded {
            status: "ok".into(),
            value: (shape & 1 != 0).then(|| json!([odd])),
            r#type: (shape & 2 != 0).then(|| "List String".into()),
            error: (shape & 4 != 0).then(|| json!({"kind": "x", "line": 1})),
            calls: 2,
            steps: u64::MAX,
        });
    }
    bodies
}

#[test]
fn the_kinds_are_one_list() {
    // KINDS, EventKind::ALL, name and from_name agree, in one order,
    // and no two kinds share a name.
    let names: Vec<&str> = EventKind::ALL.iter().map(|k| k.name()).collect();
    assert_eq!(names, KINDS);
    for (i, kind) in EventKind::ALL.into_iter().enumerate() {
        assert_eq!(kind as usize, i, "{kind}");
        assert_eq!(EventKind::from_name(kind.name()), Some(kind));
    }
    let distinct: std::collections::BTreeSet<&str> = KINDS.into_iter().collect();
    assert_eq!(distinct.len(), KINDS.len(), "two kinds share a name");
    assert_eq!(EventKind::from_name("approved"), None);
    // The test's bodies cover every kind (each body's kind is its
    // variant's).
    let covered: std::collections::BTreeSet<EventKind> =
        every_kind().iter().map(EventBody::event_kind).collect();
    let all: std::collections::BTreeSet<EventKind> = EventKind::ALL.into_iter().collect();
    assert_eq!(covered, all, "a kind is missing from every_kind()");
}

#[test]
fn every_kind_reads_back_as_written() {
    for body in every_kind() {
        let mut event = Event {
            seq: 1,
            ts: "2026-11-29T21:04:05.123Z".into(),
            session: "0123456789abcdef0123456789abcdef".into(),
            prev: ZERO_HASH.into(),
            hash: String::new(),
            body,
        };
        event.hash = event.compute_hash();
        let back = Event::from_value(event.to_value());
        assert_eq!(back.as_ref(), Ok(&event), "{}", event.kind());
        // Each field missing is named with the kind.
        for key in event.body.to_json_fields().keys() {
            let mut value = event.to_value();
            if let Json::Object(m) = &mut value {
                m.remove(key);
            }
            if let Err(message) = Event::from_value(value) {
                assert!(
                    message.contains(&format!("`{}` event needs the field `{key}`", event.kind())),
                    "{message}"
                );
            }
        }
    }
}

#[test]
fn every_kind_lists_its_fields_sorted_and_apart_from_the_common_ones() {
    let kinds: std::collections::BTreeSet<&str> =
        every_kind().iter().map(EventBody::kind).collect();
    assert_eq!(kinds.len(), KINDS.len(), "a kind is missing from the test");
    let common = ["hash", "kind", "prev", "seq", "session", "ts"];
    for body in every_kind() {
        let fields = body.fields();
        let keys: Vec<&str> = fields.as_slice().iter().map(|(k, _)| *k).collect();
        assert!(
            keys.windows(2).all(|w| w[0] < w[1]),
            "{}: fields not sorted: {keys:?}",
            body.kind()
        );
        assert!(keys.iter().all(|k| !common.contains(k)), "{keys:?}");
        assert!(keys.len() + common.len() <= MAX_FIELDS, "{keys:?}");
    }
}

#[test]
fn the_line_encoder_matches_the_reference_serialisation_for_every_kind() {
    for (seq, body) in every_kind().into_iter().enumerate() {
        let mut event = Event {
            seq: seq as u64,
            ts: "2026-11-29T21:04:05.123Z".into(),
            session: "0123456789abcdef0123456789abcdef".into(),
            prev: sha256_hex(&[seq as u8]),
            hash: String::new(),
            body,
        };
        // Encoded after other text, as the writer does.
        let mut out = b"earlier line\n".to_vec();
        let hash = encode_line(
            &mut out,
            event.seq,
            &event.ts,
            &event.session,
            &event.prev,
            &event.body,
        );
        assert_eq!(hash.to_string(), event.compute_hash(), "{}", event.kind());
        event.hash = hash.to_string();
        let line = String::from_utf8(out).expect("UTF-8");
        assert_eq!(line, format!("earlier line\n{}", event.to_line()));
        assert_eq!(
            sha256_hex(&canonical_bytes(&{
                let mut v = event.to_value();
                if let Json::Object(m) = &mut v {
                    m.remove("hash");
                }
                v
            })),
            event.hash
        );
    }
}

#[test]
fn canonical_bytes_sort_keys_at_every_level() {
    // Built in reverse order: insertion order would show up as-is.
    let mut inner = Map::new();
    inner.insert("zeta".into(), json!(1));
    inner.insert("Zeta".into(), json!(2));
    inner.insert("alpha".into(), json!([{"y": 1, "b": 2}]));
    let mut outer = Map::new();
    outer.insert("z".into(), Json::Object(inner));
    outer.insert("é".into(), json!("x"));
    outer.insert("a".into(), json!(null));
    let bytes = canonical_bytes(&Json::Object(outer));
    assert_eq!(
        String::from_utf8_lossy(&bytes),
        r#"{"a":null,"z":{"Zeta":2,"alpha":[{"b":2,"y":1}],"zeta":1},"é":"x"}"#,
        "serde_json's Map no longer sorts its keys: was its `preserve_order` \
         feature enabled? Every log hash depends on sorted keys."
    );
}

#[test]
fn sha256_of_the_empty_string() {
    assert_eq!(
        sha256_hex(b""),
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    );
}

fn ended(value: Option<Json>) -> Event {
    Event {
        seq: 3,
        ts: "2026-11-29T21:04:05.123Z".into(),
        session: "0123456789abcdef0123456789abcdef".into(),
        prev: ZERO_HASH.into(),
        hash: ZERO_HASH.into(),
        body: EventBody::SessionEnded {
            status: "ok".into(),
            value,
            r#type: Some("Unit".into()),
            error: None,
            calls: 0,
            steps: 7,
        },
    }
}

#[test]
fn event_serialisation_matches_value_canonical_form() {
    let event = ended(Some(json!({"b": [1.5, -2], "a": "\u{1}\"\\"})));
    let value = event.to_value();
    assert_eq!(event.to_line().as_bytes(), canonical_bytes(&value));
    let mut without = value.clone();
    if let Json::Object(m) = &mut without {
        m.remove("hash");
    }
    assert_eq!(event.canonical_bytes(), canonical_bytes(&without));
    assert_eq!(Event::from_value(value), Ok(event));
}

#[test]
fn null_value_is_kept_apart_from_no_value() {
    for value in [None, Some(Json::Null)] {
        let event = ended(value);
        let back = Event::from_value(event.to_value()).expect("reads");
        assert_eq!(back, event);
    }
    assert!(ended(None).to_line().contains("\"value\"").eq(&false));
    assert!(ended(Some(Json::Null)).to_line().contains("\"value\":null"));
}
