//! A value alone on its cache lines (issue 28). The session's thread and
//! a pool thread hand each call over through a few atomics and locks; a
//! thread waiting for the other reads one of them in a loop. Had they
//! shared a cache line with what the other thread writes on its way (the
//! statics of the queue, the gate and the spinners sat in two lines), each
//! of those writes would take the line from the reader and back, on the
//! path of every call.

use std::ops::Deref;

/// `T` on cache lines of its own: aligned to, and a multiple of, 128
/// bytes (two lines, which x86 processors fetch in pairs).
#[repr(align(128))]
pub struct Padded<T>(pub T);

impl<T> Deref for Padded<T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.0
    }
}
