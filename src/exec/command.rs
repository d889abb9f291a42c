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
//! Process groups: every tool starts in a process group of its own (its
//! pid is the group id), and the whole group (the tool and everything it
//! started that did not leave the group) is sent SIGKILL when the call ends
//! in any way: on a timeout, on output overflow, after a normal exit (so
//! background children do not outlive the call), and when the call's future
//! is dropped unfinished (a [`Group`] kills on drop). The live groups are
//! kept in the executor host's [`ToolGroups`] (one per session, not per
//! process), so that cancelling the session ([`crate::runtime::cancel`])
//! kills them.
//!
//! The call ends when the process has exited and stdout and stderr have
//! reached end of file. If the process has exited but a background child
//! still holds them open, they are read for at most [`EXIT_GRACE`] more;
//! then the group is killed and what was read is used.

use super::text::{excerpt, parse_json, stderr_suffix, to_json_bytes, Tail};
use crate::runtime::host::{FailureKind, Outcome, ToolFailure};
use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;
use serde_json::Value as Json;
use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::{Child, ChildStdin, Command};
use tokio::time::Instant;

/// The most stdout a command tool (or body an HTTP tool) may produce: 64 MiB.
pub const MAX_OUTPUT_BYTES: usize = 64 * 1024 * 1024;

/// How much of the start and of the end of a tool's stderr is kept for
/// messages: 2 KiB each.
pub const STDERR_KEEP_BYTES: usize = 2 * 1024;

/// How long stdout and stderr are still read after a tool's process has
/// exited, when something else (a background child) holds them open:
/// 200 ms. After that the tool's process group is killed.
pub const EXIT_GRACE: Duration = Duration::from_millis(200);

// ---- process groups ----

/// The process groups of the running tools of one executor host (one
/// session, or an agent's sessions), by group id. Shared by every clone of
/// the host; [`ToolGroups::stop_all`] is what a session's cancellation runs.
#[derive(Debug, Default)]
pub(crate) struct ToolGroups {
    live: Mutex<Live>,
}

#[derive(Debug, Default)]
struct Live {
    groups: BTreeSet<i32>,
    /// Set by [`ToolGroups::stop_all`]: a group started after it is killed at once.
    stopping: bool,
}

impl ToolGroups {
    fn live(&self) -> MutexGuard<'_, Live> {
        // The registry stays consistent even if a holder panicked.
        self.live.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Kills the process group of every running tool of these groups (MCP
    /// servers included: they are started through [`Group::spawn`] too)
    /// and makes any tool that starts from now on be killed at once.
    /// Returns how many groups were running. There is no way back.
    /// Later calls kill again and return 0: the count is of the groups
    /// running when stopping began.
    pub(crate) fn stop_all(&self) -> usize {
        let mut live = self.live();
        let first = !live.stopping;
        live.stopping = true;
        for &pgid in &live.groups {
            let _ = killpg(Pid::from_raw(pgid), Signal::SIGKILL);
        }
        if first {
            live.groups.len()
        } else {
            0
        }
    }
}

/// A running tool's process group, registered while it lives. Dropping it
/// kills the group (SIGKILL to every member) and unregisters it.
///
/// The group id is the tool's pid. While the tool is unreaped, or any member
/// of its group lives, the kernel does not hand that number to another
/// process or group, so the kill reaches no stranger; once the group is
/// empty, the kill fails harmlessly with ESRCH (short of the pid counter
/// wrapping around within the microseconds between the reap and the kill).
#[derive(Debug)]
pub(crate) struct Group {
    pgid: Pid,
    owner: Arc<ToolGroups>,
}

impl Group {
    /// Spawns `command` (which must ask for a new process group) and
    /// registers its group in `owner`. The registry is locked across the
    /// spawn, so [`ToolGroups::stop_all`] never misses a tool that is just
    /// starting.
    pub(crate) fn spawn(
        command: &mut Command,
        owner: &Arc<ToolGroups>,
    ) -> std::io::Result<(Child, Group)> {
        let mut live = owner.live();
        let child = command.spawn()?;
        let pid = child
            .id()
            .and_then(|id| i32::try_from(id).ok())
            .ok_or_else(|| std::io::Error::other("the new process has no pid"))?;
        let group = Group {
            pgid: Pid::from_raw(pid),
            owner: Arc::clone(owner),
        };
        if live.stopping {
            group.kill();
        }
        live.groups.insert(pid);
        Ok((child, group))
    }

