//! The followers of sessions (the SSE streams): a change counter per
//! watched session, and the lines it committed lately, so a stream sends
//! a new event without reading it back from the store.
//!
//! ```text
//! store ──Committed {session, seq, line}──▶ Followers::committed
//!          ─▶ the session's ring (its last RING lines, contiguous) ─▶ bump
//! SSE pump: changed() ─▶ Followers::recent_after(id, next)
//!          Some(lines): every line from `next` on (maybe none)
//!          None: the ring does not reach back to `next` ─▶ read the store
//! ```
//!
//! A session this server starts is followed from before its first event
//! (`pin`), so a stream opened at once reads nothing from the store; its
//! end (`ended`: the final output) is kept with its ring for the last
//! FINISHED sessions, so a stream sends the output without reading the
//! record back either.
//!
//! Invariant: a ring holds consecutive `seq`s only, from `base` on. A
//! notice that does not continue it (the commit channel lagged, a stream
//! opened late) empties it first, so a reader is sent to the store rather
//! than past a gap. An entry lives while a stream follows it, while its
//! session runs here (pinned), or among the last FINISHED ended ones.

use super::store::SessionRecord;
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use tokio::sync::watch;

/// Lines kept per followed session (older ones are read from the store).
const RING: usize = 256;

/// Ended sessions whose ring and output are kept for late streams.
const FINISHED: usize = 1024;

/// One followed session.
struct Followed {
    changes: watch::Sender<u64>,
    ring: VecDeque<(u64, Arc<str>)>,
    /// The ring holds every committed line from this `seq` on (`None`:
    /// unknown until the next notice).
    base: Option<u64>,
    /// Its session runs here: kept with no follower.
    pinned: bool,
    /// Its final output (JSON text), once its final status committed.
    end: Option<Arc<str>>,
    /// Its record then, when this server could tell it without a read.
    record: Option<Arc<SessionRecord>>,
}

impl Followed {
    fn new(base: Option<u64>, pinned: bool) -> Followed {
        Followed {
            changes: watch::channel(0).0,
            ring: VecDeque::new(),
            base,
            pinned,
            end: None,
            record: None,
        }
    }

    /// Nobody needs it any more.
    fn idle(&self) -> bool {
        self.changes.receiver_count() == 0 && !self.pinned && self.end.is_none()
    }
}

/// The followed sessions, by id.
#[derive(Default)]
pub struct Followers {
    map: Mutex<HashMap<String, Followed>>,
    /// Ended sessions, oldest first (at most [`FINISHED`]).
    finished: Mutex<VecDeque<String>>,
}

impl Followers {
    fn map(&self) -> MutexGuard<'_, HashMap<String, Followed>> {
        self.map.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A receiver that changes whenever an event of session `id` commits
    /// or [`Followers::bump`] names it (it may also change for no reason).
    /// Take it before the first read of the store: nothing commits unseen.
    /// Give it back with [`Followers::release`].
    pub fn watch(&self, id: &str) -> watch::Receiver<u64> {
        self.map()
            .entry(id.to_string())
            .or_insert_with(|| Followed::new(None, false))
            .changes
            .subscribe()
    }

    /// A stream of session `id` stops following it (`rx` from
    /// [`Followers::watch`]); the entry goes when nobody needs it.
    /// `true`: no stream here watches the session any more.
    pub fn release(&self, id: &str, rx: watch::Receiver<u64>) -> bool {
        drop(rx);
        let mut map = self.map();
        let Some(f) = map.get(id) else { return true };
        let unwatched = f.changes.receiver_count() == 0;
        if f.idle() {
            map.remove(id);
        }
        unwatched
    }

    /// Session `id` starts here with no event yet: its ring is complete
    /// from `seq` 0 and kept until [`Followers::ended`].
    pub fn pin(&self, id: &str) {
        let mut map = self.map();
        let f = map
            .entry(id.to_string())
            .or_insert_with(|| Followed::new(Some(0), true));
        f.pinned = true;
    }

    /// Session `id`'s final status committed with `output`, or (`None`) it
    /// stopped running here without one. Its entry is kept among the last
    /// `FINISHED` ended sessions.
    pub fn ended(&self, id: &str, output: Option<Arc<str>>) {
        self.ended_as(id, output, None);
    }

    /// [`Followers::ended`], keeping `record`, the session's final record,
    /// with its output (for [`Followers::final_record`]).
    pub fn ended_as(&self, id: &str, output: Option<Arc<str>>, record: Option<SessionRecord>) {
        let mut map = self.map();
        let Some(f) = map.get_mut(id) else {
            return;
        };
        f.pinned = false;
        f.record = output.as_ref().and(record).map(Arc::new);
        f.end = output;
        f.changes.send_modify(|n| *n += 1);
        if f.end.is_none() {
            if f.idle() {
                map.remove(id);
            }
            return;
        }
        let mut finished = self.finished.lock().unwrap_or_else(PoisonError::into_inner);
        finished.push_back(id.to_string());
        while finished.len() > FINISHED {
            let Some(old) = finished.pop_front() else {
                break;
            };
            if let Some(f) = map.get_mut(&old) {
                f.end = None;
                f.record = None;
                if f.idle() {
                    map.remove(&old);
                }
            }
        }
    }

    /// Session `id`'s final output (JSON text) when it ended here lately.
    pub fn end_of(&self, id: &str) -> Option<Arc<str>> {
        self.map().get(id).and_then(|f| f.end.clone())
    }

