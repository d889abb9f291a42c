//! Operators on values: arithmetic (checked), string concatenation
//! (bounded), ordering, and structural equality (charged as fuel).
//!
//! Totality (extension, docs/language/reference.md#arithmetic): division
//! and remainder by zero are `0` (Int) and `0.0` (Float), as in Gleam, so a
//! well-typed program never stops on them; an Int result outside the 64-bit
//! range, or a Float result that is not finite, stops the run with the
//! *number range* limit (`RunErrorKind::Arithmetic`, exit 3), like any other
//! resource limit. NaN and infinities never exist as values.

use super::limits::{Limits, RunError, RunErrorKind};
use super::value::Value;
use crate::source::Span;
use crate::syntax::ast::BinOp;
use std::rc::Rc;

/// The value of `a && b` / `a || b` when `a` alone decides it.
pub fn short_circuit(op: BinOp, a: &Value) -> Option<Value> {
    match (op, a) {
        (BinOp::And, Value::Bool(false)) => Some(Value::Bool(false)),
        (BinOp::Or, Value::Bool(true)) => Some(Value::Bool(true)),
        _ => None,
    }
}

/// `a op b` on Ints and Bools when it cannot fail (no overflow, no division
/// by zero): the interpreter's fast path. `None`: use [`binary`].
#[inline(always)]
pub fn fast(op: BinOp, a: &Value, b: &Value) -> Option<Value> {
    let (Value::Int(x), Value::Int(y)) = (a, b) else {
        return None;
    };
    let (x, y) = (*x, *y);
    Some(match op {
        BinOp::Add => Value::Int(x.checked_add(y)?),
        BinOp::Sub => Value::Int(x.checked_sub(y)?),
        BinOp::Mul => Value::Int(x.checked_mul(y)?),
        BinOp::Div if y != 0 => Value::Int(x.checked_div(y)?),
        BinOp::Rem if y != 0 => Value::Int(x.checked_rem(y).unwrap_or(0)),
        BinOp::Div | BinOp::Rem => Value::Int(0),
        BinOp::Eq => Value::Bool(x == y),
        BinOp::Ne => Value::Bool(x != y),
        BinOp::Lt => Value::Bool(x < y),
        BinOp::Gt => Value::Bool(x > y),
        BinOp::Le => Value::Bool(x <= y),
        BinOp::Ge => Value::Bool(x >= y),
        _ => return None,
    })
}

/// `a op b`. Integer overflow and division by zero are run errors; `==`
/// charges one step per value node compared to `steps`.
pub fn binary(
    op: BinOp,
    a: &Value,
    b: &Value,
    limits: &Limits,
    steps: &mut u64,
    span: Span,
) -> Result<Value, RunError> {
    let arith = |what: &str| {
        RunError::new(RunErrorKind::Arithmetic, span, what.to_string()).with_help(
            "the result does not fit in an Int (-9223372036854775808 to 9223372036854775807); \
             keep the numbers smaller, e.g. work in larger units",
        )
    };
    Ok(match (op, a, b) {
        (BinOp::Add, Value::Int(x), Value::Int(y)) => Value::Int(
            x.checked_add(*y)
                .ok_or_else(|| arith(&format!("integer overflow: {x} + {y}")))?,
        ),
        (BinOp::Sub, Value::Int(x), Value::Int(y)) => Value::Int(
            x.checked_sub(*y)
                .ok_or_else(|| arith(&format!("integer overflow: {x} - {y}")))?,
        ),
        (BinOp::Mul, Value::Int(x), Value::Int(y)) => Value::Int(
            x.checked_mul(*y)
                .ok_or_else(|| arith(&format!("integer overflow: {x} * {y}")))?,
        ),
        (BinOp::Div | BinOp::Rem, Value::Int(_), Value::Int(0)) => Value::Int(0),
        (
            BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div | BinOp::Rem,
            Value::Float(x),
            Value::Float(y),
        ) => {
            let r = match op {
                BinOp::Add => x + y,
                BinOp::Sub => x - y,
                BinOp::Mul => x * y,
                _ if *y == 0.0 => 0.0,
                BinOp::Div => x / y,
                _ => x % y,
            };
            if !r.is_finite() {
                return Err(RunError::new(
                    RunErrorKind::Arithmetic,
                    span,
                    format!(
                        "Float overflow: {x:e} {} {y:e} is not a finite number",
                        op.as_str()
                    ),
                )
                .with_help("the result is beyond ±1.8e308; keep the numbers smaller"));
            }
            Value::Float(r)
        }
        (BinOp::Div, Value::Int(x), Value::Int(y)) => Value::Int(
            x.checked_div(*y)
                .ok_or_else(|| arith(&format!("integer overflow: {x} / {y}")))?,
        ),
        // `i64::MIN % -1` overflows in the machine but its value, 0, fits.
        (BinOp::Rem, Value::Int(x), Value::Int(y)) => Value::Int(x.checked_rem(*y).unwrap_or(0)),
        (BinOp::Concat, Value::Str(x), Value::Str(y)) => {
            let len = x.len() + y.len();
            if len > limits.max_string_bytes {
                return Err(RunError::new(
                    RunErrorKind::SizeLimit,
                    span,
                    format!(
                        "`++` would build a string of {len} bytes, more than the limit of {}",
                        limits.max_string_bytes
                    ),
                ));
            }
            let mut s = String::with_capacity(len);
            s.push_str(x);
            s.push_str(y);
            Value::Str(Rc::from(s))
        }
        (BinOp::And | BinOp::Or, Value::Bool(_), Value::Bool(y)) => Value::Bool(*y),
        (BinOp::Eq, _, _) => Value::Bool(equal(a, b, limits, steps, span)?),
        (BinOp::Ne, _, _) => Value::Bool(!equal(a, b, limits, steps, span)?),
        (BinOp::Lt | BinOp::Gt | BinOp::Le | BinOp::Ge, _, _) => {
            let ord = match (a, b) {
                (Value::Int(x), Value::Int(y)) => x.cmp(y),
                (Value::Str(x), Value::Str(y)) => x.cmp(y),
                (Value::Float(x), Value::Float(y)) => {
                    x.partial_cmp(y).unwrap_or(std::cmp::Ordering::Equal)
                }
                (Value::Bool(x), Value::Bool(y)) => x.cmp(y),
                _ => return Err(mistyped(op, a, b, span)),
            };
            Value::Bool(match op {
                BinOp::Lt => ord.is_lt(),
                BinOp::Gt => ord.is_gt(),
                BinOp::Le => ord.is_le(),
                _ => ord.is_ge(),
            })
        }
        _ => return Err(mistyped(op, a, b, span)),
    })
}

