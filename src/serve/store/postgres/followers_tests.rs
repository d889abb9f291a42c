//! Tests of the `followers` table (schema version 5) against a real
//! server (`LT_TEST_POSTGRES_URL`, skipped when unset): a batch sends its
//! `lt_events` notice only for sessions a stream on another worker
//! follows, and a worker never registers a session it writes itself.

use super::super::{Created, NewSession, ServerStore};
use super::tests::{call, database, id, open, started};
use crate::log::EventStore;
use postgres::fallible_iterator::FallibleIterator;
use postgres::{Client, NoTls};
use serde_json::json;
use std::time::Duration;

/// The notices `c` (listening) gets within `wait`: their payloads.
fn notices(c: &mut Client, wait: Duration) -> Vec<String> {
    let mut got = Vec::new();
    let mut n = c.notifications();
    let mut it = n.timeout_iter(wait);
    while let Ok(Some(note)) = it.next() {
        got.push(note.payload().to_string());
    }
    got
}

/// The worker ids with a follower row of `session`.
fn followers(c: &mut Client, session: &str) -> Vec<String> {
    c.query(
        "SELECT worker FROM followers WHERE session = $1 ORDER BY worker",
        &[&session],
    )
    .expect("followers")
    .iter()
    .map(|r| r.get(0))
    .collect()
}

#[test]
fn pg_a_batch_notifies_only_when_a_stream_elsewhere_follows_its_session() {
    let Some(url) = database("pg_followers") else {
        return;
    };
    let (a, b) = (open(&url), open(&url));
    let mut listener = Client::connect(&url, NoTls).expect("connect");
    listener.batch_execute("LISTEN lt_events").expect("listen");
    let mut c = Client::connect(&url, NoTls).expect("connect");
    let new = NewSession {
        id: id(1),
        tenant: "acme".into(),
        profile: "support".into(),
        request: json!({"program": "1"}),
        idempotency_key: None,
        created_ms: 1000,
    };
    assert_eq!(a.create_session(&new).expect("create"), Created::New);
    let mut sink = a.create(&id(1)).expect("create log");
    sink.append(started()).expect("append");
    a.flush();
    // Nobody follows it: A's batch sends no notice.
    assert_eq!(
        notices(&mut listener, Duration::from_millis(300)),
        [] as [String; 0]
    );
    // A stream on A follows its own session: told in-process, no row.
    a.follow(&id(1), true);
    assert!(followers(&mut c, &id(1)).is_empty());
    // A stream on B follows it: B's row, and A's next batch notifies.
    b.follow(&id(1), true);
    assert_eq!(followers(&mut c, &id(1)), [b.worker().to_string()]);
    for body in call(1) {
        sink.append(body).expect("append");
    }
    a.flush();
    assert_eq!(notices(&mut listener, Duration::from_secs(5))[..1], [id(1)]);
    // B's stream ends: its row goes, and so do the notices.
    b.follow(&id(1), false);
    assert!(followers(&mut c, &id(1)).is_empty());
    for body in call(2) {
        sink.append(body).expect("append");
    }
    a.flush();
    assert_eq!(
        notices(&mut listener, Duration::from_millis(300)),
        [] as [String; 0]
    );
}
