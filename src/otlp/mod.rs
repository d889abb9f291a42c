//! A session exported as an OpenTelemetry trace over OTLP/HTTP
//! (protobuf): what `lt run`, `lt agent` and `lt serve` do with
//! `--otlp-endpoint URL`. A trace is built span by span as
//! `opentelemetry-proto` messages and encoded once by `prost` (`proto.rs`),
//! from one of two sources:
//!
//! ```text
//! lt run:    Session::tap(Recorder) ─ each typed event as it is recorded
//!            (record.rs) ─▶ a compact row as its call ends (batch.rs) ─▶
//!            channel, ROWS rows at a time; session_ended: the rows left and
//!            the session's span
//! lt serve, lt agent:  export(id, lines): the log read back ─▶
//!            log::timeline's rows (spans.rs) ─▶ encoded ─▶ channel
//! exporter thread:
//!   rows ─▶ spans encoded (proto.rs) ─▶ POSTed as soon as BATCH_SPANS wait,
//!     or the trace ended (a run's spans go out while it runs, in several
//!     requests, the session's span in the last)
//!   traces ─▶ the ones that come within LINGER of the first (whole, up to
//!     MAX_SPANS a request unless one trace is bigger), joined into one
//!     ExportTraceServiceRequest
//!   ─▶ POST application/x-protobuf (ureq for http://; reqwest on a
//!     current-thread runtime for https://)
//! shutdown() ─▶ the channel closed ─▶ the thread posts what is left (the
//!   spans of a trace that did not end too) ─▶ joined: the first failure, if any
//! ```
//!
//! Spans link to the log: each carries `lt.log.seq`, the seq of its last
//! event, and `lt.log.hash`, that event's hash, when the session keeps a
//! log (`lt run` without `--log` keeps none: its spans carry the seq the
//! event would have had, and no hash).
//!
//! Why not the SDK's tracer and batch processor: building each span
//! through them, and reading the log back to find the spans, cost `lt run`
//! far more than the 5% of its run issue 27 asks for (docs/performance.md). Arguments and results are exported only
//! when asked ([`Settings::payloads`]), each cut to a size limit.

mod batch;
mod proto;
mod record;
mod spans;
#[cfg(test)]
mod tests;

pub use proto::{cut, Encoded};
pub use record::Recorder;

use batch::Batch;
use proto::TraceBuilder;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
/// The size limit of an exported argument or result when none is given
/// (`--otlp-payload-limit`), in bytes.
pub const DEFAULT_PAYLOAD_LIMIT: usize = 4096;

/// The spans one request carries at most, unless one trace alone has
/// more (a trace is never split).
const MAX_SPANS: usize = 8192;

/// The spans of a running session's trace the exporter's thread posts
/// in one request as soon as it has them: a batch of rows' worth
/// ([`record::ROWS`]), so that a run's spans go out while it runs and its
/// end waits for the last few only (OpenTelemetry's batch span processor
/// posts at 512, its `max_export_batch_size`: at the end of a run of 1,000
/// calls, 489 spans were left to post, and their answer to wait for).
const BATCH_SPANS: usize = record::ROWS;

/// How long the exporter's thread waits for more traces to send in the
/// same request as the first (`lt serve`: fewer, larger requests; a
/// command's shutdown does not wait).
const LINGER: Duration = Duration::from_millis(200);

/// How long a POST may take.
const TIMEOUT: Duration = Duration::from_secs(10);

/// What the command line asks of the exporter.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Settings {
    /// The URL spans are posted to, e.g. `http://127.0.0.1:4318/v1/traces`.
    pub endpoint: String,
    /// `Some(limit)`: export each call's argument and result as attributes,
    /// each cut to `limit` bytes (`--otlp-payloads`); `None`: never.
    pub payloads: Option<usize>,
}

/// An exporter: a thread posting traces to one endpoint. Clones share it.
#[derive(Clone)]
pub struct Exporter {
    inner: Arc<Inner>,
}

struct Inner {
    service: &'static str,
    payloads: Option<usize>,
    endpoint: String,
    traces: Mutex<Option<Sender<Job>>>,
    /// The number of the next recorder's trace.
    recorders: AtomicU64,
    thread: Mutex<Option<JoinHandle<Option<String>>>>,
}