fn mistyped(op: BinOp, a: &Value, b: &Value, span: Span) -> RunError {
    RunError::internal(span, format!("`{}` on {a} and {b}", op.as_str()))
}

/// Structural equality; records compare field by field by name (their
/// fields may be in different orders). Iterative, and charged one step per
/// pair of nodes compared, so comparing huge shared values runs out of fuel
/// instead of time.
pub fn equal(
    a: &Value,
    b: &Value,
    limits: &Limits,
    steps: &mut u64,
    span: Span,
) -> Result<bool, RunError> {
    match (a, b) {
        (Value::Int(p), Value::Int(q)) => return Ok(p == q),
        (Value::Float(p), Value::Float(q)) => return Ok(p == q),
        (Value::Bool(p), Value::Bool(q)) => return Ok(p == q),
        (Value::Str(p), Value::Str(q)) => {
            // Comparing long strings is charged by length, like building them.
            *steps += (p.len().min(q.len()) / 64) as u64;
            if *steps > limits.max_steps {
                return Err(RunError::new(
                    RunErrorKind::StepLimit,
                    span,
                    format!(
                        "step limit of {} exceeded while comparing strings",
                        limits.max_steps
                    ),
                )
                .with_help("raise the limit with --max-steps N"));
            }
            return Ok(p == q);
        }
        (Value::Unit, Value::Unit) => return Ok(true),
        _ => {}
    }
    let mut work: Vec<(&Value, &Value)> = vec![(a, b)];
    while let Some((x, y)) = work.pop() {
        *steps += 1;
        if *steps > limits.max_steps {
            return Err(RunError::new(
                RunErrorKind::StepLimit,
                span,
                format!(
                    "step limit of {} exceeded while comparing values",
                    limits.max_steps
                ),
            )
            .with_help("raise the limit with --max-steps N"));
        }
        match (x, y) {
            (Value::Unit, Value::Unit) => {}
            (Value::Bool(p), Value::Bool(q)) if p == q => {}
            (Value::Int(p), Value::Int(q)) if p == q => {}
            (Value::Float(p), Value::Float(q)) if p == q => {}
            (Value::None, Value::None) => {}
            (Value::Some(p), Value::Some(q)) => work.push((p, q)),
            (Value::Json(p), Value::Json(q)) => {
                *steps += json_size(p) as u64;
                if p != q {
                    return Ok(false);
                }
            }
            (Value::Str(p), Value::Str(q)) if p == q => {}
            (Value::Record(p), Value::Record(q)) if p.len() == q.len() => {
                if Rc::ptr_eq(p, q) {
                    continue;
                }
                for (name, v) in p.iter() {
                    match q.iter().find(|(n, _)| n == name) {
                        Some((_, w)) => work.push((v, w)),
                        None => return Ok(false),
                    }
                }
            }
            (Value::List(p), Value::List(q)) if p.len() == q.len() => {
                if Rc::ptr_eq(p, q) {
                    continue;
                }
                work.extend(p.iter().zip(q.iter()));
            }
            (Value::Ok(p), Value::Ok(q)) | (Value::Err(p), Value::Err(q)) => work.push((p, q)),
            _ => return Ok(false),
        }
    }
    Ok(true)
}

/// A bound on the work of comparing a JSON value (its node count).
fn json_size(j: &serde_json::Value) -> usize {
    let mut n = 0usize;
    let mut work = vec![j];
    while let Some(x) = work.pop() {
        n += 1;
        match x {
            serde_json::Value::Array(a) => work.extend(a.iter()),
            serde_json::Value::Object(o) => work.extend(o.values()),
            _ => {}
        }
    }
    n
}

/// The order of two values of an ordered type (Int, Float, String, Bool;
/// enums are Strings), for `sort`, `min` and friends. Values of other
/// shapes compare equal (the checker never lets them reach here).
pub fn order(a: &Value, b: &Value) -> std::cmp::Ordering {
    match (a, b) {
        (Value::Int(x), Value::Int(y)) => x.cmp(y),
        (Value::Str(x), Value::Str(y)) => x.cmp(y),
        (Value::Float(x), Value::Float(y)) => x.partial_cmp(y).unwrap_or(std::cmp::Ordering::Equal),
        (Value::Bool(x), Value::Bool(y)) => x.cmp(y),
        _ => std::cmp::Ordering::Equal,
    }
}
