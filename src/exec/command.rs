//! `command` executors: one subprocess per call.
//!
//! Protocol: the argument's JSON, on one line ending in `\n`, is written
//! to the process's stdin, which is then closed (a tool that never reads
//! stdin is fine: a broken pipe is ignored). stdout and stderr are read
//! concurrently with the write, so a tool that writes a lot before reading
//! cannot deadlock against us. On exit status 0, stdout is the result: JSON
//! text, or nothing (only whitespace), which means `null`. stdout is capped
//! at [`MAX_OUTPUT_BYTES`]; past it the process is killed and the call fails
//! as bad output. Of stderr only the first and last [`STDERR_KEEP_BYTES`]
//! are kept, for failure messages.
//!
//! The call ends when the process has exited *and* closed stdout and
//! stderr, so a background child still holding them keeps the call open
//! until its timeout. A timed-out process is sent SIGKILL and waited for (no
//! zombie is left); only the process itself is killed, not its children.

use super::text::{excerpt, stderr_suffix, Tail};
use crate::runtime::host::{FailureKind, Outcome, ToolFailure};
use serde_json::Value as Json;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::{ChildStdin, Command};

/// The most stdout a command tool (or body an HTTP tool) may produce: 64 MiB.
pub const MAX_OUTPUT_BYTES: usize = 64 * 1024 * 1024;

/// How much of the start and of the end of a tool's stderr is kept for
/// messages: 2 KiB each.
pub const STDERR_KEEP_BYTES: usize = 2 * 1024;

/// A `command` executor, its paths already resolved.
#[derive(Debug)]
pub(crate) struct CommandTool {
    /// `command` as written, for `describe`.
    written: Vec<String>,
    /// The program to start: `command[0]`, made absolute against the
    /// configuration folder if it is a relative path containing `/`.
    program: PathBuf,
    args: Vec<String>,
    cwd: PathBuf,
    env: BTreeMap<String, String>,
    pub(crate) timeout: Duration,
}

impl CommandTool {
    /// Resolves paths against `folder` (absolute). Errors: (message, help).
    pub(crate) fn new(
        argv: Vec<String>,
        cwd: Option<String>,
        env: BTreeMap<String, String>,
        timeout: Duration,
        folder: &Path,
    ) -> Result<CommandTool, (&'static str, Option<&'static str>)> {
        let Some(first) = argv.first() else {
            return Err((
                "`command` is empty",
                Some("give the program and its arguments, e.g. `command = [\"python3\", \"tools/x.py\"]`"),
            ));
        };
        if first.is_empty() {
            return Err((
                "the program name (first element of `command`) is empty",
                None,
            ));
        }
        let first_path = Path::new(first);
        let program = if first.contains('/') && first_path.is_relative() {
            folder.join(first_path)
        } else {
            first_path.to_path_buf()
        };
        let cwd = match cwd {
            Some(c) => folder.join(c),
            None => folder.to_path_buf(),
        };
        Ok(CommandTool {
            args: argv[1..].to_vec(),
            written: argv,
            program,
            cwd,
            env,
            timeout,
        })
    }

    pub(crate) fn describe(&self) -> String {
        let words: Vec<String> = self.written.iter().map(|w| shell_word(w)).collect();
        format!(
            "command {} (in {}, timeout {} ms)",
            words.join(" "),
            self.cwd.display(),
            self.timeout.as_millis()
        )
    }

    /// Runs the tool once with `arg` on stdin; gives up after `timeout`
    /// (already the smaller of the tool's and the run's).
    pub(crate) async fn call(&self, name: &str, arg: &Json, timeout: Duration) -> Outcome {
        let fail = |kind, message| Err(ToolFailure { kind, message });
        if !self.cwd.is_dir() {
            return fail(
                FailureKind::Unavailable,
                format!(
                    "tool {name} could not be started: working directory {} does not exist",
                    self.cwd.display()
                ),
            );
        }
        let mut command = Command::new(&self.program);
        command
            .args(&self.args)
            .current_dir(&self.cwd)
            .envs(&self.env)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let mut child = match command.spawn() {
            Ok(c) => c,
            Err(e) => {
                return fail(
                    FailureKind::Unavailable,
                    format!(
                        "tool {name} could not be started: {}: {e}",
                        self.program.display()
                    ),
                )
            }
        };
        let mut input = arg.to_string().into_bytes();
        input.push(b'\n');
        let (stdin, stdout, stderr) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take());