    /// Sends SIGKILL to every process of the group (errors, such as an
    /// already empty group, are ignored).
    pub(crate) fn kill(&self) {
        let _ = killpg(self.pgid, Signal::SIGKILL);
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        self.kill();
        self.owner.live().groups.remove(&self.pgid.as_raw());
    }
}

/// Why `path` cannot be a working directory, if it cannot: `"does not
/// exist"`, `"is not a directory"` or the OS error.
pub(crate) fn dir_problem(path: &Path) -> Option<String> {
    match std::fs::metadata(path) {
        Ok(m) if m.is_dir() => None,
        Ok(_) => Some("is not a directory".to_string()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Some("does not exist".to_string()),
        Err(e) => Some(format!("cannot be used: {e}")),
    }
}

// ---- the executor ----

/// A `command` executor, its paths already resolved and checked
/// (`config.rs`).
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

/// How a pipe reader stopped.
enum Pipe {
    Eof,
    TooLarge,
    Failed(std::io::Error),
}

impl CommandTool {
    /// `written` is `command` as written (not empty); `program` is its
    /// first element resolved; `cwd` is absolute.
    pub(crate) fn new(
        written: Vec<String>,
        program: PathBuf,
        cwd: PathBuf,
        env: BTreeMap<String, String>,
        timeout: Duration,
    ) -> CommandTool {
        CommandTool {
            args: written.get(1..).unwrap_or_default().to_vec(),
            written,
            program,
            cwd,
            env,
            timeout,
        }
    }

    /// The parts an MCP server table shares with a command table, checked
    /// the same way (`config.rs`): `command` as written, the program to
    /// start, its arguments, the working directory and the environment.
    pub(crate) fn into_parts(
        self,
    ) -> (
        Vec<String>,
        PathBuf,
        Vec<String>,
        PathBuf,
        BTreeMap<String, String>,
    ) {
        (self.written, self.program, self.args, self.cwd, self.env)
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
    pub(crate) async fn call(
        &self,
        name: &str,
        arg: &Json,
        timeout: Duration,
        key: Option<&str>,
        groups: &Arc<ToolGroups>,
    ) -> Outcome {
        let deadline = Instant::now() + timeout;
        let fail = |kind, message| {
            Err(ToolFailure {
                kind,
                message,
                stderr: None,
            })
        };
        // Checked when tools.toml was loaded; it may have gone since.
        if let Some(problem) = dir_problem(&self.cwd) {
            return fail(
                FailureKind::Unavailable,
                format!(
                    "tool {name} could not be started: working directory {} {problem}",
                    self.cwd.display()
                ),
            );
        }
        let mut command = Command::new(&self.program);
        command
            .args(&self.args)
            .current_dir(&self.cwd)
            .envs(&self.env)
            .envs(key.map(|k| ("LT_IDEMPOTENCY_KEY", k)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true);
        let (mut child, group) = match Group::spawn(&mut command, groups) {
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
        let mut input = to_json_bytes(arg);
        input.push(b'\n');
        let (stdin, stdout, stderr) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take());

        let mut out = Vec::new();
        let mut err = Tail::new(STDERR_KEEP_BYTES);
        let ended = {
            let io = async {
                let (_, pipe, ()) = tokio::join!(
                    write_stdin(stdin, &input),
                    async {
                        let pipe = read_capped(stdout, &mut out, MAX_OUTPUT_BYTES).await;
                        if matches!(pipe, Pipe::TooLarge) {
                            // Stop the tool now: it would block on a full pipe.
                            group.kill();
                        }
                        pipe
                    },
                    read_tail(stderr, &mut err)
                );
                pipe
            };
            tokio::pin!(io);
            exchange(&mut child, &group, io, deadline).await
        };
        let Some((pipe, status)) = ended else {
            group.kill();
            // SIGKILL is not refused: the wait is short, and leaves no zombie.
            let _ = child.wait().await;
            return fail(
                FailureKind::TimedOut,
                format!("tool {name} timed out after {} ms", timeout.as_millis()),
            );
        };
        // The tool has exited: whatever it left running in its group goes too.
        drop(group);
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
        match pipe {
            // `None`: a process outside the group still held stdout after
            // the group was killed; what was read is all there is.
            Some(Pipe::Eof) | None => {}
            Some(Pipe::TooLarge) => {
                return fail(
                    FailureKind::BadOutput,
                    format!(
                        "tool {name} returned output larger than {} MiB; the process was stopped{}",
                        MAX_OUTPUT_BYTES / (1024 * 1024),
                        stderr_suffix(&stderr)
                    ),
                )
            }
            Some(Pipe::Failed(e)) => {
                return fail(
                    FailureKind::BadOutput,
                    format!(
                        "tool {name}: could not read its output: {e}{}",
                        stderr_suffix(&stderr)
                    ),
                )
            }
        }
        if !status.success() {
            return Err(exit_failure(name, status, &stderr));
        }
        parse_output(name, &out, &stderr)
    }
}

/// Drives the pipes (`io`, which yields how stdout ended) and waits for the
/// process, until `deadline`. `None`: the deadline passed first. Otherwise
/// how stdout ended (`None` if it never did; see below) and the exit status.
///
/// Once the process has exited, the pipes get [`EXIT_GRACE`] to reach end of
/// file; then the group is killed, which closes the copies its members hold,
/// and they get one more [`EXIT_GRACE`] before we stop reading.
async fn exchange(
    child: &mut Child,
    group: &Group,
    mut io: Pin<&mut impl Future<Output = Pipe>>,
    deadline: Instant,
) -> Option<(Option<Pipe>, std::io::Result<ExitStatus>)> {
    enum First {
        Pipes(Pipe),
        Exited(std::io::Result<ExitStatus>),
    }
    let first = tokio::time::timeout_at(deadline, async {
        tokio::select! {
            pipe = &mut io => First::Pipes(pipe),
            status = child.wait() => First::Exited(status),
        }
    })
    .await
    .ok()?;
    match first {
        First::Pipes(pipe) => {
            // stdout and stderr are closed; the process is (usually) ending.
            let status = tokio::time::timeout_at(deadline, child.wait()).await.ok()?;
            Some((Some(pipe), status))
        }
        First::Exited(status) => {
            let pipe = match tokio::time::timeout(EXIT_GRACE, &mut io).await {
                Ok(pipe) => Some(pipe),
                Err(_) => {
                    group.kill();
                    tokio::time::timeout(EXIT_GRACE, &mut io).await.ok()
                }
            };
            Some((pipe, status))
        }
    }
}

/// stdout of a successful run → the result. Empty (or only whitespace) → `null`.
pub(crate) fn parse_output(name: &str, stdout: &[u8], stderr: &str) -> Outcome {
    if stdout.iter().all(u8::is_ascii_whitespace) {
        return Ok(Json::Null);
    }
    if let Err(why) = super::text::check_shape(stdout) {
        return Err(ToolFailure {
            stderr: None,
            kind: FailureKind::BadOutput,
            message: format!(
                "tool {name} returned output that lt refuses: {why}{}",
                stderr_suffix(stderr)
            ),
        });
    }
    parse_json(stdout).map_err(|e| ToolFailure {
        stderr: None,
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
            stderr: None,
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
                stderr: None,
                kind: FailureKind::Crashed,
                message: format!("tool {name} crashed ({label}): {detail}"),
            };
        }
    }
    ToolFailure {
        stderr: None,
        kind: FailureKind::Crashed,
        message: format!("tool {name} ended abnormally ({status}): {detail}"),
    }
}

/// The name of a signal number, for the common ones.
#[cfg(unix)]
pub(crate) fn signal_name(signal: i32) -> Option<&'static str> {
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

/// Reads a pipe to its end into `out`, stopping early if it would hold
/// more than `limit` bytes.
async fn read_capped(
    pipe: Option<impl AsyncRead + Unpin>,
    out: &mut Vec<u8>,
    limit: usize,
) -> Pipe {
    let Some(mut pipe) = pipe else {
        return Pipe::Eof;
    };
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match pipe.read(&mut buf).await {
            Ok(0) => return Pipe::Eof,
            Ok(n) => {
                if out.len() + n > limit {
                    return Pipe::TooLarge;
                }
                out.extend_from_slice(&buf[..n]);
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Pipe::Failed(e),
        }
    }
}

/// Reads a pipe to its end into `tail`, which keeps only its first and
/// last [`STDERR_KEEP_BYTES`].
async fn read_tail(pipe: Option<impl AsyncRead + Unpin>, tail: &mut Tail) {
    let Some(mut pipe) = pipe else {
        return;
    };
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        match pipe.read(&mut buf).await {
            Ok(0) => return,
            Ok(n) => tail.push(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return,
        }
    }
}

/// `word` as a shell would need it written: plain if it is safe, quoted
/// otherwise.
pub(crate) fn shell_word(word: &str) -> String {
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
