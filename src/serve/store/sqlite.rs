//! The SQLite store (placeholder until the real one is merged).
use super::*;
use crate::log::{EventSink, Loaded, ReopenedLog};
/// Placeholder.
pub struct SqliteStore;
impl SqliteStore {
    /// Placeholder.
    pub fn open(_p: &std::path::Path) -> Result<SqliteStore, StoreError> { Err(StoreError::NotFound("x".into())) }
}
impl EventStore for SqliteStore {
    fn create(&self, s: &str) -> Result<Box<dyn EventSink + Send>, StoreError> { Err(StoreError::NotFound(s.into())) }
    fn load(&self, s: &str) -> Result<Loaded, StoreError> { Err(StoreError::NotFound(s.into())) }
    fn reopen(&self, s: &str) -> Result<ReopenedLog, StoreError> { Err(StoreError::NotFound(s.into())) }
}
impl ServerStore for SqliteStore {
    fn create_session(&self, _s: &NewSession) -> Result<Created, StoreError> { todo!() }
    fn session(&self, _t: &str, _id: &str) -> Result<Option<SessionRecord>, StoreError> { todo!() }
    fn list_sessions(&self, _q: &ListQuery) -> Result<Vec<SessionRecord>, StoreError> { todo!() }
    fn set_status(&self, _id: &str, _s: SessionStatus, _o: Option<&Json>, _c: u64) -> Result<(), StoreError> { todo!() }
    fn unfinished(&self) -> Result<Vec<SessionRecord>, StoreError> { todo!() }
    fn events_after(&self, _id: &str, _a: Option<u64>) -> Result<Vec<String>, StoreError> { todo!() }
    fn subscribe(&self) -> tokio::sync::broadcast::Receiver<Committed> { todo!() }
    fn health(&self) -> Result<(), StoreError> { todo!() }
    fn observe_commits(&self, _o: CommitObserver) { todo!() }
}
