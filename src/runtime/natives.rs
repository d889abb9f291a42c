//! The standard library's native functions ([`crate::stdlib::NATIVES`]),
//! called fully applied from a `NodeKind::Native` node.
//!
//! Every function is total on the values of its type: lookups that can miss
//! return `None`, bounds are clamped, and the only errors are resource
//! limits (a list longer than `max_list_len`, a string longer than
//! `max_string_bytes`, an Int out of range, fuel). Work is charged as fuel in
//! proportion to the elements or bytes touched, so a native cannot run
//! longer than the step limit allows. Callbacks are pure (the checker's
//! signatures say so) and are called through the machine like `map`'s.

use super::host::PathStep;
use super::limits::{RunError, RunErrorKind};
use super::machine::{internal, Eval, Machine};
use super::ops;
use super::value::{format_float, Value};
use crate::ir::NodeId;
use serde_json::Value as Json;
use std::rc::Rc;

type Args = Vec<Value>;

fn limit(m: &Machine<'_>, id: NodeId, what: String, help: &str) -> Box<RunError> {
    Box::new(RunError::new(RunErrorKind::SizeLimit, m.span(id), what).with_help(help.to_string()))
}

fn range_error(m: &Machine<'_>, id: NodeId, what: String) -> Box<RunError> {
    Box::new(
        RunError::new(RunErrorKind::Arithmetic, m.span(id), what).with_help(
            "the result does not fit in an Int (-9223372036854775808 to 9223372036854775807)",
        ),
    )
}

fn list_of(m: &Machine<'_>, id: NodeId, len: usize) -> Result<(), Box<RunError>> {
    let max = m.limits().max_list_len;
    if len > max {
        return Err(limit(
            m,
            id,
            format!("this would build a list of {len} elements, more than the limit of {max}"),
            "build a shorter list, or raise the limit with --max-list-len N",
        ));
    }
    Ok(())
}

fn string_of(m: &mut Machine<'_>, id: NodeId, s: String) -> Eval {
    let max = m.limits().max_string_bytes;
    if s.len() > max {
        return Err(limit(
            m,
            id,
            format!(
                "this would build a string of {} bytes, more than the limit of {max}",
                s.len()
            ),
            "build less text",
        ));
    }
    m.charge((s.len() / 64) as u64, id)?;
    Ok(Value::Str(Rc::from(s)))
}

fn str_arg(v: &Value) -> &str {
    match v {
        Value::Str(s) => s,
        _ => "",
    }
}

fn int_arg(v: &Value) -> i64 {
    match v {
        Value::Int(n) => *n,
        _ => 0,
    }
}

fn float_arg(v: &Value) -> f64 {
    match v {
        Value::Float(x) => *x,
        _ => 0.0,
    }
}

fn list_arg(v: &Value) -> Rc<Vec<Value>> {
    match v {
        Value::List(xs) => xs.clone(),
        _ => Rc::from(Vec::new()),
    }
}

fn some(v: Value) -> Value {
    Value::Some(Rc::new(v))
}

fn opt(v: Option<Value>) -> Value {
    v.map_or(Value::None, some)
}

fn list(items: Vec<Value>) -> Value {
    Value::List(items.into())
}

fn item(node: NodeId, index: usize) -> PathStep {
    PathStep::Item {
        node,
        index: u32::try_from(index).unwrap_or(u32::MAX),
    }
}

/// Calls `f` on each element of `xs` in order, handing each result to `each`
/// (which returns `false` to stop early).
fn each(
    m: &mut Machine<'_>,
    id: NodeId,
    f: &Value,
    xs: &[Value],
    mut each: impl FnMut(usize, Value) -> bool,
) -> Result<(), Box<RunError>> {
    let callee = m.enter(f, 1);
    for (i, x) in xs.iter().enumerate() {
        match m.call1(&callee, x.clone(), item(id, i), id) {
            Ok(r) => {
                if !each(i, r) {
                    break;
                }
            }
            Err(e) => {
                m.leave(callee);
                return Err(e);
            }
        }
    }
    m.leave(callee);
    Ok(())
}

