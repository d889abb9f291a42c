//! What the command-line front ends (`cli`, `compat`) share, below both:
//! exit codes, reading a program from a file or stdin, and noting output
//! that could not be written.
//!
//! A failed write is noted per thread: a command runs on one thread
//! (`main_with_args`), so one command's failure is never another's, and
//! nothing here is a process-wide flag.

use std::cell::Cell;
use std::io::Read;

/// Exit status: success.
pub const EXIT_OK: u8 = 0;
/// Exit status: the program has errors.
pub const EXIT_DIAGNOSTICS: u8 = 1;
/// Exit status: usage or I/O error (bad arguments, unreadable file, invalid
/// `tools.toml`, a called tool without an executor).
pub const EXIT_USAGE: u8 = 2;
/// Exit status: the run stopped (a limit was hit, or an internal error).
pub const EXIT_RUN_FAILED: u8 = 3;

thread_local! {
    /// Set when writing the command's output failed for a reason other than
    /// a closed pipe (a full disk, say); the command then exits with
    /// [`EXIT_USAGE`].
    static WRITE_FAILED: Cell<bool> = const { Cell::new(false) };
}

/// Records a failed write: a closed pipe (`lt … | head -1`) is a reader that
/// stopped early, not an error; anything else is.
pub fn note_write(result: std::io::Result<()>) {
    if let Err(e) = result {
        if e.kind() != std::io::ErrorKind::BrokenPipe {
            note_write_failure();
        }
    }
}

/// Records that the command's output could not be written whole.
pub fn note_write_failure() {
    WRITE_FAILED.with(|f| f.set(true));
}

/// Whether a write failed since the last call (on this thread); resets it.
pub fn take_write_failed() -> bool {
    WRITE_FAILED.with(|f| f.replace(false))
}

/// The largest program `lt` reads, in bytes (64 MiB): far beyond any real
/// program, and a bound on memory for inputs such as `/dev/zero`.
pub const MAX_SOURCE_BYTES: usize = 64 * 1024 * 1024;

/// Reads at most [`MAX_SOURCE_BYTES`] from `reader`, in 64 KiB chunks.
fn read_limited(reader: &mut dyn Read, what: &str) -> Result<Vec<u8>, String> {
    let mut buf = Vec::new();
    let mut chunk = vec![0u8; 64 * 1024];
    loop {
        let n = match reader.read(&mut chunk) {
            Ok(0) => return Ok(buf),
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(format!("cannot read {what}: {e}")),
        };
        if buf.len() + n > MAX_SOURCE_BYTES {
            return Err(format!(
                "{what} is larger than {} MiB; lt programs are much smaller (is this the right file?)",
                MAX_SOURCE_BYTES / (1024 * 1024)
            ));
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}

/// Reads a program from `path` (`-` is stdin) as UTF-8 text, at most
/// [`MAX_SOURCE_BYTES`].
pub fn read_source(path: &str) -> Result<(String, String), String> {
    read_text(path, "lt programs are UTF-8 text")
}

/// Reads `path` (`-` is stdin) as UTF-8 text, at most [`MAX_SOURCE_BYTES`];
/// `utf8_rule` ends the message for a file that is not UTF-8.
pub fn read_text(path: &str, utf8_rule: &str) -> Result<(String, String), String> {
    let (name, bytes) = if path == "-" {
        (
            "<stdin>".to_string(),
            read_limited(&mut std::io::stdin().lock(), "standard input")?,
        )
    } else {
        let mut file = std::fs::File::open(path).map_err(|e| {
            let hint = match e.kind() {
                std::io::ErrorKind::NotFound => " (check the path; use `-` to read standard input)",
                _ => "",
            };
            format!("cannot read `{path}`: {e}{hint}")
        })?;
        (
            path.to_string(),
            read_limited(&mut file, &format!("`{path}`"))?,
        )
    };
    match String::from_utf8(bytes) {
        Ok(text) => Ok((name, text)),
        Err(e) => {
            let valid = e.utf8_error().valid_up_to();
            let prefix = String::from_utf8_lossy(&e.as_bytes()[..valid]);
            let line = prefix.matches('\n').count() + 1;
            let column = prefix.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
            Err(format!(
                "`{name}` is not valid UTF-8: invalid byte at line {line}, column {column} (byte offset {valid}); {utf8_rule}"
            ))
        }
    }
}

/// Whether `path` is the regular file this process's standard output is
/// Refuses to replace an earlier session's log: `path` is a regular file
/// that is not empty and `force` was not given. The `Err` is the message
/// and its help line. A device or a pipe (`--log /dev/stderr`) and an
/// empty file are written as they are.
pub fn refuse_replacing_log(path: &str, force: bool) -> Result<(), (String, String)> {
    let Ok(meta) = std::fs::metadata(path) else {
        return Ok(());
    };
    if force || !meta.is_file() || meta.len() == 0 {
        return Ok(());
    }
    Err((
        format!(
            "--log {path} already holds {} bytes (an earlier session's log?); lt does not replace a log silently",
            meta.len()
        ),
        if log_has_ended(path) {
            format!(
                "that session ended: look at it with `lt log show {path}` or `lt replay {path}`; write to another file, or give --force to replace it"
            )
        } else {
            format!(
                "continue that session with `lt resume {path}`, write to another file, or give --force to replace it"
            )
        },
    ))
}

/// Whether the log at `path` ends with `session_ended` (its last line,
/// read from the file's last 64 KiB; `false` when it cannot be read).
fn log_has_ended(path: &str) -> bool {
    use std::io::{Read as _, Seek as _, SeekFrom};
    let Ok(mut f) = std::fs::File::open(path) else {
        return false;
    };
    let len = f.metadata().map_or(0, |m| m.len());
    let mut tail = Vec::new();
    let read = f
        .seek(SeekFrom::Start(len.saturating_sub(64 * 1024)))
        .and_then(|_| f.read_to_end(&mut tail));
    if read.is_err() {
        return false;
    }
    let text = String::from_utf8_lossy(&tail);
    text.lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .is_some_and(|l| l.contains("\"kind\":\"session_ended\""))
}

/// redirected to (`--log /dev/stdout > out.txt`, or that file by name):
/// writing a log there and the result on stdout would overwrite each other.
/// A pipe or a terminal is not a regular file.
pub fn is_stdout_file(path: &str) -> bool {
    use std::os::unix::fs::MetadataExt as _;
    match (std::fs::metadata(path), std::fs::metadata("/dev/stdout")) {
        (Ok(a), Ok(out)) => out.is_file() && a.dev() == out.dev() && a.ino() == out.ino(),
        _ => false,
    }
}
