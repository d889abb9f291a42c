//! `lt eval` (src/eval/), one test binary:
//!
//! - `fixed`: suites of fixed programs over the support-desk example's real
//!   tools; criteria, invariants, gates, JUnit, baselines, `--compare`.
//! - `agent`: agent cases (`task`) against the fake model server
//!   (tests/fixtures/fake_model/server.py): recorded replies, and a seeded
//!   random model whose success probability the reported rate must match.
//! - `replay`: `lt eval --replay DIR` over a good and a diverging log.
//! - `html`: `--html FILE`, a self-contained page with an SVG chart.

#[path = "../support/mod.rs"]
mod support;

mod agent;
mod fixed;
mod html;
mod replay;