/// `float → Int` for `round`/`floor`/`ceil`/`truncate`.
fn to_int(m: &Machine<'_>, id: NodeId, x: f64) -> Eval {
    // i64::MAX as f64 rounds up to 2^63, which is out of range.
    if (-9_223_372_036_854_775_808.0..9_223_372_036_854_775_808.0).contains(&x) {
        Ok(Value::Int(x as i64))
    } else {
        Err(range_error(
            m,
            id,
            format!("{} is outside the Int range", format_float(x)),
        ))
    }
}

/// `to_string`: Strings as themselves, scalars as written, the rest as JSON.
fn display(v: &Value) -> String {
    match v {
        Value::Str(s) => s.to_string(),
        Value::Int(n) => n.to_string(),
        Value::Float(x) => format_float(*x),
        Value::Bool(b) => b.to_string(),
        Value::Unit => "()".to_string(),
        Value::Json(j) => j.to_string(),
        other => other.to_json().to_string(),
    }
}

fn json_arg(v: &Value) -> Option<&Json> {
    match v {
        Value::Json(j) => Some(j),
        _ => None,
    }
}

fn json_value(j: &Json) -> Value {
    Value::Json(Rc::new(j.clone()))
}

/// Runs native number `func` on `args` (exactly its arity).
pub(super) fn call(m: &mut Machine<'_>, id: NodeId, func: usize, args: Args) -> Eval {
    use crate::stdlib::NativeId as N;
    let Some(native) = N::from_index(func) else {
        return Err(internal(
            m.span(id),
            format!("unknown native number {func}"),
        ));
    };
    let a = |i: usize| args.get(i).cloned().unwrap_or(Value::Unit);
    // Exhaustive: a native in the table without an arm here does not compile.
    Ok(match native {
        N::not => Value::Bool(!matches!(a(0), Value::Bool(true))),
        // ---- strings
        N::string_length => {
            let s = a(0);
            let s = str_arg(&s);
            m.charge((s.len() / 64) as u64, id)?;
            Value::Int(s.chars().count() as i64)
        }
        N::contains | N::starts_with | N::ends_with => {
            let (s, p) = (a(0), a(1));
            let (s, p) = (str_arg(&s), str_arg(&p));
            m.charge((s.len() / 64) as u64, id)?;
            Value::Bool(match native {
                N::contains => s.contains(p),
                N::starts_with => s.starts_with(p),
                _ => s.ends_with(p),
            })
        }
        N::index_of => {
            let (s, p) = (a(0), a(1));
            let (s, p) = (str_arg(&s), str_arg(&p));
            m.charge((s.len() / 64) as u64, id)?;
            opt(s.find(p).map(|b| Value::Int(s[..b].chars().count() as i64)))
        }
        N::split => {
            let (s, sep) = (a(0), a(1));
            let (s, sep) = (str_arg(&s), str_arg(&sep));
            m.charge((s.len() / 16) as u64, id)?;
            let parts: Vec<Value> = if sep.is_empty() {
                s.chars()
                    .map(|c| Value::Str(Rc::from(c.to_string())))
                    .collect()
            } else {
                s.split(sep).map(|p| Value::Str(Rc::from(p))).collect()
            };
            list_of(m, id, parts.len())?;
            list(parts)
        }
        N::join => {
            let (sep, parts) = (a(0), list_arg(&a(1)));
            let sep = str_arg(&sep);
            let total: usize = parts.iter().map(|p| str_arg(p).len() + sep.len()).sum();
            let max = m.limits().max_string_bytes;
            if total > max.saturating_add(sep.len()) {
                return Err(limit(m, id, format!("`join` would build a string of about {total} bytes, more than the limit of {max}"), "join fewer or shorter parts"));
            }
            let mut out = String::with_capacity(total);
            for (i, p) in parts.iter().enumerate() {
                if i > 0 {
                    out.push_str(sep);
                }
                out.push_str(str_arg(p));
            }
            m.charge(parts.len() as u64, id)?;
            return string_of(m, id, out);
        }
        N::trim => Value::Str(Rc::from(str_arg(&a(0)).trim())),
        N::upper => return string_of(m, id, str_arg(&a(0)).to_uppercase()),
        N::lower => return string_of(m, id, str_arg(&a(0)).to_lowercase()),
        N::replace => {
            let (s, from, to) = (a(0), a(1), a(2));
            let (s, from, to) = (str_arg(&s), str_arg(&from), str_arg(&to));
            if from.is_empty() {
                return Ok(Value::Str(Rc::from(s)));
            }
            let n = s.matches(from).count();
            let len = s.len() - n * from.len() + n * to.len();
            let max = m.limits().max_string_bytes;
            if len > max {
                return Err(limit(m, id, format!("`replace` would build a string of {len} bytes, more than the limit of {max}"), "replace in a shorter string"));
            }
            return string_of(m, id, s.replace(from, to));
        }
        N::substring => {
            let s = a(0);
            let s = str_arg(&s);
            let start = int_arg(&a(1)).max(0) as usize;
            let count = int_arg(&a(2)).max(0) as usize;
            m.charge((s.len() / 64) as u64, id)?;
            Value::Str(Rc::from(
                s.chars().skip(start).take(count).collect::<String>(),
            ))
        }
        N::repeat => {
            let s = a(0);
            let s = str_arg(&s);
            let n = int_arg(&a(1)).max(0) as u128;
            let len = n * s.len() as u128;
            let max = m.limits().max_string_bytes;
            if len > max as u128 {
                return Err(limit(m, id, format!("`repeat` would build a string of {len} bytes, more than the limit of {max}"), "repeat fewer times"));
            }
            return string_of(m, id, s.repeat(n as usize));
        }
        // ---- conversions
        N::to_string => {
            // Bounded before the text is built: a value's node count (a
            // string counts one node per 64 bytes) past an eighth of the
            // string limit cannot print within it.
            let v = a(0);
            let cap = m.limits().max_string_bytes / 8;
            match v.size_up_to(cap) {
                Some(n) => m.charge(n as u64, id)?,
                None => {
                    return Err(limit(
                        m,
                        id,
                        format!(
                            "`to_string` of a value too large to print within the string limit of {} bytes",
                            m.limits().max_string_bytes
                        ),
                        "print a smaller part of the value",
                    ))
                }
            }
            return string_of(m, id, display(&v));
        }
        N::parse_int => opt(str_arg(&a(0)).trim().parse::<i64>().ok().map(Value::Int)),
        N::parse_float => opt(str_arg(&a(0))
            .trim()
            .parse::<f64>()
            .ok()
            .filter(|x| x.is_finite())
            .map(Value::Float)),
        N::parse_bool => match str_arg(&a(0)).trim() {
            "true" => some(Value::Bool(true)),
            "false" => some(Value::Bool(false)),
            _ => Value::None,
        },
        N::to_float => Value::Float(int_arg(&a(0)) as f64),
        N::round => return to_int(m, id, float_arg(&a(0)).round()),
        N::floor => return to_int(m, id, float_arg(&a(0)).floor()),
        N::ceil => return to_int(m, id, float_arg(&a(0)).ceil()),
        N::truncate => return to_int(m, id, float_arg(&a(0)).trunc()),
        N::format_float => {
            let decimals = int_arg(&a(0)).clamp(0, 17) as usize;
            Value::Str(Rc::from(format!("{:.*}", decimals, float_arg(&a(1)))))
        }
        // ---- numbers
        N::min | N::max => {
            let (x, y) = (a(0), a(1));
            let ord = ops::order(&x, &y);
            if (native == N::min) == ord.is_le() {
                x
            } else {
                y
            }
        }
        N::safe_div => {
            let (n, d) = (int_arg(&a(0)), int_arg(&a(1)));
            opt(n.checked_div(d).map(Value::Int))
        }
        // ---- lists
        N::length => Value::Int(list_arg(&a(0)).len() as i64),
        N::head => opt(list_arg(&a(0)).first().cloned()),
        N::member => {
            let (x, xs) = (a(0), list_arg(&a(1)));
            let limits = m.limits();
            let span = m.span(id);
            let mut steps = 0u64;
            let mut found = false;
            for y in xs.iter() {
                steps += 1;
                if steps > limits.max_steps {
                    break;
                }
                if ops::equal(&x, y, limits, &mut steps, span).map_err(Box::new)? {
                    found = true;
                    break;
                }
            }
            m.charge(steps, id)?;
            Value::Bool(found)
        }
        N::take | N::drop => {
            let n = int_arg(&a(0)).max(0) as usize;
            let xs = list_arg(&a(1));
            let n = n.min(xs.len());
            m.charge(n as u64 / 8, id)?;
            if native == N::take {
                list(xs[..n].to_vec())
            } else {
                list(xs[n..].to_vec())
            }
        }
        N::concat => {
            let (xs, ys) = (list_arg(&a(0)), list_arg(&a(1)));
            list_of(m, id, xs.len() + ys.len())?;
            m.charge((xs.len() + ys.len()) as u64 / 8, id)?;
            list(xs.iter().chain(ys.iter()).cloned().collect())
        }
        N::flatten => {
            let xss = list_arg(&a(0));
            let total: usize = xss.iter().map(|x| list_arg(x).len()).sum();
            list_of(m, id, total)?;
            m.charge((total + xss.len()) as u64 / 8, id)?;
            list(xss.iter().flat_map(|x| list_arg(x).to_vec()).collect())
        }
        N::reverse => {
            let xs = list_arg(&a(0));
            m.charge(xs.len() as u64 / 8, id)?;
            list(xs.iter().rev().cloned().collect())
        }
        N::zip => {
            let (xs, ys) = (list_arg(&a(0)), list_arg(&a(1)));
            m.charge(xs.len().min(ys.len()) as u64, id)?;
            let (first, second): (Rc<str>, Rc<str>) = (Rc::from("first"), Rc::from("second"));
            list(
                xs.iter()
                    .zip(ys.iter())
                    .map(|(x, y)| {
                        Value::Record(
                            vec![(first.clone(), x.clone()), (second.clone(), y.clone())].into(),
                        )
                    })
                    .collect(),
            )
        }
        N::range => {
            let (from, to) = (int_arg(&a(0)), int_arg(&a(1)));
            let len = if to > from {
                (to as i128 - from as i128) as u128
            } else {
                0
            };
            let max = m.limits().max_list_len;
            if len > max as u128 {
                return Err(limit(m, id, format!("`range {from} {to}` would build a list of {len} elements, more than the limit of {max}"), "use a smaller range, or raise the limit with --max-list-len N"));
            }
            m.charge(len as u64 / 8, id)?;
            list((from..to).map(Value::Int).collect())
        }
        N::minimum | N::maximum => {
            let xs = list_arg(&a(0));
            m.charge(xs.len() as u64 / 8, id)?;
            let pick = xs.iter().reduce(|best, x| {
                let ord = ops::order(x, best);
                if (native == N::minimum && ord.is_lt()) || (native == N::maximum && ord.is_gt()) {
                    x
                } else {
                    best
                }
            });
            opt(pick.cloned())
        }
        N::sort => {
            let mut xs = list_arg(&a(0)).to_vec();
            m.charge(xs.len() as u64 * 4, id)?;
            xs.sort_by(ops::order);
            list(xs)
        }
        N::sort_by => {
            let (f, xs) = (a(0), list_arg(&a(1)));
            let mut keys: Vec<Value> = Vec::with_capacity(xs.len());
            each(m, id, &f, &xs, |_, k| {
                keys.push(k);
                true
            })?;
            m.charge(xs.len() as u64 * 4, id)?;
            let mut order: Vec<usize> = (0..xs.len()).collect();
            order.sort_by(|&i, &j| ops::order(&keys[i], &keys[j]));
            list(order.into_iter().map(|i| xs[i].clone()).collect())
        }
        N::group_by => {
            let (f, xs) = (a(0), list_arg(&a(1)));
            let mut keys: Vec<Value> = Vec::with_capacity(xs.len());
            each(m, id, &f, &xs, |_, k| {
                keys.push(k);
                true
            })?;
            let limits = m.limits();
            let span = m.span(id);
            let mut steps = 0u64;
            let mut groups: Vec<(Value, Vec<Value>)> = Vec::new();
            for (k, x) in keys.into_iter().zip(xs.iter()) {
                let mut at = None;
                if steps > limits.max_steps {
                    break;
                }
                for (gi, (gk, _)) in groups.iter().enumerate() {
                    // One step per comparison: the work is quadratic in the
                    // number of groups, and the fuel says so.
                    steps += 1;
                    if ops::equal(&k, gk, limits, &mut steps, span).map_err(Box::new)? {
                        at = Some(gi);
                        break;
                    }
                }
                match at {
                    Some(gi) => groups[gi].1.push(x.clone()),
                    None => groups.push((k, vec![x.clone()])),
                }
            }
            m.charge(steps, id)?;
            let (key, items): (Rc<str>, Rc<str>) = (Rc::from("key"), Rc::from("items"));
            list(
                groups
                    .into_iter()
                    .map(|(k, v)| {
                        Value::Record(vec![(key.clone(), k), (items.clone(), list(v))].into())
                    })
                    .collect(),
            )
        }
        N::unique => {
            let xs = list_arg(&a(0));
            let limits = m.limits();
            let span = m.span(id);
            let mut steps = 0u64;
            let mut out: Vec<Value> = Vec::new();
            for x in xs.iter() {
                let mut dup = false;
                for y in &out {
                    steps += 1;
                    if ops::equal(x, y, limits, &mut steps, span).map_err(Box::new)? {
                        dup = true;
                        break;
                    }
                }
                if !dup {
                    out.push(x.clone());
                }
                if steps > limits.max_steps {
                    break;
                }
            }
            m.charge(steps, id)?;
            list(out)
        }
        // ---- Json
        N::json_get => {
            let (k, j) = (a(0), a(1));
            opt(json_arg(&j)
                .and_then(|j| j.as_object())
                .and_then(|o| o.get(str_arg(&k)))
                .map(json_value))
        }
        N::json_at => {
            let (i, j) = (int_arg(&a(0)), a(1));
            opt(json_arg(&j)
                .and_then(|j| j.as_array())
                .and_then(|xs| usize::try_from(i).ok().and_then(|i| xs.get(i)))
                .map(json_value))
        }
        N::json_int => {
            let j = a(0);
            // As the boundary reads an Int: integral floats up to 2^53 too.
            opt(json_arg(&j)
                .and_then(|j| {
                    j.as_i64().or_else(|| {
                        j.as_f64()
                            .filter(|f| f.fract() == 0.0 && f.abs() <= 9_007_199_254_740_992.0)
                            .map(|f| f as i64)
                    })
                })
                .map(Value::Int))
        }
        N::json_float => {
            let j = a(0);
            opt(json_arg(&j)
                .and_then(|j| j.as_f64())
                .filter(|x| x.is_finite())
                .map(Value::Float))
        }
        N::json_string => {
            let j = a(0);
            opt(json_arg(&j)
                .and_then(|j| j.as_str())
                .map(|s| Value::Str(Rc::from(s))))
        }
        N::json_bool => {
            let j = a(0);
            opt(json_arg(&j).and_then(|j| j.as_bool()).map(Value::Bool))
        }
        N::json_list => {
            let j = a(0);
            match json_arg(&j).and_then(|j| j.as_array()) {
                Some(xs) => {
                    m.charge(xs.len() as u64 / 8, id)?;
                    some(list(xs.iter().map(json_value).collect()))
                }
                None => Value::None,
            }
        }
        N::json_keys => {
            let j = a(0);
            opt(json_arg(&j)
                .and_then(|j| j.as_object())
                .map(|o| list(o.keys().map(|k| Value::Str(Rc::from(k.as_str()))).collect())))
        }
        N::json_is_null => Value::Bool(matches!(json_arg(&a(0)), Some(Json::Null))),
        N::to_json => {
            let v = a(0);
            let nodes = v.size_up_to(m.limits().max_value_nodes);
            match nodes {
                Some(n) => m.charge(n as u64, id)?,
                None => {
                    return Err(limit(
                        m,
                        id,
                        "`to_json` of a value larger than the value-size limit".to_string(),
                        "convert a smaller value",
                    ))
                }
            }
            Value::Json(Rc::new(v.to_json()))
        }
        N::parse_json => {
            let s = a(0);
            let s = str_arg(&s);
            m.charge((s.len() / 16) as u64, id)?;
            opt(crate::runtime::boundary::parse_json_text(s).map(|j| Value::Json(Rc::new(j))))
        }
    })
}