    /// Session `id`'s final record when it ended here lately and was kept
    /// ([`Followers::ended_as`]): what the store holds for it, unread.
    pub fn final_record(&self, id: &str) -> Option<Arc<SessionRecord>> {
        self.map().get(id).and_then(|f| f.record.clone())
    }

    /// Tells session `id`'s followers (every follower with `None`) that
    /// something changed.
    pub fn bump(&self, id: Option<&str>) {
        let mut map = self.map();
        match id {
            Some(id) => {
                if let Some(f) = map.get(id) {
                    f.changes.send_modify(|n| *n += 1);
                }
            }
            None => map.values_mut().for_each(|f| {
                // Notices were lost: a ring may now miss lines.
                f.ring.clear();
                f.base = None;
                f.changes.send_modify(|n| *n += 1);
            }),
        }
    }

    /// Event `seq` of session `id` committed as `line`.
    pub fn committed(&self, id: &str, seq: u64, line: Arc<str>) {
        let mut map = self.map();
        let Some(f) = map.get_mut(id) else {
            return;
        };
        let next = f.ring.back().map(|(last, _)| *last + 1).or(f.base);
        if next != Some(seq) {
            f.ring.clear();
            f.base = Some(seq);
        }
        if f.ring.len() == RING {
            f.ring.pop_front();
            f.base = f.ring.front().map(|(first, _)| *first);
        }
        f.ring.push_back((seq, line));
        f.changes.send_modify(|n| *n += 1);
    }

    /// Session `id`'s committed lines from `seq` `next` on, when the ring
    /// reaches back that far (`Some(vec![])`: none committed since);
    /// `None`: read them from the store.
    pub fn recent_after(&self, id: &str, next: u64) -> Option<Vec<Arc<str>>> {
        let map = self.map();
        let f = map.get(id)?;
        if f.base? > next {
            return None;
        }
        Some(
            f.ring
                .iter()
                .filter(|(seq, _)| *seq >= next)
                .map(|(_, line)| Arc::clone(line))
                .collect(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(n: u64) -> Arc<str> {
        Arc::from(format!("line {n}").as_str())
    }

    #[test]
    fn a_ring_answers_only_what_it_holds_without_a_gap() {
        let f = Followers::default();
        let mut rx = f.watch("s");
        // Nothing yet: the store is asked.
        assert_eq!(f.recent_after("s", 0), None);
        f.committed("s", 3, line(3));
        f.committed("s", 4, line(4));
        assert!(rx.has_changed().expect("the sender is alive"));
        rx.mark_unchanged();
        // Seq 0..3 are not in the ring: the store is asked.
        assert_eq!(f.recent_after("s", 0), None);
        assert_eq!(f.recent_after("s", 3), Some(vec![line(3), line(4)]));
        assert_eq!(f.recent_after("s", 4), Some(vec![line(4)]));
        assert_eq!(f.recent_after("s", 5), Some(vec![]));
        // A notice that skips a seq empties the ring first.
        f.committed("s", 7, line(7));
        assert_eq!(f.recent_after("s", 5), None);
        assert_eq!(f.recent_after("s", 7), Some(vec![line(7)]));
        // Lost notices (a lagged channel) empty every ring.
        f.bump(None);
        assert_eq!(f.recent_after("s", 8), None);
        // A session nobody follows keeps nothing.
        f.committed("t", 0, line(0));
        assert_eq!(f.recent_after("t", 0), None);
    }

    #[test]
    fn a_ring_keeps_its_last_lines() {
        let f = Followers::default();
        let _rx = f.watch("s");
        for n in 0..(RING as u64 + 10) {
            f.committed("s", n, line(n));
        }
        assert_eq!(f.recent_after("s", 9), None);
        let tail = f.recent_after("s", 10).expect("held");
        assert_eq!(tail.len(), RING);
        assert_eq!(tail[0], line(10));
    }

    #[test]
    fn a_pinned_session_is_answered_from_seq_0_and_its_end_is_kept() {
        let f = Followers::default();
        f.pin("s");
        // Nothing committed yet, and the ring knows it: no store read.
        assert_eq!(f.recent_after("s", 0), Some(vec![]));
        f.committed("s", 0, line(0));
        f.committed("s", 1, line(1));
        assert_eq!(f.recent_after("s", 0), Some(vec![line(0), line(1)]));
        assert_eq!(f.end_of("s"), None);
        f.ended("s", Some(Arc::from("{\"ok\":true}")));
        assert_eq!(f.end_of("s").as_deref(), Some("{\"ok\":true}"));
        // A stream opened after the end still reads nothing from the store.
        let rx = f.watch("s");
        assert_eq!(f.recent_after("s", 0), Some(vec![line(0), line(1)]));
        f.release("s", rx);
        assert!(f.end_of("s").is_some(), "kept among the ended ones");
        // Only the last FINISHED ended sessions are kept.
        for n in 0..FINISHED {
            let id = format!("e{n}");
            f.pin(&id);
            f.ended(&id, Some(Arc::from("null")));
        }
        assert_eq!(f.end_of("s"), None);
        assert_eq!(f.recent_after("s", 0), None);
        assert_eq!(f.map().len(), FINISHED);
    }

    #[test]
    fn an_unpinned_entry_goes_with_its_last_stream() {
        let f = Followers::default();
        let a = f.watch("s");
        let b = f.watch("s");
        f.release("s", a);
        assert!(f.map().contains_key("s"));
        f.release("s", b);
        assert!(!f.map().contains_key("s"));
        // A session that stopped without an output is not kept.
        f.pin("t");
        f.ended("t", None);
        assert!(!f.map().contains_key("t"));
    }
}
