//! Dropping events without recursion: an event holding a tool output
//! nested a million levels deep would overflow the stack with the default
//! drop, so its JSON values go through [`drop_deep`] when they are deep.

use super::event::{Event, EventBody};
use crate::runtime::boundary::drop_deep;
use serde_json::Value as Json;

/// Drops an event without recursing once per level of its JSON values
/// (an event holding a tool output nested a million levels deep would
/// overflow the stack with the default drop).
pub fn drop_event(event: Event) {
    drop_body(event.body);
}

/// [`drop_event`] for a body.
pub(crate) fn drop_body(body: EventBody) {
    match body {
        EventBody::SessionStarted {
            profile, limits, ..
        } => {
            drop_json(profile);
            drop_json(limits);
        }
        EventBody::Proposed { argument, .. } => drop_json(argument),
        EventBody::Completed { output, result, .. } => {
            drop_json(output);
            drop_json(result);
        }
        EventBody::Failed { result, .. } | EventBody::TimedOut { result, .. } => drop_json(result),
        EventBody::SessionEnded { value, error, .. } => {
            value.into_iter().chain(error).for_each(drop_json);
        }
        EventBody::ClientReported { report, .. } | EventBody::ClientRejected { report, .. } => {
            drop_json(report)
        }
        EventBody::AnnotationStarted {
            hypothesis,
            notes,
            parent,
            ..
        } => {
            drop_json(hypothesis);
            drop_json(notes);
            drop_json(parent);
        }
        EventBody::AnnotationEnded { calls, .. } => drop_json(calls),
        EventBody::ApprovalRequested { argument, .. } => drop_json(argument),
        EventBody::ApprovalDecided { token, .. } => drop_json(token),
        EventBody::AgentStarted {
            model,
            settings,
            profile,
            limits,
            tags,
            ..
        } => [model, settings, profile, limits, tags]
            .into_iter()
            .for_each(drop_json),
        EventBody::TaskClassified {
            profile, settings, ..
        } => {
            drop_json(profile);
            drop_json(settings);
        }
        EventBody::ModelRequested { messages, .. } => drop_json(messages),
        EventBody::ModelReplied { texts, usage, .. } => {
            drop_json(texts);
            drop_json(usage);
        }
        EventBody::ProgramChecked {
            program,
            diagnostics,
            ..
        } => {
            drop_json(program);
            drop_json(diagnostics);
        }
        EventBody::AgentEnded { answer, .. } => drop_json(answer),
        EventBody::SessionInterrupted { stopped, .. } => drop_json(stopped),
        EventBody::Decided { .. }
        | EventBody::Scheduled { .. }
        | EventBody::ClientDispatched { .. }
        | EventBody::SessionResumed { .. }
        | EventBody::ModelRetried { .. }
        | EventBody::ModelFailed { .. }
        | EventBody::ProgramAccepted { .. } => {}
    }
}

/// Drops a JSON value: a shallow one (most are) the ordinary way, which
/// allocates nothing; a deep one without recursion ([`drop_deep`]).
fn drop_json(value: Json) {
    /// Nested at most `depth` levels (a bounded recursion).
    fn shallow(value: &Json, depth: u8) -> bool {
        match value {
            Json::Array(items) => depth > 0 && items.iter().all(|v| shallow(v, depth - 1)),
            Json::Object(fields) => depth > 0 && fields.values().all(|v| shallow(v, depth - 1)),
            Json::Null | Json::Bool(_) | Json::Number(_) | Json::String(_) => true,
        }
    }
    if shallow(&value, 16) {
        drop(value);
    } else {
        drop_deep(value);
    }
}
