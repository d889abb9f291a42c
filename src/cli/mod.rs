//! The `lt` command line: argument parsing (clap), file reading, printing.
//! This is the only module that does I/O.
//!
//! Exit codes: 0 the program is well-typed; 1 it has errors (diagnostics were
//! printed); 2 usage or I/O error (bad arguments, missing file, not UTF-8,
//! unknown error code).
// The doc comments of the clap types below are the command line's `--help`
// text, written for a terminal (`DIR/<session id>.jsonl`, bare URLs,
// `[:PORT]`), not for rustdoc.
#![allow(
    rustdoc::broken_intra_doc_links,
    rustdoc::invalid_html_tags,
    rustdoc::bare_urls
)]

/// `println!` that reports failures through [`crate::frontend::note_write`] instead of panicking.
macro_rules! out {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let mut lock = std::io::stdout().lock();
        $crate::frontend::note_write(writeln!(lock, $($arg)*).and_then(|_| lock.flush()));
    }};
}

/// `eprintln!` that reports failures through [`crate::frontend::note_write`] instead of panicking.
macro_rules! err {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        $crate::frontend::note_write(writeln!(std::io::stderr().lock(), $($arg)*));
    }};
}

pub mod agent;
pub mod check;
pub mod diagnostics;
pub mod eval;
pub mod log_cmd;
pub mod mcp;
pub mod prompt;
pub mod remote;
pub mod replay;
pub mod resume;
pub mod run;
pub mod serve;
mod signals;
pub mod tools;
pub mod tools_file;

use crate::runtime::limits::Limits;

use clap::{Args, Parser, Subcommand, ValueEnum};
use std::io::IsTerminal;
use std::process::ExitCode;

pub use crate::frontend::{
    note_write, read_source, read_text, EXIT_DIAGNOSTICS, EXIT_OK, EXIT_RUN_FAILED, EXIT_USAGE,
    MAX_SOURCE_BYTES,
};

/// `lt run --timeout-ms`'s default.
const RUN_TIMEOUT_MS: u64 = 300_000;
/// `lt run --max-concat-mb`'s default.
const RUN_MAX_CONCAT_MB: usize = 4096;

/// lt: a typed tool-composition language (λ-Tool compatible).
#[derive(Parser, Debug)]
#[command(name = "lt", version, about, long_about = None)]
pub struct Cli {
    /// The command to run.
    #[command(subcommand)]
    pub command: Command,
}

/// What `lt --emit` prints in addition to the program's type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Emit {
    /// The type of every `let` binding.
    Types,
    /// The combinator IR the program lowers to.
    Ir,
}

/// `--otlp-endpoint` and its companions, shared by `lt run`, `lt agent`
/// and `lt serve` (`crate::otlp`).
#[derive(Args, Clone, Debug, Default)]
pub struct OtlpArgs {
    /// Export the session as an OpenTelemetry trace, posted over OTLP/HTTP
    /// (JSON) to URL (e.g. http://127.0.0.1:4318/v1/traces).
    #[arg(long, value_name = "URL")]
    pub otlp_endpoint: Option<String>,
    /// Also export each call's argument and result (off by default: they
    /// may hold personal data), each cut to --otlp-payload-limit bytes.
    #[arg(long, requires = "otlp_endpoint")]
    pub otlp_payloads: bool,
    /// The size limit of an exported argument or result, in bytes.
    #[arg(long, value_name = "BYTES", default_value_t = crate::otlp::DEFAULT_PAYLOAD_LIMIT, requires = "otlp_payloads")]
    pub otlp_payload_limit: usize,
}

impl OtlpArgs {
    /// The exporter's settings, when an endpoint was given.
    pub fn settings(&self) -> Option<crate::otlp::Settings> {
        self.otlp_endpoint
            .as_ref()
            .map(|endpoint| crate::otlp::Settings {
                endpoint: endpoint.clone(),
                payloads: self.otlp_payloads.then_some(self.otlp_payload_limit),
            })
    }
}

/// When to colour human output.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Color {
    /// When stderr is a terminal and `NO_COLOR` is unset.
    Auto,
    /// Always.
    Always,
    /// Never.
    Never,
}

/// `lt log` actions.
#[derive(Subcommand, Debug)]
pub enum LogAction {
    /// Print a readable timeline of a session.
    Show {
        /// The log file.
        file: String,
    },
    /// Check the hash chain: exit 0 when intact, 1 at the first problem.
    Verify {
        /// The log file.
        file: String,
        /// Print `{ok, events, problem, incomplete_tail, last_hash}` as JSON.
        #[arg(long)]
        json: bool,
    },
}