impl Exporter {
    /// The exporter of `settings`, its spans' resource named `service`
    /// (`lt run`, `lt agent`, `lt serve`). Errors: a message naming the
    /// endpoint.
    pub fn new(service: &'static str, settings: &Settings) -> Result<Exporter, String> {
        let endpoint = settings.endpoint.clone();
        if !(endpoint.starts_with("http://") || endpoint.starts_with("https://")) {
            return Err(format!(
                "--otlp-endpoint {endpoint:?} is not an http:// or https:// URL"
            ));
        }
        let (tx, rx) = channel();
        let (to, name, payloads) = (endpoint.clone(), service, settings.payloads);
        let thread = std::thread::Builder::new()
            .name("lt-otlp".into())
            .spawn(move || run(&to, name, payloads, &rx))
            .map_err(|e| format!("cannot start the OTLP exporter for {endpoint}: {e}"))?;
        Ok(Exporter {
            inner: Arc::new(Inner {
                service,
                payloads: settings.payloads,
                endpoint,
                traces: Mutex::new(Some(tx)),
                recorders: AtomicU64::new(1),
                thread: Mutex::new(Some(thread)),
            }),
        })
    }

    /// Sends what is waiting and stops the exporter (a command does this
    /// before it exits). Errors: why a trace could not be sent (the
    /// first failure).
    pub fn shutdown(&self) -> Result<(), String> {
        let x = &self.inner;
        drop(
            x.traces
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .take(),
        );
        let thread = x
            .thread
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        match thread.map(JoinHandle::join) {
            None | Some(Ok(None)) => Ok(()),
            Some(Ok(Some(e))) => Err(format!("cannot export the trace to {}: {e}", x.endpoint)),
            Some(Err(_)) => Err(format!("the OTLP exporter for {} stopped", x.endpoint)),
        }
    }

    /// Exports the trace of session `id` from its log `lines`, if its log
    /// is over (an agent's log: at `agent_ended`, not at its runs' ends).
    /// Returns whether it did (queued it for the exporter's thread).
    pub fn export(&self, id: &str, lines: &[String]) -> bool {
        let x = &self.inner;
        spans::trace(x.service, id, lines, x.payloads).is_some_and(|t| self.send(t))
    }

    /// A recorder of a session's trace ([`Recorder`], the session's tap),
    /// which hands its spans to this exporter as they end.
    pub fn recorder(&self) -> Recorder {
        let trace = self.inner.recorders.fetch_add(1, Ordering::Relaxed);
        Recorder::new(
            Some((self.clone(), trace)),
            self.inner.service,
            self.inner.payloads,
        )
    }

    /// Queues an encoded trace for the exporter's thread; whether it was
    /// (not after [`Exporter::shutdown`]).
    pub fn send(&self, trace: Encoded) -> bool {
        self.queue(Job::Trace(trace))
    }

    /// Queues a recorder's rows for the exporter's thread.
    fn send_rows(&self, rows: Batch) -> bool {
        self.queue(Job::Rows(rows))
    }

    fn queue(&self, job: Job) -> bool {
        let traces = self
            .inner
            .traces
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        traces.as_ref().is_some_and(|tx| tx.send(job).is_ok())
    }
}

/// What the exporter's thread is handed.
enum Job {
    /// A whole trace, encoded (`lt serve`, `lt agent`).
    Trace(Encoded),
    /// Rows of a running session's trace (`lt run`).
    Rows(Batch),
}

/// The exporter's thread: posts the traces and rows of `rx` to
/// `endpoint` until the channel closes; the first failure. `lt serve`
/// (which stops it only at exit) also notes each failure after a success
/// on stderr.
fn run(
    endpoint: &str,
    service: &'static str,
    payloads: Option<usize>,
    rx: &Receiver<Job>,
) -> Option<String> {
    let mut post = Post {
        client: Client::new(endpoint),
        endpoint,
        service,
        first_error: None,
        failing: false,
    };
    // Entries waiting to go in one request, their spans, and until when
    // more may join them.
    let mut waiting: Vec<Encoded> = Vec::new();
    let mut spans = 0;
    let mut until: Option<Instant> = None;
    // The traces being recorded, by the recorder's number.
    let mut open: Vec<(u64, TraceBuilder)> = Vec::new();
    loop {
        let job = match until {
            None => rx.recv().ok(),
            Some(t) => match rx.recv_timeout(t.saturating_duration_since(Instant::now())) {
                Ok(job) => Some(job),
                Err(RecvTimeoutError::Timeout) => {
                    post.send(&mut waiting);
                    (spans, until) = (0, None);
                    continue;
                }
                Err(RecvTimeoutError::Disconnected) => None,
            },
        };
        // A closed channel (shutdown): what is left goes at once.
        let Some(job) = job else {
            break;
        };
        match job {
            Job::Trace(e) => {
                spans += e.spans;
                waiting.push(e);
                until.get_or_insert_with(|| Instant::now() + LINGER);
                if spans < MAX_SPANS {
                    continue;
                }
            }
            Job::Rows(rows) => {
                let i = match open.iter().position(|(n, _)| *n == rows.trace) {
                    Some(i) => i,
                    None => {
                        let t = TraceBuilder::new(service, &rows.session, payloads);
                        open.push((rows.trace, t));
                        open.len() - 1
                    }
                };
                let ended = rows.replay(&mut open[i].1);
                if !ended && open[i].1.pending() < BATCH_SPANS {
                    continue;
                }
                waiting.extend(open[i].1.flush());
                if ended {
                    open.swap_remove(i);
                }
            }
        }
        post.send(&mut waiting);
        (spans, until) = (0, None);
    }
    // The spans of traces that did not end are sent too.
    for (_, mut t) in open {
        waiting.extend(t.flush());
    }
    post.send(&mut waiting);
    post.first_error
}