        let exchange = async {
            let (_, out, err) = tokio::join!(
                write_stdin(stdin, &input),
                async {
                    let out = read_capped(stdout, MAX_OUTPUT_BYTES).await;
                    if matches!(out, Read::TooLarge) {
                        // Stop the process now: it would block on a full pipe.
                        let _ = child.start_kill();
                    }
                    out
                },
                read_tail(stderr)
            );
            let status = child.wait().await;
            (out, err, status)
        };
        let finished = tokio::time::timeout(timeout, exchange).await;
        let (out, err, status) = match finished {
            Ok(r) => r,
            Err(_) => {
                let _ = child.start_kill();
                let _ = child.wait().await;
                return fail(
                    FailureKind::TimedOut,
                    format!("tool {name} timed out after {} ms", timeout.as_millis()),
                );
            }
        };
        let stderr = err.finish();
        let status = match status {
            Ok(s) => s,
            Err(e) => {
                return fail(
                    FailureKind::Unavailable,
                    format!("tool {name}: could not wait for the process: {e}"),
                )
            }
        };
        let stdout = match out {
            Read::Complete(bytes) => bytes,
            Read::TooLarge => {
                return fail(
                    FailureKind::BadOutput,
                    format!(
                        "tool {name} returned output larger than {} MiB; the process was stopped{}",
                        MAX_OUTPUT_BYTES / (1024 * 1024),
                        stderr_suffix(&stderr)
                    ),
                )
            }
            Read::Failed(e) => {
                return fail(
                    FailureKind::BadOutput,
                    format!(
                        "tool {name}: could not read its output: {e}{}",
                        stderr_suffix(&stderr)
                    ),
                )
            }
        };
        if !status.success() {
            return Err(exit_failure(name, status, &stderr));
        }
        parse_output(name, &stdout, &stderr)
    }
}

/// stdout of a successful run → the result. Empty (or only whitespace) → `null`.
pub(crate) fn parse_output(name: &str, stdout: &[u8], stderr: &str) -> Outcome {
    if stdout.iter().all(u8::is_ascii_whitespace) {
        return Ok(Json::Null);
    }
    serde_json::from_slice(stdout).map_err(|e| ToolFailure {
        kind: FailureKind::BadOutput,
        message: format!(
            "tool {name} returned output that is not JSON: {e} (output starts: {:?}){}",
            excerpt(stdout, 80),
            stderr_suffix(stderr)
        ),
    })
}

fn exit_failure(name: &str, status: ExitStatus, stderr: &str) -> ToolFailure {
    let detail = if stderr.is_empty() {
        "no output on stderr"
    } else {
        stderr
    };
    if let Some(code) = status.code() {
        return ToolFailure {
            kind: FailureKind::Failed,
            message: format!("tool {name} failed (exit status {code}): {detail}"),
        };
    }
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(signal) = status.signal() {
            let label = match signal_name(signal) {
                Some(n) => format!("signal {signal}, {n}"),
                None => format!("signal {signal}"),
            };
            return ToolFailure {
                kind: FailureKind::Crashed,
                message: format!("tool {name} crashed ({label}): {detail}"),
            };
        }
    }
    ToolFailure {
        kind: FailureKind::Crashed,
        message: format!("tool {name} ended abnormally ({status}): {detail}"),
    }
}

/// The name of a signal number, for the common ones.
#[cfg(unix)]
fn signal_name(signal: i32) -> Option<&'static str> {
    Some(match signal {
        1 => "SIGHUP",
        2 => "SIGINT",
        3 => "SIGQUIT",
        4 => "SIGILL",
        5 => "SIGTRAP",
        6 => "SIGABRT",
        8 => "SIGFPE",
        9 => "SIGKILL",
        11 => "SIGSEGV",
        13 => "SIGPIPE",
        14 => "SIGALRM",
        15 => "SIGTERM",
        #[cfg(target_os = "linux")]
        7 => "SIGBUS",
        #[cfg(target_os = "linux")]
        10 => "SIGUSR1",
        #[cfg(target_os = "linux")]
        12 => "SIGUSR2",
        #[cfg(target_os = "linux")]
        24 => "SIGXCPU",
        #[cfg(target_os = "linux")]
        25 => "SIGXFSZ",
        #[cfg(target_os = "linux")]
        31 => "SIGSYS",
        _ => return None,
    })
}

/// Writes `input` and closes stdin. Errors (a tool that exited without
/// reading: EPIPE) are ignored; the exit status tells the story.
async fn write_stdin(stdin: Option<ChildStdin>, input: &[u8]) {
    if let Some(mut stdin) = stdin {
        let _ = stdin.write_all(input).await;
        let _ = stdin.shutdown().await;
    }
}

enum Read {
    Complete(Vec<u8>),
    TooLarge,
    Failed(std::io::Error),
}

async fn read_capped(pipe: Option<impl AsyncRead + Unpin>, limit: usize) -> Read {
    let Some(mut pipe) = pipe else {
        return Read::Complete(Vec::new());
    };
    let mut out = Vec::new();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match pipe.read(&mut buf).await {
            Ok(0) => return Read::Complete(out),
            Ok(n) => {
                if out.len() + n > limit {
                    return Read::TooLarge;
                }
                out.extend_from_slice(&buf[..n]);
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Read::Failed(e),
        }
    }
}

/// Reads a pipe to its end keeping only its first and last
/// [`STDERR_KEEP_BYTES`].
async fn read_tail(pipe: Option<impl AsyncRead + Unpin>) -> Tail {
    let mut tail = Tail::new(STDERR_KEEP_BYTES);
    let Some(mut pipe) = pipe else {
        return tail;
    };
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        match pipe.read(&mut buf).await {
            Ok(0) => return tail,
            Ok(n) => tail.push(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return tail,
        }
    }
}

/// `word` as a shell would need it written: plain if it is safe, quoted
/// otherwise.
fn shell_word(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c));
    if plain {
        word.to_string()
    } else {
        format!("{word:?}")
    }
}
