//! The MCP side of `lt mcp`: an `rmcp` server handler with four tools.
//!
//! | tool | arguments | result |
//! |---|---|---|
//! | `run_program` | `{program}` | the value (structured) and the calls made; `isError` with every diagnostic when rejected, or with the calls that already ran when the run stopped |
//! | `check_program` | `{program}` | the type and effects, or every diagnostic |
//! | `search_tools` | `{query}` | the declarations of the best matching tools |
//! | `describe_tools` | `{names}` | the declarations of these tools |
//!
//! Each program is checked and run on a thread of its own with the
//! session's stack ([`crate::control::session::spawn`]); the handler
//! awaits its reply. A request the client cancels cancels the session
//! (its running tools killed). Bad arguments are tool errors (`isError`)
//! that say what was expected; an unknown tool is a protocol error.
//! A `run_program` whose client declared elicitation gets an approver that
//! asks the person there ([`super::approval`]); on the stateless
//! 2026-07-28 revision the session thread's question comes back to the
//! handler as a step, and the call answers with an `InputRequiredResult`
//! whose retry continues the same session ([`super::mrtr`],
//! `CodeMode::run_stateless`).

use super::approval::{answer, approver, Asker};
use super::catalog::Catalog;
use super::guide;
use super::mrtr::{answer_of, MrtrApprover, Paused, PausedRuns, Step};
use super::program::{check_program, run_program, Reply};
use crate::control::approver::Approver;
use crate::runtime::cancel::Cancel;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    JsonObject, ListToolsResult, PaginatedRequestParams, ProtocolVersion, ServerCapabilities,
    ServerConfig, Tool, ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::{json, Value as Json};
use std::sync::Arc;
use tokio::sync::mpsc;

/// The server: the catalog and the tool list made from it.
#[derive(Clone)]
pub struct CodeMode {
    catalog: Arc<Catalog>,
    tools: Arc<Vec<Tool>>,
    /// `true` once the client closed the transport (stdin ended): every
    /// program still running is cancelled then.
    pub(super) closed: tokio::sync::watch::Receiver<bool>,
    /// Session threads not yet done (their logs not yet written out).
    pub(super) running: Arc<std::sync::atomic::AtomicUsize>,
    /// Runs waiting for the retry that answers their approval (2026-07-28).
    paused: PausedRuns,
}

fn object(v: Json) -> Arc<JsonObject> {
    Arc::new(match v {
        Json::Object(m) => m,
        _ => JsonObject::new(),
    })
}

/// The input schema of a tool taking one string argument `name`.
fn one_string(name: &str, what: &str) -> Arc<JsonObject> {
    object(json!({
        "type": "object",
        "properties": {name: {"type": "string", "description": what}},
        "required": [name],
    }))
}

/// The output schema of `run_program` (`lt run --json`'s object, the
/// calls made added): loose where the value's type is the program's.
fn run_output_schema() -> Arc<JsonObject> {
    object(json!({
        "type": "object",
        "properties": {
            "ok": {"type": "boolean"},
            "value": {"description": "the program's value, as JSON"},
            "type": {"type": "string"},
            "effects": {"type": "array", "items": {"type": "string"}},
            "calls": {"type": "integer"},
            "steps": {"type": "integer"},
            "tool_calls": {"type": "array", "items": {"type": "object", "properties": {
                "tool": {"type": "string"}, "argument": {"type": "string"},
                "status": {"type": "string"}, "message": {"type": ["string", "null"]}}}},
            "session": {"type": "string"},
            "log": {"type": "string"},
        },
        "required": ["ok"],
    }))
}

impl CodeMode {
    /// The server of `catalog`, its tool list made once.
    pub fn new(catalog: Catalog) -> CodeMode {
        let description = guide::description(&catalog);
        let program =
            "the whole lt program (the declarations of the server's tools are added before it)";
        let tools = vec![
            Tool::new("run_program", description, one_string("program", program))
                .with_raw_output_schema(run_output_schema())
                .with_title("Run an lt program"),
            Tool::new(
                "check_program",
                "Checks an lt program against the server's tools and policy without running anything: its type and effects, or every error (code, line, message, fix).",
                one_string("program", program),
            )
            .with_annotations(ToolAnnotations::new().read_only(true)),
            Tool::new(
                "search_tools",
                format!("Finds the server's tools for a task: a ranked search over their names and descriptions (at most {}), returning their lt declarations to use in run_program.", guide::MAX_RESULTS),
                one_string("query", "a few words of what the tools should do"),
            )
            .with_annotations(ToolAnnotations::new().read_only(true)),
            Tool::new(
                "describe_tools",
                "The lt declarations of the named tools (with the type and effect declarations they need).",
                object(json!({
                    "type": "object",
                    "properties": {"names": {"type": "array", "items": {"type": "string"}}},
                    "required": ["names"],
                })),
            )
            .with_annotations(ToolAnnotations::new().read_only(true)),
        ];
        CodeMode {
            catalog: Arc::new(catalog),
            tools: Arc::new(tools),
            closed: tokio::sync::watch::channel(false).1,
            running: Arc::new(std::sync::atomic::AtomicUsize::new(0)),
            paused: PausedRuns::default(),
        }
    }

