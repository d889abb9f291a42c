//! The sessions both stores' tests of the tool index (`session_tools`)
//! write: calls of tools whose names are in each other's text, a tool's
//! name in an argument only, a session without calls, another tenant's,
//! one still running; and the listing by tool.

use super::{Created, ListQuery, NewSession, ServerStore};
use crate::log::{Decision, EventBody, ZERO_HASH};
use serde_json::{json, Value};

/// Session `n`'s id.
pub fn id(n: u32) -> String {
    format!("{n:032x}")
}

/// The sessions of [`write_mixed`]: (n, tenant, tools proposed, argument
/// of each call, whether it ends).
pub fn mixed() -> Vec<(u32, &'static str, Vec<&'static str>, Value, bool)> {
    vec![
        (0, "acme", vec!["ping", "lookup"], json!(1), true),
        // `pin` is in `ping`'s text; `ping` twice is one row.
        (1, "acme", vec!["pin", "ping", "ping"], json!(2), true),
        // No call at all.
        (2, "acme", vec![], json!(null), true),
        // The rare tool's name in an argument only: not a call of it.
        (
            3,
            "acme",
            vec!["ping"],
            json!({"note": "rare_tool proposed"}),
            true,
        ),
        (4, "acme", vec!["rare_tool"], json!(4), true),
        // Another tenant's call of the rare tool.
        (5, "globex", vec!["rare_tool"], json!(5), true),
        // Still running.
        (6, "acme", vec!["lookup"], json!(6), false),
    ]
}

/// The tools the tests filter by.
pub const TOOLS: [&str; 7] = [
    "ping",
    "pin",
    "lookup",
    "rare_tool",
    "none_such",
    "",
    "proposed",
];

/// A session's events: started, each call proposed and decided, ended.
pub fn events(tools: &[&str], argument: &Value, ends: bool) -> Vec<EventBody> {
    let mut out = vec![EventBody::SessionStarted {
        lt_version: "0.1.0".into(),
        program: "exec tool ping 1".into(),
        program_hash: ZERO_HASH.into(),
        profile: json!({"name": "default"}),
        registry_hash: ZERO_HASH.into(),
        limits: json!({"max_calls": 10}),
    }];
    for (i, tool) in tools.iter().enumerate() {
        let call_id = format!("n{i}");
        out.push(EventBody::Proposed {
            call_id: call_id.clone(),
            tool: (*tool).into(),
            argument: argument.clone(),
        });
        out.push(EventBody::Decided {
            call_id,
            decision: Decision::Deny,
            rule: "policy".into(),
            reason: "a test".into(),
        });
    }
    if ends {
        out.push(EventBody::SessionEnded {
            status: "ok".into(),
            value: Some(json!(1)),
            r#type: Some("Int".into()),
            error: None,
            calls: 0,
            steps: 1,
        });
    }
    out
}

/// Writes [`mixed`]'s sessions through `store`.
pub fn write_mixed(store: &dyn ServerStore) {
    for (n, tenant, tools, argument, ends) in mixed() {
        let new = NewSession {
            id: id(n),
            tenant: tenant.into(),
            profile: "support".into(),
            request: json!({"program": "1"}),
            idempotency_key: None,
            created_ms: 1000 + i64::from(n),
        };
        assert_eq!(store.create_session(&new).expect("create"), Created::New);
        let mut sink = store.create(&id(n)).expect("create log");
        for body in events(&tools, &argument, ends) {
            sink.append(body).expect("append");
        }
    }
    store.flush();
}

/// The ids `list_sessions` gives for `tenant` and `tool`.
pub fn listed(store: &dyn ServerStore, tenant: &str, tool: &str) -> Vec<String> {
    let q = ListQuery {
        tenant: tenant.into(),
        tool: Some(tool.into()),
        limit: 100,
        ..ListQuery::default()
    };
    let list = store.list_sessions(&q).expect("list");
    list.iter().map(|r| r.id.clone()).collect()
}

/// Checks that the filter finds what [`mixed`] proposed (so a comparison
/// with the scan is not vacuous).
pub fn check_listed(store: &dyn ServerStore) {
    assert_eq!(listed(store, "acme", "rare_tool"), [id(4)]);
    assert_eq!(listed(store, "acme", "ping"), [id(3), id(1), id(0)]);
    assert_eq!(listed(store, "acme", "pin"), [id(1)]);
    assert_eq!(listed(store, "acme", "lookup"), [id(6), id(0)]);
    assert_eq!(listed(store, "globex", "rare_tool"), [id(5)]);
    assert!(listed(store, "acme", "proposed").is_empty());
}