/// Posting entries, and what became of it.
struct Post<'a> {
    client: Client,
    endpoint: &'a str,
    service: &'static str,
    first_error: Option<String>,
    failing: bool,
}

impl Post<'_> {
    /// Posts `entries` (emptied) as one request, if there are any.
    fn send(&mut self, entries: &mut Vec<Encoded>) {
        // Each entry is a whole entry of the request: joined, they are it.
        let joined;
        let body = match entries.as_slice() {
            [] => return,
            [one] => one.entry(),
            many => {
                joined = many
                    .iter()
                    .flat_map(Encoded::entry)
                    .copied()
                    .collect::<Vec<u8>>();
                &joined[..]
            }
        };
        match self.client.post(self.endpoint, body) {
            Ok(()) => self.failing = false,
            Err(e) => {
                if self.service == "lt serve" && !self.failing {
                    eprintln!("lt serve: otlp: cannot export to {}: {e}", self.endpoint);
                }
                self.failing = true;
                self.first_error.get_or_insert(e);
            }
        }
        entries.clear();
    }
}

/// A blocking HTTP client for one endpoint: ureq for `http://` (no
/// runtime, no TLS set up), reqwest on a current-thread runtime for
/// `https://`, made on first use.
enum Client {
    Plain(ureq::Agent),
    Tls(Option<(tokio::runtime::Runtime, reqwest::Client)>),
}

impl Client {
    fn new(endpoint: &str) -> Client {
        if endpoint.starts_with("http://") {
            // One kept connection (ureq sets TCP_NODELAY): a run posts
            // many requests. A receiver that answers in two writes (headers,
            // then body) without TCP_NODELAY makes each later request wait
            // for our delayed ACK (40 ms); collectors answer in one write.
            Client::Plain(ureq::AgentBuilder::new().timeout(TIMEOUT).build())
        } else {
            Client::Tls(None)
        }
    }

    fn post(&mut self, endpoint: &str, body: &[u8]) -> Result<(), String> {
        const PROTOBUF: &str = "application/x-protobuf";
        match self {
            Client::Plain(agent) => match agent
                .post(endpoint)
                .set("Content-Type", PROTOBUF)
                .send_bytes(body)
            {
                Ok(r) => {
                    let _ = r.into_string();
                    Ok(())
                }
                Err(ureq::Error::Status(code, r)) => {
                    Err(format!("the receiver answered {code} {}", r.status_text()))
                }
                Err(e) => Err(e.to_string()),
            },
            Client::Tls(made) => {
                if made.is_none() {
                    let runtime = tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build()
                        .map_err(|e| e.to_string())?;
                    let client = reqwest::Client::builder()
                        .timeout(TIMEOUT)
                        .build()
                        .map_err(|e| e.to_string())?;
                    *made = Some((runtime, client));
                }
                let Some((runtime, client)) = made.as_ref() else {
                    return Err("no HTTP client".into());
                };
                runtime.block_on(async {
                    let r = client
                        .post(endpoint)
                        .header("Content-Type", PROTOBUF)
                        .body(body.to_vec())
                        .send()
                        .await
                        .map_err(|e| e.to_string())?;
                    if r.status().is_success() {
                        Ok(())
                    } else {
                        Err(format!("the receiver answered {}", r.status()))
                    }
                })
            }
        }
    }
}