/// The subcommands.
#[derive(Subcommand, Debug)]
pub enum Command {
    /// Check a program: print its type and effects, or every diagnostic.
    Check {
        /// The program file, or `-` for standard input.
        file: String,
        /// Print one JSON object `{ok, type, effects, diagnostics}` on stdout.
        #[arg(long)]
        json: bool,
        /// Also print the types of intermediate bindings.
        #[arg(long, value_enum)]
        emit: Option<Emit>,
        /// Colour the diagnostics.
        #[arg(long, value_enum, default_value = "auto")]
        color: Color,
        /// A file with a `[profile]` table: also reject every call the
        /// profile would deny (allow list, deny list, effects).
        #[arg(long, value_name = "PROFILE_TOML")]
        profile: Option<String>,
        /// A declarations file (`tool`, `type` and `effect` declarations,
        /// as `lt tools import` writes): the program may use them without
        /// declaring them.
        #[arg(long, value_name = "DECLS_LT")]
        tools: Option<String>,
    },
    /// Check a program, then run it with the executors of a tools.toml.
    Run {
        /// The program file, or `-` for standard input.
        file: String,
        /// The tools.toml mapping each tool to an executor.
        #[arg(long, value_name = "TOOLS_TOML")]
        executors: Option<String>,
        /// A declarations file (as `lt tools import` writes): the program
        /// may use its declarations without declaring them.
        #[arg(long, value_name = "DECLS_LT")]
        tools: Option<String>,
        /// Print one JSON object `{ok, value, type, effects, calls, steps}` on stdout.
        #[arg(long)]
        json: bool,
        /// Print a line per tool call on stderr.
        #[arg(long, short)]
        verbose: bool,
        /// Most tool calls in the run.
        #[arg(long, value_name = "N", default_value_t = Limits::default().max_calls)]
        max_calls: u64,
        /// Most evaluation steps (fuel).
        #[arg(long, value_name = "N", default_value_t = Limits::default().max_steps)]
        max_steps: u64,
        /// Wall-clock limit of the whole run, in milliseconds (0: none).
        #[arg(long, value_name = "MS", default_value_t = RUN_TIMEOUT_MS)]
        timeout_ms: u64,
        /// Longest list a tool may return (longer: that call is an Err) or
        /// a library function (`range`, `concat`, `flatten`, `split` …) may
        /// build (longer: the run stops, exit 3).
        #[arg(long, value_name = "N", default_value_t = Limits::default().max_list_len)]
        max_list_len: usize,
        /// Most MiB all strings built by `++` may add up to.
        #[arg(long, value_name = "MIB", default_value_t = RUN_MAX_CONCAT_MB)]
        max_concat_mb: usize,
        /// Colour the diagnostics.
        #[arg(long, value_enum, default_value = "auto")]
        color: Color,
        /// A file with a `[profile]` table: the session's policy (default:
        /// the executors file's `[profile]`, else allow everything). With
        /// `--server`: the name of one of the tenant's profiles (default
        /// `default`).
        #[arg(long, value_name = "PROFILE_TOML")]
        profile: Option<String>,
        /// Write the session's event log (JSON Lines, hash-chained) to this
        /// file (with `--server`: the server's log, when the session ends).
        #[arg(long, value_name = "FILE")]
        log: Option<String>,
        /// Replace the file `--log` names when it already holds something
        /// (without it, lt refuses: the file may be an earlier session's log).
        #[arg(long)]
        force: bool,
        /// Run the program as a session of `lt serve` at this URL: the
        /// server runs it, the calls it routes to the client venue run
        /// here with the executors of `--executors`. The API key is read
        /// from the environment variable LT_API_KEY.
        #[arg(long, value_name = "URL")]
        server: Option<String>,
        /// The session exported as an OpenTelemetry trace.
        #[command(flatten)]
        otlp: OtlpArgs,
    },
    /// Serve MCP over stdio: typed code mode for any MCP client (tools
    /// run_program, check_program, search_tools, describe_tools;
    /// docs/cli.md).
    Mcp {
        /// The declarations of the tools programs may call (as `lt tools
        /// import` writes them).
        #[arg(long, value_name = "DECLS_LT")]
        tools: String,
        /// The tools.toml mapping each tool to an executor.
        #[arg(long, value_name = "TOOLS_TOML")]
        executors: String,
        /// A file with a `[profile]` table: every program's policy
        /// (default: the executors file's `[profile]`, else allow everything).
        #[arg(long, value_name = "PROFILE_TOML")]
        profile: Option<String>,
        /// Write each run's event log to DIR/<session id>.jsonl (`lt replay` reads it).
        #[arg(long, value_name = "DIR")]
        log_dir: Option<String>,
        /// Most tool calls in one run.
        #[arg(long, value_name = "N", default_value_t = Limits::default().max_calls)]
        max_calls: u64,
        /// Most evaluation steps (fuel) of one run.
        #[arg(long, value_name = "N", default_value_t = Limits::default().max_steps)]
        max_steps: u64,
        /// Wall-clock limit of one run, in milliseconds (0: none).
        #[arg(long, value_name = "MS", default_value_t = RUN_TIMEOUT_MS)]
        timeout_ms: u64,
        /// Longest wait for the person's answer to an approval question
        /// (MCP elicitation), in milliseconds, whatever the run's deadline;
        /// no answer by then is a refusal.
        #[arg(long, value_name = "MS", default_value_t = crate::mcp_server::approval::APPROVAL_WAIT_MS, value_parser = clap::value_parser!(u64).range(1..))]
        approval_timeout_ms: u64,
        /// Serve MCP over streamable HTTP at http://ADDR/mcp instead of
        /// stdio (port 0: any free port; the address is printed on stderr).
        #[arg(long, value_name = "ADDR")]
        http: Option<String>,
        /// With --http: an origin browser requests may come from (e.g.
        /// `http://localhost:*`); repeatable. Requests with any other
        /// `Origin` are refused.
        #[arg(long = "allow-origin", value_name = "ORIGIN")]
        allow_origin: Vec<String>,
        /// With --http: the environment variable holding the bearer token
        /// every request must carry (`Authorization: Bearer …`).
        #[arg(long, value_name = "VAR")]
        token_env: Option<String>,
    },
    /// Run the control plane as a service: sessions over HTTP, logs in a
    /// store, a web console at / (docs/api.md, docs/console.md).
    Serve {
        /// The server's configuration: tenants, keys, tools, profiles
        /// (default: ./serve.toml when it exists).
        #[arg(long, value_name = "SERVE_TOML")]
        config: Option<String>,
        /// The address to listen on (default 127.0.0.1:8080; port 0: any
        /// free port).
        #[arg(long, value_name = "ADDR")]
        listen: Option<String>,
        /// The store: sqlite:PATH (default sqlite:lt-data/lt.db) or
        /// postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE.
        #[arg(long, value_name = "URL")]
        store: Option<String>,
        /// Create or migrate the store's schema, print its version, and
        /// exit (serves nothing).
        #[arg(long)]
        migrate_only: bool,
        /// Print the line serve.toml stores for API key KEY (`-`: read it
        /// from stdin), and exit.
        #[arg(long, value_name = "KEY")]
        hash_key: Option<String>,
        /// Every session exported as an OpenTelemetry trace.
        #[command(flatten)]
        otlp: OtlpArgs,
    },
    /// Re-run a session from its event log, calling no tool, and check that
    /// it makes the same calls and reaches the same value.
    Replay {
        /// The event log (`lt run --log`).
        log: String,
        /// Replay this program instead of the recorded one.
        #[arg(long, value_name = "FILE")]
        program: Option<String>,
        /// Replay under this profile instead of the recorded one.
        #[arg(long, value_name = "PROFILE_TOML")]
        profile: Option<String>,
        /// Print a JSON report.
        #[arg(long)]
        json: bool,
    },
    /// Continue a session that stopped without ending (a crash): replay its
    /// log, then run live, appending to the same log.
    Resume {
        /// The event log of the session (`lt run --log`).
        log: String,
        /// The tools.toml mapping each tool to an executor.
        #[arg(long, value_name = "TOOLS_TOML")]
        executors: Option<String>,
        /// Print one JSON object `{ok, value, type, effects, calls, steps}` on stdout.
        #[arg(long)]
        json: bool,
        /// Print a line per tool call on stderr.
        #[arg(long, short)]
        verbose: bool,
        /// Colour the diagnostics.
        #[arg(long, value_enum, default_value = "auto")]
        color: Color,
    },
    /// Read an event log: `lt log show FILE`, `lt log verify FILE`.
    Log {
        /// What to do.
        #[command(subcommand)]
        action: LogAction,
    },
    /// Speak λ-Tool's `lambda_tool` protocol (docs/protocol.md), as the
    /// `lambda_tool` binary does: `lt compat --json [--typecheck |
    /// --interactive FILE] [--log FILE] [--profile FILE]`.
    #[command(disable_help_flag = true)]
    Compat {
        /// The `lambda_tool` arguments.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// Tool schemas in and out: `lt tools import FILE`, `lt tools import
    /// --mcp -- COMMAND…`, `lt tools export --format openai|anthropic|mcp FILE`.
    Tools {
        /// What to do.
        #[command(subcommand)]
        action: tools::ToolsAction,
    },
    /// Print the system prompt for a model: the guide to lt
    /// (docs/llm-guide.md), then the declarations of a tools file.
    Prompt {
        /// The declarations file (`tool`, `type` and `effect` declarations), or `-`.
        #[arg(long, value_name = "DECLS_LT")]
        tools: String,
        /// Colour the diagnostics.
        #[arg(long, value_enum, default_value = "auto")]
        color: Color,
    },
    /// Run a suite of cases N times each, check every run's log and the
    /// acceptance criteria, report success rates; a CI gate (docs/eval.md).
    Eval {
        /// The suite file.
        suite: Option<String>,
        /// Replay every session log (`*.jsonl`) in DIR with this lt instead
        /// of running a suite; exit 1 if any diverges.
        #[arg(long, value_name = "DIR")]
        replay: Option<String>,
        /// Runs per case.
        #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
        runs: u64,
        /// Most runs at once.
        #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u64).range(1..=256))]
        jobs: u64,
        /// Print one JSON object on stdout instead of the table.
        #[arg(long)]
        json: bool,
        /// Also write a JUnit XML report to FILE.
        #[arg(long, value_name = "FILE")]
        junit: Option<String>,
        /// Also write a self-contained HTML report (a chart of the success
        /// rate per case and configuration) to FILE.
        #[arg(long, value_name = "FILE")]
        html: Option<String>,
        /// Fail (exit 1) when a case's success rate is below R (default: 1, every run passes).
        #[arg(long, value_name = "R")]
        min_success: Option<f64>,
        /// Fail (exit 1) when a case's rate fell below the rate in FILE (an `lt eval --json` output).
        #[arg(long, value_name = "FILE")]
        baseline: Option<String>,
        /// Also run OTHER.toml (another configuration of the same cases) and
        /// report the difference per case and overall.
        #[arg(long, value_name = "OTHER_TOML")]
        compare: Option<String>,
        /// Colour the diagnostics.
        #[arg(long, value_enum, default_value = "auto")]
        color: Color,
    },
    /// The LLM loop: a model proposes programs, lt checks them (feeding the
    /// diagnostics back) and runs the accepted ones, until the model answers.
    Agent {
        /// The task, in words.
        task: String,
        /// The session's tool declarations (a `.lt` file of `tool`, `type`
        /// and `effect` declarations).
        #[arg(long, value_name = "DECLS_LT")]
        tools: String,
        /// The tools.toml mapping each tool to an executor.
        #[arg(long, value_name = "TOOLS_TOML")]
        executors: Option<String>,
        /// A file with a `[profile]` table (the runs' policy) and an
        /// optional `[agent]` table (the loop's settings).
        #[arg(long, value_name = "PROFILE_TOML")]
        profile: Option<String>,
        /// A rule table: a classifier call labels the task and the label's
        /// rule picks the profile and trace requirements.
        #[arg(long, value_name = "RULES_TOML")]
        rules: Option<String>,
        /// `openai` (any OpenAI-compatible chat-completions API), `anthropic`
        /// (the Messages API), or `stdio` (the host answers model requests
        /// as JSON lines).
        #[arg(long, default_value = "openai")]
        provider: String,
        /// The model's name.
        #[arg(long)]
        model: Option<String>,
        /// The API's base URL (default: https://api.openai.com/v1 or
        /// https://api.anthropic.com).
        #[arg(long, value_name = "URL")]
        base_url: Option<String>,
        /// The environment variable holding the API key (default:
        /// OPENAI_API_KEY or ANTHROPIC_API_KEY).
        #[arg(long, value_name = "NAME")]
        api_key_env: Option<String>,
        /// Proposals per turn (the first and each correction).
        #[arg(long, value_name = "N")]
        max_attempts: Option<u32>,
        /// Programs run before the model must have answered.
        #[arg(long, value_name = "N")]
        max_turns: Option<u32>,
        /// Programs asked for per attempt (consensus).
        #[arg(long, value_name = "N")]
        samples: Option<u32>,
        /// How many samples must be the same program (default: a majority).
        #[arg(long, value_name = "K")]
        agree: Option<u32>,
        /// Most tokens per model reply.
        #[arg(long, value_name = "N")]
        max_tokens: Option<u32>,
        /// Timeout of one model request, in milliseconds.
        #[arg(long, value_name = "MS", default_value_t = 120_000)]
        request_timeout_ms: u64,
        /// Retries of a failed model request (transport errors, 429, 5xx,
        /// timeouts, malformed replies), with exponential backoff.
        #[arg(long, value_name = "N", default_value_t = 4)]
        max_retries: u32,
        /// Most tool calls in each run.
        #[arg(long, value_name = "N", default_value_t = Limits::default().max_calls)]
        max_calls: u64,
        /// Most evaluation steps in each run.
        #[arg(long, value_name = "N", default_value_t = Limits::default().max_steps)]
        max_steps: u64,
        /// Wall-clock limit of each run, in milliseconds (0: none).
        #[arg(long, value_name = "MS", default_value_t = 300_000)]
        timeout_ms: u64,
        /// Write the session's event log (requests, replies, checks, runs).
        #[arg(long, value_name = "FILE")]
        log: Option<String>,
        /// Replace the file `--log` names when it already holds something.
        #[arg(long)]
        force: bool,
        /// Print one JSON object `{ok, status, answer, reason, turns, …}`.
        #[arg(long)]
        json: bool,
        /// A line per step on stderr.
        #[arg(long, short)]
        verbose: bool,
        /// Colour the diagnostics.
        #[arg(long, value_enum, default_value = "auto")]
        color: Color,
        /// The agent session exported as an OpenTelemetry trace.
        #[command(flatten)]
        otlp: OtlpArgs,
    },
    /// Print the explanation of an error code, e.g. `lt explain E0202`.
    Explain {
        /// The code (`E0202`, `e0202` or `202`).
        code: String,
    },
}

/// Runs the command line `args` (including the program name).
pub fn main_with_args(args: Vec<String>) -> ExitCode {
    ExitCode::from(exit_status(args))
}

/// Runs the command line `args` (including the program name) and returns
/// its exit status (the `lt` command of the Python wheel exits with it).
pub fn exit_status(args: Vec<String>) -> u8 {
    let cli = match Cli::try_parse_from(args) {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() { EXIT_USAGE } else { EXIT_OK };
        }
    };
    let code = match cli.command {
        Command::Check {
            file,
            json,
            emit,
            color,
            profile,
            tools,
        } => check::run(
            &file,
            json,
            emit,
            color_on(color),
            profile.as_deref(),
            tools.as_deref(),
        ),
        Command::Run {
            file,
            executors,
            tools,
            json,
            verbose,
            max_calls,
            max_steps,
            timeout_ms,
            max_list_len,
            max_concat_mb,
            color,
            profile,
            log,
            force,
            server,
            otlp,
        } => {
            let defaults = Limits::default();
            let local_only: Vec<&str> = [
                (max_calls != defaults.max_calls, "--max-calls"),
                (max_steps != defaults.max_steps, "--max-steps"),
                (timeout_ms != RUN_TIMEOUT_MS, "--timeout-ms"),
                (max_list_len != defaults.max_list_len, "--max-list-len"),
                (max_concat_mb != RUN_MAX_CONCAT_MB, "--max-concat-mb"),
            ]
            .into_iter()
            .filter_map(|(given, flag)| given.then_some(flag))
            .collect();
            let limits = Limits {
                max_calls,
                max_steps,
                timeout: (timeout_ms > 0).then(|| std::time::Duration::from_millis(timeout_ms)),
                max_list_len,
                max_string_total_bytes: max_concat_mb.saturating_mul(1024 * 1024),
                ..Limits::default()
            };
            let opts = run::RunOptions {
                file,
                executors,
                tools,
                json,
                verbose,
                color: color_on(color),
                limits,
                profile,
                log,
                force,
                otlp: otlp.settings(),
            };
            if server.is_some() && otlp.otlp_endpoint.is_some() {
                err!("error: --otlp-endpoint is for a session run here; with --server, give it to lt serve");
                return EXIT_USAGE;
            }
            match server {
                Some(url) => remote::run(&opts, &url, &local_only),
                None => run::run(&opts),
            }
        }
        Command::Log { action } => log_cmd::run(action),
        Command::Mcp {
            tools,
            executors,
            profile,
            log_dir,
            max_calls,
            max_steps,
            timeout_ms,
            approval_timeout_ms,
            http,
            allow_origin,
            token_env,
        } => mcp::run(&mcp::McpOptions {
            http,
            allow_origin,
            token_env,
            catalog: crate::mcp_server::CatalogOptions {
                tools,
                executors,
                profile,
                log_dir: log_dir.map(std::path::PathBuf::from),
                limits: Limits {
                    max_calls,
                    max_steps,
                    timeout: (timeout_ms > 0).then(|| std::time::Duration::from_millis(timeout_ms)),
                    ..Limits::default()
                },
                approval_wait: std::time::Duration::from_millis(approval_timeout_ms),
            },
        }),
        Command::Serve {
            config,
            listen,
            store,
            migrate_only,
            hash_key,
            otlp,
        } => serve::run(
            config,
            listen,
            store,
            migrate_only,
            hash_key,
            otlp.settings(),
        ),
        Command::Replay {
            log,
            program,
            profile,
            json,
        } => replay::run(&replay::ReplayOptions {
            log,
            program,
            profile,
            json,
        }),
        Command::Resume {
            log,
            executors,
            json,
            verbose,
            color,
        } => resume::run(&resume::ResumeOptions {
            log,
            executors,
            json,
            verbose,
            color: color_on(color),
        }),
        Command::Compat { args } => crate::compat::run(&args),
        Command::Tools { action } => tools::run(action),
        Command::Prompt { tools, color } => prompt::run(&tools, color_on(color)),
        Command::Agent {
            task,
            tools,
            executors,
            profile,
            rules,
            provider,
            model,
            base_url,
            api_key_env,
            max_attempts,
            max_turns,
            samples,
            agree,
            max_tokens,
            request_timeout_ms,
            max_retries,
            max_calls,
            max_steps,
            timeout_ms,
            log,
            force,
            json,
            verbose,
            color,
            otlp,
        } => agent::run(&agent::AgentOptions {
            task,
            tools,
            executors,
            profile,
            rules,
            provider,
            model,
            base_url,
            api_key_env,
            request_timeout_ms,
            max_retries,
            table: crate::agent::config::AgentTable {
                max_attempts,
                max_turns,
                samples,
                agree,
                max_tokens,
                ..Default::default()
            },
            limits: Limits {
                max_calls,
                max_steps,
                timeout: (timeout_ms > 0).then(|| std::time::Duration::from_millis(timeout_ms)),
                ..Limits::default()
            },
            log,
            force,
            json,
            verbose,
            color: color_on(color),
            otlp: otlp.settings(),
        }),
        Command::Eval {
            suite,
            replay,
            runs,
            jobs,
            json,
            junit,
            html,
            min_success,
            baseline,
            compare,
            color,
        } => eval::run(&eval::EvalOptions {
            suite,
            replay,
            runs: runs as usize,
            jobs: jobs as usize,
            json,
            junit,
            html,
            min_success,
            baseline,
            compare,
            color: color_on(color),
        }),
        Command::Explain { code } => explain(&code),
    };
    if crate::frontend::take_write_failed() {
        // The output is incomplete: say so where it can still be seen.
        let _ =
            std::io::Write::write_all(&mut std::io::stderr(), b"error: cannot write the output\n");
        return EXIT_USAGE;
    }
    code
}

/// Whether to colour stderr's human output.
pub(crate) fn color_on(color: Color) -> bool {
    match color {
        Color::Always => true,
        Color::Never => false,
        Color::Auto => std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none(),
    }
}

fn explain(text: &str) -> u8 {
    match crate::diag::Code::parse(text) {
        Some(code) => match code.page() {
            Some(page) => {
                {
                    use std::io::Write as _;
                    let mut lock = std::io::stdout().lock();
                    crate::frontend::note_write(write!(lock, "{page}").and_then(|_| lock.flush()));
                }
                EXIT_OK
            }
            None => {
                err!(
                    "error: {code} ({}) has no explanation page yet",
                    code.title()
                );
                EXIT_USAGE
            }
        },
        None => {
            let all: Vec<&str> = crate::diag::Code::ALL.iter().map(|c| c.as_str()).collect();
            err!(
                "error: `{text}` is not an lt error code\n  the codes are: {}",
                all.join(" ")
            );
            EXIT_USAGE
        }
    }
}
