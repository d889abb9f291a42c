//! `lt tools export`. (Being written.)

use crate::schema::Dialect;

/// Runs `lt tools export`; returns the exit status.
pub fn run(format: Dialect, file: &str) -> u8 {
    let _ = (format, file);
    super::super::EXIT_USAGE
}
