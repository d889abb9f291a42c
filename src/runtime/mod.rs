//! The runtime: runs a lowered program ([`crate::ir::Ir`]).
//!
//! * [`eval`]: the interpreter: strict, left to right, deterministic given
//!   the tool outcomes; synchronous pure evaluation on one value stack;
//!   fuel, clock and size limits ([`limits`]).
//! * [`host`]: the one door to the world. Each `exec` becomes a
//!   [`host::CallRequest`] with a stable [`host::CallId`]; the host answers
//!   with the tool's JSON or a [`host::ToolFailure`].
//! * [`boundary`]: the boundary contract: a tool's JSON result is validated
//!   against the tool's declared output type before the program sees it.
//!   Extra fields are dropped; a missing field or a wrong type is an error
//!   naming the path (`field last_charge_cents: expected Int, found String`),
//!   which the interpreter turns into the call's `Err`. A program can
//!   therefore never read a field that is not there.
//! * [`value`]: the values a program computes, and their JSON encoding
//!   (records → objects, lists → arrays, unit → `null`,
//!   `Ok`/`Err` → `{"Ok": v}` / `{"Err": e}`), which is also how tool
//!   arguments are sent. [`ops`]: the operators.
//! * [`wire`]: a flat, `Send` form of JSON for a host whose tools run on
//!   another thread of this process (the Python package): a call's argument
//!   written from its value and its result read into one against the
//!   declared types, with no JSON tree between ([`host::Host::call_value`]).

mod batch;
pub mod boundary;
pub mod cancel;
mod compile;
pub(crate) mod deep_json;
pub mod eval;
pub mod host;
pub mod limits;
mod machine;
mod natives;
pub mod ops;
pub mod wire;
/// The values (defined in [`crate::ir::value`], which IR constants need).
pub use crate::ir::value;
