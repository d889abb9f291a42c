//! A session's claim: its mark in the store's `writing` set, held by the
//! one sink that writes the session and cleared when dropped (by the sink,
//! or by the writer thread once the sink's last buffered events commit).

use super::shared::Shared;
use std::sync::Arc;

/// A session's mark in `writing`, cleared when dropped.
pub struct Claim {
    pub(super) shared: Arc<Shared>,
    pub(super) session: String,
}

impl Drop for Claim {
    fn drop(&mut self) {
        self.shared.writing().remove(&self.session);
    }
}
