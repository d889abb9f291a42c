//! Session records a store cannot read (a row changed past `lt serve`: a
//! status it does not write, a request or output that is not JSON).
//!
//! ```text
//! one session's record ─▶ damaged row ─▶ StoreError::Damaged (the API: 500 record_damaged)
//! lists, resume at start ─▶ damaged rows left out, the others answered
//! either way ─▶ the row named on stderr, once per store and row
//! ```
//!
//! Both stores (SQLite, PostgreSQL) answer a damaged row so: one damaged
//! row neither hides a tenant's other sessions nor stops a start, and a
//! client is not told to retry what no retry mends.

use super::shared::Shared;
use super::SessionRecord;
use crate::log::StoreError;
use std::sync::PoisonError;

impl Shared {
    /// The error for a session record that cannot be read (`why` names
    /// the session and what is wrong), named on stderr the first time
    /// this store meets it.
    pub fn damaged(&self, why: String) -> StoreError {
        let message = format!("the store {}: a damaged session record: {why}", self.name);
        let first = self
            .damaged
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(why);
        if first {
            eprintln!(
                "lt serve: {message}; it is left out of lists and of the resume at start, and answered 500 record_damaged (repair or delete its row)"
            );
        }
        StoreError::Damaged(message)
    }

    /// The records of `rows` that could be read; each damaged one is left
    /// out ([`Shared::damaged`] names it).
    pub fn readable(
        &self,
        rows: impl IntoIterator<Item = Result<SessionRecord, String>>,
    ) -> Vec<SessionRecord> {
        rows.into_iter()
            .filter_map(|r| r.map_err(|why| self.damaged(why)).ok())
            .collect()
    }
}
