//! `lt`: a typed tool-composition language (compatible with λ-Tool), its
//! checker, and (in later phases) its combinator IR and control plane.
//!
//! The phases only look downstream:
//! [`syntax`] (text → AST) → [`types`] (AST → typed program + diagnostics).
//! [`diag`] holds the one diagnostic type every phase produces. The library
//! does no I/O; the `lt` binary ([`cli`]) reads files and prints.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod cli;
pub mod diag;
pub mod exec;
pub mod ir;
pub mod runtime;
pub mod scope;
pub mod source;
pub mod syntax;
pub mod types;
