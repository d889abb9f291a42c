//! The runtime (issue 3, in progress): values and the tool boundary.
//!
//! So far this holds the data every later part shares:
//!
//! * [`value`]: the values a program computes, and their JSON encoding
//!   (records → objects, lists → arrays, unit → `null`,
//!   `Ok`/`Err` → `{"Ok": v}` / `{"Err": e}`), which is also how tool
//!   arguments are sent;
//! * [`boundary`]: the boundary contract: a tool's JSON result is validated
//!   against the tool's declared output type before the program sees it.
//!   Extra fields are dropped; a missing field or a wrong type is an error
//!   naming the path (`field last_charge_cents: expected Int, found String`),
//!   which the interpreter turns into the call's `Err`. A program can
//!   therefore never read a field that is not there.
//!
//! The interpreter, the host trait and the executors are still to come.

pub mod boundary;
pub mod eval;
pub mod host;
pub mod limits;
pub mod ops;
pub mod value;
