//! How the control plane writes a call: its events to the sink, fail
//! closed (the first write that fails is kept, and every later write
//! answers it: no call is made that the log cannot record), and what a
//! call's outcome is written as: the result the program sees
//! ([`result_json`]), the outcome event, a dry run's empty value.

use crate::log::{CallEvent, EventBody, EventSink};
use crate::runtime::boundary;
use crate::runtime::host::{FailureKind, Outcome, ToolFailure};
use crate::runtime::limits::Limits;
use crate::types::{ToolSig, Type};
use serde_json::{json, Value as Json};

pub(super) fn unavailable(message: String) -> ToolFailure {
    ToolFailure {
        stderr: None,
        kind: FailureKind::Unavailable,
        message,
    }
}

/// The program's view of an outcome, as logged in `result`: exactly what
/// the interpreter gives the program under `limits`.
pub fn result_json(tool: &ToolSig, outcome: &Outcome, limits: &Limits) -> Json {
    result_of(tool, outcome, limits, true)
}

/// [`result_json`]; without `value`, `{"Ok": null}` in place of the value
/// (an outline event: [`EventSink::payloads`]).
pub(super) fn result_of(tool: &ToolSig, outcome: &Outcome, limits: &Limits, value: bool) -> Json {
    // Built in place: `json!` would copy the value by serializing it.
    let one = |key: &str, v: Json| Json::Object(serde_json::Map::from_iter([(key.to_string(), v)]));
    match outcome {
        Ok(json) => match boundary::program_result(
            &tool.name,
            json,
            &tool.output,
            limits.max_list_len,
            limits.max_value_nodes,
        ) {
            Ok(v) if value => one("Ok", v.to_json()),
            Ok(_) => one("Ok", Json::Null),
            Err(msg) => one("Err", Json::String(msg)),
        },
        Err(f) => one("Err", Json::String(f.message.clone())),
    }
}

/// The empty value of a type, as JSON: what a dry-run call returns when the
/// profile configures no answer.
pub fn empty_json(ty: &Type) -> Json {
    match ty {
        Type::Unit => Json::Null,
        Type::Bool => Json::Bool(false),
        Type::Int => json!(0),
        Type::String => json!(""),
        Type::Float => json!(0.0),
        Type::Json | Type::Option(_) => Json::Null,
        Type::Approval => json!(""),
        Type::Enum(lits) => lits.first().map_or(json!(""), |l| json!(&**l)),
        Type::Record(fields) | Type::OpenRecord(fields) => Json::Object(
            fields
                .iter()
                .map(|(n, t)| (n.to_string(), empty_json(t)))
                .collect(),
        ),
        Type::List(_) => json!([]),
        Type::Result(ok, _) => json!({ "Ok": empty_json(ok) }),
        Type::Linear(t) => empty_json(t),
        Type::Fun(..) | Type::Meta(_) | Type::Error => Json::Null,
    }
}

/// The event that records a dispatched call's outcome.
/// `payloads`: the sink keeps the output and the result's value
/// ([`EventSink::payloads`]); else they are `null`.
pub(super) fn outcome_event(
    tool: &ToolSig,
    call_id: String,
    outcome: &Outcome,
    limits: &Limits,
    payloads: bool,
) -> EventBody {
    let result = result_of(tool, outcome, limits, payloads);
    match outcome {
        Ok(output) => EventBody::Completed {
            call_id,
            output: if payloads { output.clone() } else { Json::Null },
            result,
        },
        Err(f) if f.kind == FailureKind::TimedOut => EventBody::TimedOut {
            call_id,
            message: f.message.clone(),
            result,
            stderr: f.stderr.clone(),
        },
        Err(f) => EventBody::Failed {
            call_id,
            failure: f.kind.as_str().to_string(),
            message: f.message.clone(),
            result,
            stderr: f.stderr.clone(),
        },
    }
}

/// [`super::ControlPlane::record`] on split borrows (while the inner host runs).
pub(super) fn record_to<S: EventSink>(
    sink: &mut S,
    log_error: &mut Option<String>,
    body: EventBody,
) -> Result<(), String> {
    written(log_error, |sink| sink.append(body), sink)
}

/// Runs `write` on `sink` unless an earlier write failed; a failure is
/// kept in `log_error` and every later write answers it.
pub(super) fn written<S: EventSink>(
    log_error: &mut Option<String>,
    write: impl FnOnce(&mut S) -> std::io::Result<()>,
    sink: &mut S,
) -> Result<(), String> {
    if let Some(e) = log_error {
        return Err(e.clone());
    }
    write(sink).map_err(|e| {
        let msg = format!("the event log could not be written: {e}");
        *log_error = Some(msg.clone());
        msg
    })
}

/// `ControlPlane::record_call` on split borrows.
pub(super) fn record_call_to<S: EventSink>(
    sink: &mut S,
    log_error: &mut Option<String>,
    event: CallEvent<'_>,
) -> Result<(), String> {
    if !sink.observes() {
        let body = event.to_body(sink.payloads());
        return record_to(sink, log_error, body);
    }
    written(log_error, |sink| sink.observe(&event), sink)
}
