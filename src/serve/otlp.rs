//! `lt serve --otlp-endpoint URL`: every session exported as an
//! OpenTelemetry trace by the exporter `lt run` and `lt agent` use
//! (`crate::otlp`), once its log ends. The store's commit notices say when
//! a `session_ended` or `agent_ended` commits; the committed log is then
//! read and exported on a blocking thread. A receiver that falls behind
//! the commit notices (`Lagged`) loses the traces of the sessions that
//! ended meanwhile (noted on stderr).

use super::store::ServerStore;
use crate::otlp::Exporter;
use std::sync::Arc;

/// Follows the store's commits and exports each session that ends.
pub async fn follow(store: Arc<dyn ServerStore>, exporter: Exporter) {
    let mut rx = store.subscribe();
    loop {
        match rx.recv().await {
            Ok(c) => {
                let line: &str = &c.line;
                if !(line.contains("\"kind\":\"session_ended\"")
                    || line.contains("\"kind\":\"agent_ended\""))
                {
                    continue;
                }
                let (store, exporter) = (Arc::clone(&store), exporter.clone());
                let id = c.session.clone();
                tokio::task::spawn_blocking(move || match store.events_after(&id, None) {
                    Ok(lines) => {
                        exporter.export(&id, &lines);
                    }
                    Err(e) => eprintln!("lt serve: otlp: cannot read session {id}: {e}"),
                });
            }
            Err(tokio::sync::broadcast::error::RecvError::Lagged(n)) => {
                eprintln!("lt serve: otlp: {n} commit notices missed; the traces of sessions that ended meanwhile are not exported");
            }
            Err(tokio::sync::broadcast::error::RecvError::Closed) => break,
        }
    }
}
