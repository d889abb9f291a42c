//! `lt`: a typed tool-composition language (compatible with λ-Tool), its
//! checker, its combinator IR and interpreter, and (in later phases) its
//! control plane.
//!
//! The phases only look downstream:
//! [`syntax`] (text → AST) → [`types`] (AST → typed program + diagnostics)
//! → [`ir`] (checked program → combinator IR) → [`runtime`] (IR → value,
//! every tool call through a [`runtime::host::Host`]). [`diag`] holds the
//! one diagnostic type every phase produces. [`exec`] holds the executors
//! (subprocess, HTTP, fixed) behind the host; [`cli`] reads files and
//! prints. Nothing else does I/O.
//!
//! The modules stand on floors and use only those below (lowest first:
//! `source`, `scope`, `diag` → `syntax` → `stdlib` → `types` → `ir` →
//! `runtime` → `log`, `schema` → `exec` → `control` → `agent` → `compat`,
//! `cli`): docs/architecture.md, "Floors", enforced by `tests/floors.rs`.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod agent;
pub mod cli;
pub mod compat;
pub mod control;
pub mod diag;
pub mod eval;
pub mod exec;
pub mod frontend;
pub mod ir;
pub mod log;
pub mod mcp_server;
pub mod otlp;
pub mod runtime;
pub mod schema;
pub mod scope;
pub mod serve;
pub mod source;
pub mod stdlib;
pub mod syntax;
pub mod types;
