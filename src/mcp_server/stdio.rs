//! The stdio transport of `lt mcp`, between the process's stdin/stdout and
//! rmcp's line-delimited JSON-RPC codec.
//!
//! ```text
//! stdin ──lines──▶ [reader] ──valid JSON──▶ duplex ──▶ rmcp
//!                     │ not UTF-8 or not JSON: -32700 Parse error (id null)
//!                     ▼
//! stdout ◀──whole lines── [writer] ◀── duplex ◀── rmcp's replies
//! ```
//!
//! rmcp drops a line that is not JSON without a word; JSON-RPC 2.0 asks
//! for a `-32700` "Parse error" response with `id: null`, which the
//! reader sends through the writer (so it never interleaves with rmcp's
//! output). When stdin ends (the client closed it), the reader sets
//! `closed` at once, so the programs still running are cancelled then and
//! not when rmcp gets round to it.

use serde_json::json;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, ReadHalf, WriteHalf};
use tokio::sync::{mpsc, watch};

/// The JSON-RPC 2.0 response to a line that is not JSON.
pub fn parse_error(line: &str, e: &serde_json::Error) -> String {
    let shown: String = line.chars().take(80).collect();
    json!({
        "jsonrpc": "2.0",
        "id": null,
        "error": {
            "code": -32700,
            "message": format!("Parse error: the line is not JSON ({e}): {shown:?}"),
        },
    })
    .to_string()
}

/// The JSON-RPC 2.0 response to a line that is not UTF-8 (JSON text is).
pub fn not_utf8(line: &[u8], e: &std::str::Utf8Error) -> String {
    let shown = String::from_utf8_lossy(&line[..line.len().min(80)]).into_owned();
    json!({
        "jsonrpc": "2.0",
        "id": null,
        "error": {
            "code": -32700,
            "message": format!(
                "Parse error: the line is not UTF-8 (byte {} is invalid), so not JSON: {shown:?}",
                e.valid_up_to()
            ),
        },
    })
    .to_string()
}

/// Starts the reader and writer tasks over the process's stdin and
/// stdout: the transport for rmcp, and the writer's task (await it after
/// the session, so the last replies are flushed). `closed` is set to
/// `true` when stdin ends or `stop` completes (SIGINT, SIGTERM): the
/// programs still running are cancelled and their logs ended either way.
pub fn transport(
    closed: watch::Sender<bool>,
    stop: impl std::future::Future<Output = ()> + Send + 'static,
) -> (
    (ReadHalf<DuplexStream>, WriteHalf<DuplexStream>),
    tokio::task::JoinHandle<()>,
) {
    let (ours, theirs) = tokio::io::duplex(1 << 16);
    let (from_rmcp, mut to_rmcp) = tokio::io::split(ours);
    let (errors_tx, mut errors_rx) = mpsc::unbounded_channel::<String>();
    tokio::spawn(async move {
        let mut stdin = BufReader::new(tokio::io::stdin());
        let mut raw = Vec::new();
        tokio::pin!(stop);
        loop {
            raw.clear();
            // A stop signal ends the session as the client's hang-up does.
            let read = tokio::select! {
                r = stdin.read_until(b'\n', &mut raw) => r,
                () = &mut stop => break,
            };
            match read {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
            // A line that is not UTF-8 is a parse error like any other, not
            // the end of the session.
            let line = match std::str::from_utf8(&raw) {
                Ok(text) => text.trim_end_matches(['\n', '\r']).to_string(),
                Err(e) => {
                    let _ = errors_tx.send(not_utf8(&raw, &e));
                    continue;
                }
            };
            if line.trim().is_empty() {
                continue;
            }
            match serde_json::from_str::<serde_json::Value>(&line) {
                Err(e) => {
                    let _ = errors_tx.send(parse_error(&line, &e));
                }
                Ok(_) => {
                    let sent = async {
                        to_rmcp.write_all(line.as_bytes()).await?;
                        to_rmcp.write_all(b"\n").await?;
                        to_rmcp.flush().await
                    };
                    if sent.await.is_err() {
                        break;
                    }
                }
            }
        }
        let _ = closed.send(true);
        let _ = to_rmcp.shutdown().await;
    });
    let writer = tokio::spawn(async move {
        let mut out = tokio::io::stdout();
        let mut replies = BufReader::new(from_rmcp).lines();
        let mut errors_open = true;
        loop {
            let line = tokio::select! {
                l = replies.next_line() => match l {
                    Ok(Some(l)) => l,
                    _ => break,
                },
                e = errors_rx.recv(), if errors_open => match e {
                    Some(e) => e,
                    None => {
                        errors_open = false;
                        continue;
                    }
                },
            };
            let written = async {
                out.write_all(line.as_bytes()).await?;
                out.write_all(b"\n").await?;
                out.flush().await
            };
            if written.await.is_err() {
                break;
            }
        }
    });
    (tokio::io::split(theirs), writer)
}
