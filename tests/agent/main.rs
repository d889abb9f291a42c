//! The LLM loop (`lt agent`, `lt prompt`, src/agent/), one test binary
//! (one link of the library instead of five):
//!
//! - `guide`: every example of docs/llm-guide.md checks as it claims; `lt prompt`.
//! - `provider`: the HTTP providers against the fake model server
//!   (tests/fixtures/fake_model/server.py).
//! - `corpus`: the recorded conversations of tests/fixtures/agent_corpus/,
//!   end to end through the `lt` binary, then replayed without the model.
//! - `stdio`: a host in another language answering the model requests
//!   (`--provider stdio`).
//! - `api`: `run_agent` with a host's own `Proposer` (quoted in docs/agent.md).

#[path = "../support/mod.rs"]
mod support;

mod api;
mod cli;
mod corpus;
mod guide;
mod provider;
mod stdio;