    /// The tools the server lists.
    pub fn tools(&self) -> &[Tool] {
        &self.tools
    }

    /// Serves MCP over stdin and stdout until the client closes them or
    /// `stop` completes (the CLI passes SIGINT/SIGTERM), which ends the
    /// session the same way.
    /// Errors: the session could not start or ended in error.
    /// A line that is not JSON gets a `-32700` Parse error; stdin's end
    /// cancels the programs still running at once ([`super::stdio`]).
    pub async fn serve_stdio(
        mut self,
        stop: impl std::future::Future<Output = ()> + Send + 'static,
    ) -> Result<(), String> {
        let (closed_tx, closed_rx) = tokio::sync::watch::channel(false);
        self.closed = closed_rx;
        let (transport, writer) = super::stdio::transport(closed_tx, stop);
        let sessions = Arc::clone(&self.running);
        let running = self
            .serve(transport)
            .await
            .map_err(|e| format!("the MCP session did not start: {e}"))?;
        let ended = running
            .waiting()
            .await
            .map(|_| ())
            .map_err(|e| format!("the MCP session failed: {e}"));
        let _ = writer.await;
        runs_ended(&sessions).await;
        ended
    }

    /// Starts `work` on a session thread: the steps it sends (the
    /// questions of its approver, then its reply) and its cancel.
    fn start(
        &self,
        work: impl FnOnce(&Catalog, Cancel, mpsc::UnboundedSender<Step>) -> Reply + Send + 'static,
    ) -> Result<(mpsc::UnboundedReceiver<Step>, Cancel), Reply> {
        let catalog = Arc::clone(&self.catalog);
        let cancel = Cancel::new();
        let (tx, rx) = mpsc::unbounded_channel();
        let c = cancel.clone();
        let running = Arc::clone(&self.running);
        running.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let done = Arc::clone(&running);
        let spawned = crate::control::session::spawn("lt-mcp-session", move || {
            let reply = work(&catalog, c, tx.clone());
            let _ = tx.send(Step::Done(reply));
            done.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
        });
        if let Err(e) = spawned {
            running.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
            return Err(Reply::failure(
                "start",
                format!("cannot start a session thread: {e}"),
            ));
        }
        Ok((rx, cancel))
    }

    /// The session's next step: a question of its approver, or its reply.
    /// When `cancelled` completes first (the client cancelled the request)
    /// or the transport closes, the session is cancelled, any question it
    /// still asks refused, and its reply awaited.
    async fn next_step(
        &self,
        steps: &mut mpsc::UnboundedReceiver<Step>,
        cancel: &Cancel,
        cancelled: impl std::future::Future<Output = ()>,
    ) -> Step {
        let ended = || Step::Done(Reply::failure("run", "the session ended without a reply"));
        let mut closed = self.closed.clone();
        let closed = async move {
            if closed.wait_for(|c| *c).await.is_err() {
                // No transport tells of its end (HTTP): never.
                std::future::pending::<()>().await;
            }
        };
        tokio::select! {
            s = steps.recv() => return s.unwrap_or_else(ended),
            _ = cancelled => {
                cancel.cancel("the client cancelled the request");
            }
            _ = closed => {
                cancel.cancel("the MCP session ended (stdin ended, or lt mcp got SIGINT or SIGTERM)");
            }
        }
        loop {
            match steps.recv().await {
                Some(Step::Ask(q)) => q.answer(answer(false, "the run was cancelled")),
                Some(done) => return done,
                None => return ended(),
            }
        }
    }

