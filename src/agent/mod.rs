//! The LLM loop (`lt agent`): a model proposes a program, the checker
//! rejects what is unsafe before anything runs, the diagnostics go back to
//! the model in a compact form, and only a checked program runs, under the
//! control plane. Every request, reply, extracted program, diagnostic set,
//! acceptance and run is an event of the session's one log.
//!
//! Modules: [`model`] (the provider-neutral request/reply and the
//! [`model::Proposer`] trait), `provider` (OpenAI-compatible and Anthropic
//! clients over HTTP), [`prompt`] (the system prompt: `docs/llm-guide.md`
//! and the tool declarations), [`extract`] (a program out of a reply),
//! [`feedback`] (diagnostics and run results as messages for models),
//! [`consensus`] (K of N samples that are the same program), [`config`]
//! (the `[agent]` table, the classifier's rule table), [`task`] (a whole
//! session from a task, as `lt agent` and `lt serve` run it).
pub mod config;
pub mod consensus;
pub mod extract;
pub mod feedback;
pub mod model;
pub mod prompt;
pub mod provider;
pub mod replay;
pub mod runner;
pub mod session;
pub mod stdio;
pub mod task;
pub mod tool_list;
