//! Statements prepared once per connection.
//!
//! `Client::query(&str, …)` prepares its statement on every call: a round
//! trip (Parse, Describe) and the server's parse and analysis, then a
//! second round trip to run it. The writer's few statements run thousands
//! of times a second; prepared once per connection (the server keeps them
//! until it closes), each run is one round trip and no parsing.
//!
//! ```text
//! get(conn, sql) ─▶ the Statement prepared for `sql` on this connection,
//!                   prepared now if it was not yet
//! clear()        ─▶ a new connection: none of them exists there
//! ```
//!
//! Invariant: a cache belongs to one connection; whoever replaces the
//! connection clears it.

use postgres::{GenericClient, Statement};
use std::collections::HashMap;

/// The statements prepared on one connection, by their SQL text.
#[derive(Default)]
pub(super) struct Prepared(HashMap<&'static str, Statement>);

impl Prepared {
    /// `sql` prepared on `conn` (the connection this cache belongs to):
    /// prepared the first time, then the same statement.
    pub fn get(
        &mut self,
        conn: &mut impl GenericClient,
        sql: &'static str,
    ) -> Result<Statement, postgres::Error> {
        if let Some(statement) = self.0.get(sql) {
            return Ok(statement.clone());
        }
        let statement = conn.prepare(sql)?;
        self.0.insert(sql, statement.clone());
        Ok(statement)
    }

    /// Forgets every statement (the connection was replaced).
    pub fn clear(&mut self) {
        self.0.clear();
    }
}