    /// Runs `work` on a session thread and awaits its reply (see
    /// [`CodeMode::next_step`]); its approver never asks through the steps.
    async fn on_session_thread(
        &self,
        cancelled: impl std::future::Future<Output = ()>,
        work: impl FnOnce(&Catalog, Cancel) -> Reply + Send + 'static,
    ) -> Reply {
        let (mut steps, cancel) = match self.start(move |catalog, cancel, _| work(catalog, cancel))
        {
            Ok(x) => x,
            Err(r) => return r,
        };
        tokio::pin!(cancelled);
        loop {
            match self.next_step(&mut steps, &cancel, &mut cancelled).await {
                Step::Done(reply) => return reply,
                Step::Ask(q) => q.answer(answer(false, "no one to ask on this request")),
            }
        }
    }

    /// `run_program` on the 2026-07-28 revision ([`super::mrtr`]): a new
    /// run, or the retry that answers a paused run's question. A question
    /// becomes an `InputRequiredResult` when the request declared form
    /// elicitation (`elicits`); otherwise the approval is refused.
    async fn run_stateless(
        &self,
        request: &CallToolRequestParams,
        elicits: bool,
        cancelled: impl std::future::Future<Output = ()>,
    ) -> CallToolResponse {
        let (mut steps, cancel) = if let Some(state) = &request.request_state {
            let Some(paused) = self.paused.take(state) else {
                return result(Reply::failure(
                    "input",
                    "run_program: this requestState is unknown, expired (no answer within --approval-timeout-ms, the run refused and cancelled) or already answered; call run_program again without it",
                ));
            };
            if paused.arguments != request.arguments {
                self.paused.put_back(state, paused);
                return result(Reply::failure(
                    "input",
                    "run_program: a retry with a requestState must repeat the call's arguments (the same program); these differ, so the question still waits for the call it belongs to",
                ));
            }
            paused
                .question
                .answer(answer_of(request.input_responses.as_ref()));
            (paused.steps, paused.cancel)
        } else {
            let program = match string_arg(&request.arguments, "program", "run_program") {
                Ok(p) => p,
                Err(r) => return result(r),
            };
            let started = self.start(move |catalog, cancel, steps| {
                let approver: Box<dyn Approver> = if elicits {
                    Box::new(MrtrApprover::new(
                        steps,
                        cancel.clone(),
                        catalog.approval_wait,
                    ))
                } else {
                    approver(None, cancel.clone(), catalog.approval_wait)
                };
                run_program(catalog, &program, approver, cancel)
            });
            match started {
                Ok(x) => x,
                Err(r) => return result(r),
            }
        };
        tokio::pin!(cancelled);
        loop {
            match self.next_step(&mut steps, &cancel, &mut cancelled).await {
                Step::Done(reply) => return result(reply),
                Step::Ask(question) => {
                    let paused = Paused {
                        arguments: request.arguments.clone(),
                        steps,
                        cancel: cancel.clone(),
                        question,
                    };
                    match self.paused.pause(paused, self.closed.clone()) {
                        Ok(input) => return input.into(),
                        Err(back) => {
                            let (back, why) = *back;
                            back.question.answer(answer(false, why));
                            steps = back.steps;
                        }
                    }
                }
            }
        }
    }
}

/// Waits (up to 10 s) until the programs cancelled by the end of the
/// session (the client's hang-up, or a stop signal) have ended their logs
/// (`session_ended`, cancelled), so the process exits after them.
pub(super) async fn runs_ended(running: &std::sync::atomic::AtomicUsize) {
    let until = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while running.load(std::sync::atomic::Ordering::SeqCst) > 0 && std::time::Instant::now() < until
    {
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
}

/// Whether a request's client declared form elicitation (a declaration
/// naming neither form nor URL means form).
fn elicits_form(context: &RequestContext<RoleServer>) -> bool {
    context
        .client_capabilities()
        .and_then(|c| c.elicitation)
        .is_some_and(|e| e.form.is_some() || e.url.is_none())
}

/// Whether a request speaks the stateless 2026-07-28 revision (or later).
fn stateless(context: &RequestContext<RoleServer>) -> bool {
    context
        .protocol_version()
        .is_some_and(|v| v >= ProtocolVersion::V_2026_07_28)
}

/// A string argument, or a tool error saying what was expected.
fn string_arg(args: &Option<JsonObject>, name: &str, tool: &str) -> Result<String, Reply> {
    match args.as_ref().and_then(|a| a.get(name)) {
        Some(Json::String(s)) => Ok(s.clone()),
        Some(other) => Err(Reply::failure(
            "input",
            format!("{tool}: `{name}` must be a string, not {}", kind(other)),
        )),
        None => Err(Reply::failure(
            "input",
            format!("{tool} takes {{\"{name}\": string}}; `{name}` is missing"),
        )),
    }
}

fn kind(v: &Json) -> &'static str {
    match v {
        Json::Null => "null",
        Json::Bool(_) => "a boolean",
        Json::Number(_) => "a number",
        Json::String(_) => "a string",
        Json::Array(_) => "an array",
        Json::Object(_) => "an object",
    }
}

