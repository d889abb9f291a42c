//! The readers: a few threads, each with a connection of its own, that
//! run the store's reads. The synchronous driver runs a runtime of its
//! own inside each call and must not be called from a tokio task (the
//! API's handlers are), so every read is handed to these threads and the
//! caller waits for the answer on a channel.
//!
//! ```text
//! Readers::read(what, job) ─▶ jobs (mpsc, shared) ─▶ reader thread: job(&mut Client)
//!                          ◀─ answer (a channel of one) ◀─┘
//! a lost connection: the thread connects again and runs the read once more
//! (a read changes nothing, so running it twice is safe)
//! ```
//!
//! Invariant: a reader never holds a transaction open between jobs; a
//! failed connect fails the job with its error (and hint), never panics.

use super::url::Target;
use crate::log::StoreError;
use postgres::Client;
use std::io;
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex, PoisonError};

/// One read, run on a reader's connection.
type Job = Box<dyn FnOnce(&mut Option<Client>, &Target) + Send>;

/// The reader threads' queue.
pub(super) struct Readers {
    jobs: Mutex<Option<Sender<Job>>>,
    target: Target,
}

impl Readers {
    /// Starts `n` reader threads; `first` is the first one's connection.
    pub fn start(target: &Target, n: usize, first: Client) -> io::Result<Readers> {
        let (jobs, queue) = mpsc::channel::<Job>();
        let queue = Arc::new(Mutex::new(queue));
        let mut first = Some(first);
        for i in 0..n.max(1) {
            let queue = Arc::clone(&queue);
            let target = target.clone();
            let client = first.take();
            std::thread::Builder::new()
                .name(format!("lt-pg-reader-{i}"))
                .spawn(move || serve(&target, client, &queue))?;
        }
        Ok(Readers {
            jobs: Mutex::new(Some(jobs)),
            target: target.clone(),
        })
    }

    /// Runs `f` on a reader's connection and returns its answer. Errors
    /// name the store and `what` failed (never the password).
    pub fn read<T: Send + 'static>(
        &self,
        what: &str,
        f: impl Fn(&mut Client) -> Result<T, postgres::Error> + Send + 'static,
    ) -> Result<T, StoreError> {
        let (reply, answer) = mpsc::sync_channel::<Result<T, String>>(1);
        let job: Job = Box::new(move |client, target| {
            let _ = reply.send(run_read(client, target, &f));
        });
        let gone = || {
            StoreError::Io(io::Error::other(format!(
                "the store {} {what}: its reader threads have stopped",
                self.target.name
            )))
        };
        {
            let jobs = self.jobs.lock().unwrap_or_else(PoisonError::into_inner);
            let jobs = jobs.as_ref().ok_or_else(gone)?;
            jobs.send(job).map_err(|_| gone())?;
        }
        match answer.recv() {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(e)) => Err(StoreError::Io(io::Error::other(format!(
                "the store {} {what}: {e}",
                self.target.name
            )))),
            Err(_) => Err(gone()),
        }
    }

    /// Stops the threads (once their current job is done).
    pub fn stop(&self) {
        self.jobs
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
    }
}

/// Runs `f` on `client` (connected first when it is not), once more on a
/// new connection when the connection was lost under it.
fn run_read<T>(
    client: &mut Option<Client>,
    target: &Target,
    f: &impl Fn(&mut Client) -> Result<T, postgres::Error>,
) -> Result<T, String> {
    let mut last = String::new();
    for _ in 0..2 {
        if client.as_ref().is_none_or(Client::is_closed) {
            *client = None;
            *client = Some(target.connect().map_err(|e| e.to_string())?);
        }
        let Some(c) = client.as_mut() else {
            break;
        };
        match f(c) {
            Ok(v) => return Ok(v),
            Err(e) if super::url::is_lost(&e) || c.is_closed() => {
                last = target.scrub(&e);
                *client = None;
            }
            Err(e) => return Err(target.scrub(&e)),
        }
    }
    Err(last)
}

/// A reader thread: takes jobs until the queue closes.
fn serve(target: &Target, mut client: Option<Client>, queue: &Mutex<Receiver<Job>>) {
    loop {
        let job = {
            let queue = queue.lock().unwrap_or_else(PoisonError::into_inner);
            match queue.recv() {
                Ok(job) => job,
                Err(_) => return,
            }
        };
        job(&mut client, target);
    }
}
