//! A session's sink in a database store (SQLite, PostgreSQL): events
//! numbered, chained and hashed by a [`MemoryLog`], handed to the writer
//! thread; an append of an event that [`commit_point`] says is `Commit`
//! returns once its transaction committed.
//!
//! ```text
//! append(body) ─▶ MemoryLog::seal (the library's seq, ts, prev, hash; the line)
//!              ─▶ Request::Append ─▶ writer ─▶ Commit: wait for the answer
//!                                             Buffer: go on (a failure is left
//!                                             in `failed` for the next append)
//! drop ─▶ nothing buffered: the session's claim goes now
//!       ─▶ else Request::Release(claim): the writer lets it go once
//!          everything queued before it committed (nobody waits here)
//! ```
//!
//! Invariant: after one failed append a sink writes nothing more (its
//! chain is ahead of the stored one, which the writer would refuse anyway).

use super::claim::Claim;
use super::queue::{Append, Request};
use crate::log::drop::drop_body;
use crate::log::write_ahead::{commit_point, WriteAhead};
use crate::log::{Event, EventBody, EventSink, MemoryLog};
use std::collections::BTreeSet;
use std::io;
use std::sync::atomic::Ordering;
use std::sync::mpsc::{self, Sender};
use std::sync::{Arc, Mutex, PoisonError};

/// The sink of one session: events chained by a [`MemoryLog`], written by
/// the writer thread.
pub(super) struct StoreSink {
    /// Handed to the writer in `drop` (`None` after).
    claim: Option<Claim>,
    /// The session.
    session: String,
    requests: Sender<Request>,
    /// Numbers, stamps, chains and hashes (holds no event: each is
    /// handed on as it is sealed).
    log: MemoryLog,
    /// The failure of a `Buffer` event, left by the writer.
    failed: Arc<Mutex<Option<String>>>,
    /// Set once an append failed: nothing more is written.
    broken: Option<String>,
    /// `Buffer` events were sent since the last answered append: the
    /// claim goes through the writer, after them.
    buffered: bool,
    /// The lease epoch its events are written under (0: no lease).
    epoch: i64,
    /// The tools declared idempotent ([`EventSink::idempotent_tools`]):
    /// their calls' `scheduled` is buffered ([`commit_point`]).
    idempotent: BTreeSet<String>,
}

impl StoreSink {
    /// A sink appending after `log`'s chain (stamped by `clock`, or the
    /// system clock), holding `claim`, writing through `requests`.
    pub(super) fn new(
        claim: Claim,
        requests: Sender<Request>,
        log: MemoryLog,
        clock: Option<fn() -> String>,
    ) -> StoreSink {
        let log = match clock {
            Some(clock) => log.with_clock(clock),
            None => log,
        };
        claim.shared.sinks.fetch_add(1, Ordering::SeqCst);
        let epoch = claim.shared.epoch_of(&claim.session);
        StoreSink {
            epoch,
            session: claim.session.clone(),
            claim: Some(claim),
            requests,
            log,
            failed: Arc::new(Mutex::new(None)),
            broken: None,
            buffered: false,
            idempotent: BTreeSet::new(),
        }
    }

    /// The earlier failure that stops this sink, if any.
    fn stopped(&mut self) -> Option<String> {
        if self.broken.is_none() {
            let mut slot = self.failed.lock().unwrap_or_else(PoisonError::into_inner);
            self.broken = slot.take();
        }
        self.broken.clone()
    }

    fn writer_gone(&self) -> String {
        match &self.claim {
            Some(c) => c.shared.writer_gone(),
            None => "the store's writer thread has stopped".to_string(),
        }
    }

    /// Whether this worker holds the session's lease, at the epoch its
    /// events are written under, and knows it valid now.
    fn lease_now(&self) -> bool {
        self.claim
            .as_ref()
            .is_some_and(|c| c.shared.holds_now(&self.session, self.epoch))
    }

    /// Records `why` as this sink's end and returns it as an error.
    fn break_with(&mut self, why: String) -> io::Error {
        let why = self.stopped().unwrap_or(why);
        self.broken = Some(why.clone());
        io::Error::other(why)
    }
}

impl EventSink for StoreSink {
    fn append(&mut self, body: EventBody) -> io::Result<()> {
        if let Some(why) = self.stopped() {
            return Err(io::Error::other(format!(
                "nothing more is written to the log of session {} after an earlier append failed: {why}",
                self.session
            )));
        }
        // An idempotent call's `scheduled` is buffered only while this
        // worker's lease is known valid (always without leases, epoch 0): a
        // worker paused past its lease commits it, and the database's fence
        // refuses it before the call starts.
        let commit = commit_point(&body, &self.idempotent) == WriteAhead::Commit
            || (self.epoch != 0
                && matches!(body, EventBody::Scheduled { .. })
                && !self.lease_now());
        let tool = match &body {
            EventBody::Proposed { tool, .. } => Some(tool.clone()),
            _ => None,
        };
        let (event, line) = self.log.seal(body);
        let Event {
            seq,
            session,
            prev,
            hash,
            body,
            ..
        } = event;
        drop_body(body);
        let (reply, answer) = match commit {
            true => {
                let (reply, answer) = mpsc::sync_channel(1);
                (Some(reply), Some(answer))
            }
            false => (None, None),
        };
        let request = Request::Append(Append {
            session,
            seq,
            prev,
            hash,
            line,
            tool,
            epoch: self.epoch,
            reply,
            failed: Arc::clone(&self.failed),
        });
        if self.requests.send(request).is_err() {
            return Err(self.break_with(self.writer_gone()));
        }
        let Some(answer) = answer else {
            self.buffered = true;
            return Ok(());
        };
        match answer.recv() {
            Ok(Ok(())) => {
                self.buffered = false;
                Ok(())
            }
            Ok(Err(why)) => Err(self.break_with(why)),
            Err(_) => Err(self.break_with(self.writer_gone())),
        }
    }

    fn idempotent_tools(&mut self, tools: &BTreeSet<String>) {
        self.idempotent.clone_from(tools);
    }
}

impl Drop for StoreSink {
    /// Hands the claim to the writer, which lets it go once the buffered
    /// events are committed (or failed): the session's next writer starts
    /// after them, and nobody waits here (the session's final status,
    /// queued next, commits in the same transaction).
    fn drop(&mut self) {
        if let Some(claim) = self.claim.take() {
            let shared = Arc::clone(&claim.shared);
            if self.buffered && self.broken.is_none() {
                // A writer that is gone hands the request back: the claim
                // goes here.
                let _ = self.requests.send(Request::Release(claim));
            } else {
                // Everything sent is committed (or failed): it goes now.
                drop(claim);
            }
            shared.sinks.fetch_sub(1, Ordering::SeqCst);
        }
    }
}