fn result(reply: Reply) -> CallToolResponse {
    let mut r = if reply.is_error {
        CallToolResult::error(vec![ContentBlock::text(reply.text)])
    } else {
        CallToolResult::success(vec![ContentBlock::text(reply.text)])
    };
    r.structured_content = Some(reply.structured);
    r.into()
}

impl CodeMode {
    fn search(&self, query: &str) -> Reply {
        let found = guide::search(&self.catalog.entries, query);
        let names: Vec<&str> = found.iter().map(|e| e.name.as_str()).collect();
        let text = if found.is_empty() {
            format!(
                "No tool matches `{query}`: try other words (the server has {} tools).",
                self.catalog.entries.len()
            )
        } else {
            guide::declarations(&found)
        };
        Reply {
            is_error: false,
            structured: json!({"tools": names, "declarations": text}),
            text,
        }
    }

    fn describe(&self, args: &Option<JsonObject>) -> Reply {
        let names: Vec<String> = match args.as_ref().and_then(|a| a.get("names")) {
            Some(Json::Array(items)) if items.iter().all(Json::is_string) => items
                .iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect(),
            Some(Json::String(s)) => vec![s.clone()],
            _ => {
                return Reply::failure(
                    "input",
                    "describe_tools takes {\"names\": [string, …]}, the tools' names",
                )
            }
        };
        let entries = &self.catalog.entries;
        let unknown: Vec<&str> = names
            .iter()
            .filter(|n| !entries.iter().any(|e| &e.name == *n))
            .map(String::as_str)
            .collect();
        if !unknown.is_empty() {
            let hints: Vec<String> = unknown
                .iter()
                .map(|u| {
                    match crate::diag::did_you_mean(u, entries.iter().map(|e| e.name.as_str())) {
                        Some(close) => format!("`{u}` (did you mean `{close}`?)"),
                        None => format!("`{u}`"),
                    }
                })
                .collect();
            return Reply::failure(
                "input",
                format!(
                    "no tool named {}; search_tools finds tools by what they do",
                    hints.join(", ")
                ),
            );
        }
        let found: Vec<_> = entries.iter().filter(|e| names.contains(&e.name)).collect();
        let text = guide::declarations(&found);
        Reply {
            is_error: false,
            structured: json!({"tools": names, "declarations": text}),
            text,
        }
    }
}

impl ServerHandler for CodeMode {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("lt", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "Typed code mode: write one lt program that makes the tool calls a task needs and send it to run_program. It is checked before anything runs; errors come back all at once with their fixes.",
            )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.tools.to_vec()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let args = &request.arguments;
        if request.name == "run_program" && (stateless(&context) || request.request_state.is_some())
        {
            let ct = context.ct.clone();
            let elicits = elicits_form(&context);
            return Ok(self
                .run_stateless(&request, elicits, async move { ct.cancelled().await })
                .await);
        }
        let reply = match &*request.name {
            "run_program" | "check_program" => {
                let run = request.name == "run_program";
                match string_arg(args, "program", &request.name) {
                    Err(r) => r,
                    Ok(program) => {
                        let ct = context.ct.clone();
                        let asker = if run { Asker::of(&context.peer) } else { None };
                        self.on_session_thread(async move { ct.cancelled().await }, move |catalog, cancel| {
                            if run {
                                let approver = approver(asker, cancel.clone(), catalog.approval_wait);
                                run_program(catalog, &program, approver, cancel)
                            } else {
                                check_program(catalog, &program)
                            }
                        })
                        .await
                    }
                }
            }
            "search_tools" => match string_arg(args, "query", "search_tools") {
                Ok(q) => self.search(&q),
                Err(r) => r,
            },
            "describe_tools" => self.describe(args),
            other => {
                return Err(ErrorData::invalid_params(
                    format!("unknown tool `{other}`: this server has run_program, check_program, search_tools, describe_tools"),
                    None,
                ))
            }
        };
        Ok(result(reply))
    }
}
