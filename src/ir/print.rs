//! `lt check --emit ir`: the IR as an indented tree, one node per line.
//!
//! ```text
//! #0 try_and_check                                   1:1
//!   call: #1 exec lookup_account                     1:7
//!     arg: #2 const "cust_12345"                     1:31
//!   Ok(account → %0): #3 const "found"               2:17
//! ```
//!
//! `#N` is the node id (the `exec` ids are the call identities' roots),
//! `%N` a slot of the current frame, `^N` a captured variable, and the
//! column on the right the node's source position (line:column).

use super::{Arm, ArmTest, Ir, NodeId, NodeKind, VarRef};
use crate::source::SourceFile;
use std::fmt::Write as _;

/// The whole IR: the tools, the top frame's size, then the tree.
pub fn print(ir: &Ir, file: &SourceFile) -> String {
    let mut p = Printer {
        ir,
        file,
        anonymous: false,
        out: String::new(),
    };
    for (i, t) in ir.tools.iter().enumerate() {
        let _ = writeln!(
            p.out,
            "tool {i}: {}: {} -{}-> {}",
            t.name, t.input, t.effects, t.output
        );
    }
    let _ = writeln!(p.out, "frame: {}", slots(ir.frame_size));
    p.node("", ir.root, 0);
    p.out
}

/// The IR with the source left out: no positions, no variable names
/// (`_` instead: slots and captures already say which binding a use
/// reads), the tools sorted by name. Two programs that differ only in
/// formatting, comments, the names of their variables or the order of
/// their declarations print the same (`lt agent --samples N --agree K`
/// compares programs this way). Tool, field and native names stay: they
/// change what runs.
pub fn print_anonymous(ir: &Ir) -> String {
    let file = SourceFile::new(String::new(), String::new());
    let mut p = Printer {
        ir,
        file: &file,
        anonymous: true,
        out: String::new(),
    };
    let mut tools: Vec<String> = ir
        .tools
        .iter()
        .map(|t| format!("tool {}: {} -{}-> {}", t.name, t.input, t.effects, t.output))
        .collect();
    tools.sort();
    for t in tools {
        let _ = writeln!(p.out, "{t}");
    }
    let _ = writeln!(p.out, "frame: {}", slots(ir.frame_size));
    p.node("", ir.root, 0);
    p.out
}

fn slots(n: u32) -> String {
    if n == 1 {
        "1 slot".to_string()
    } else {
        format!("{n} slots")
    }
}

struct Printer<'a> {
    ir: &'a Ir,
    file: &'a SourceFile,
    /// Leave out positions and variable names ([`print_anonymous`]).
    anonymous: bool,
    out: String,
}

const POSITION_COLUMN: usize = 56;

impl Printer<'_> {
    fn line(&mut self, depth: usize, text: &str, id: NodeId) {
        let start = self.out.len();
        for _ in 0..depth {
            self.out.push_str("  ");
        }
        self.out.push_str(text);
        if self.anonymous {
            self.out.push('\n');
            return;
        }
        let width = self.out[start..].chars().count();
        let lc = self.file.line_col(self.ir.node(id).span.start);
        let pad = POSITION_COLUMN.saturating_sub(width).max(2);
        let _ = writeln!(self.out, "{:pad$}{}:{}", "", lc.line, lc.column);
    }

    /// A variable's name, or `_` when printing anonymously.
    fn var<'n>(&self, name: &'n str) -> &'n str {
        if self.anonymous {
            "_"
        } else {
            name
        }
    }

    fn node(&mut self, role: &str, id: NodeId, depth: usize) {
        stacker::maybe_grow(64 * 1024, 1024 * 1024, || self.node_inner(role, id, depth));
    }

    fn node_inner(&mut self, role: &str, id: NodeId, depth: usize) {
        let ir = self.ir;
        let kind = &ir.node(id).kind;
        let head = if self.anonymous {
            format!("{role}{}", kind.name())
        } else {
            format!("{role}#{id} {}", kind.name())
        };
        match kind {
            NodeKind::Sequence { steps, body } | NodeKind::Pipe { steps, body } => {
                self.line(depth, &head, id);
                for s in steps {
                    self.node(
                        &format!("{} → %{}: ", self.var(&s.name), s.slot),
                        s.value,
                        depth + 1,
                    );
                }
                self.node("in: ", *body, depth + 1);
            }
            NodeKind::ForEach { mode, func, items } => {
                let note = match mode {
                    crate::ir::ForEachMode::Traverse => ", stops at the first Err",
                    crate::ir::ForEachMode::FanOut => ", concurrent",
                    _ => "",
                };
                self.line(depth, &format!("{head}[{}{note}]", mode.as_str()), id);
                self.node("each: ", *func, depth + 1);
                self.node("items: ", *items, depth + 1);
            }
            NodeKind::Reduce { func, init, items } => {
                self.line(depth, &head, id);
                self.node("step: ", *func, depth + 1);
                self.node("init: ", *init, depth + 1);
                self.node("items: ", *items, depth + 1);
            }
            NodeKind::Annotate { annotation, body } => {
                let mut text = format!("{head} intent={:?}", annotation.intent);
                if let Some(h) = &annotation.hypothesis {
                    text.push_str(&format!(" hypothesis={h:?}"));
                }
                if let Some(n) = &annotation.notes {
                    text.push_str(&format!(" notes={n:?}"));
                }
                self.line(depth, &text, id);
                self.node("do: ", *body, depth + 1);
            }
            NodeKind::Approve { tool, arg } => {
                let name = ir.tools.get(*tool as usize).map_or("?", |t| &*t.name);
                self.line(depth, &format!("{head} {name}"), id);
                self.node("arg: ", *arg, depth + 1);
            }
            NodeKind::Scope { body } => {
                self.line(depth, &format!("{head} (undo on Err)"), id);
                self.node("do: ", *body, depth + 1);
            }
            NodeKind::BoundedLoop { max, init, step } => {
                self.line(depth, &format!("{head} max={max}"), id);
                self.node("init: ", *init, depth + 1);
                self.node("step: ", *step, depth + 1);
            }
            NodeKind::Gather { fields } => {
                self.line(depth, &format!("{head} (concurrent)"), id);
                self.fields(fields, depth + 1, true);
            }
            NodeKind::Record(fields) => {
                self.line(depth, &head, id);
                self.fields(fields, depth + 1, false);
            }
            NodeKind::TryAndCheck { call, arms } => {
                self.line(depth, &head, id);
                self.node("do: ", *call, depth + 1);
                self.arms(arms, depth + 1);
            }
            NodeKind::Match { scrutinee, arms } => {
                self.line(depth, &head, id);
                self.node("on: ", *scrutinee, depth + 1);
                self.arms(arms, depth + 1);
            }
            NodeKind::Exec { tool, arg } => {
                let name = ir.tools.get(*tool as usize).map_or("?", |t| &*t.name);
                self.line(depth, &format!("{head} {name}"), id);
                self.node("arg: ", *arg, depth + 1);
            }
            NodeKind::Const(v) => self.line(depth, &format!("{head} {v}"), id),
            NodeKind::Local(s, name) => {
                let text = format!("{head} %{s} ({})", self.var(name));
                self.line(depth, &text, id)
            }
            NodeKind::Capture(c, name) => {
                let text = format!("{head} ^{c} ({})", self.var(name));
                self.line(depth, &text, id)
            }
            NodeKind::Field(r, name) => {
                self.line(depth, &format!("{head} .{name}"), id);
                self.node("of: ", *r, depth + 1);
            }
            NodeKind::List(items) => {
                self.line(depth, &format!("{head} ({} items)", items.len()), id);
                for (i, x) in items.iter().enumerate() {
                    self.node(&format!("{i}: "), *x, depth + 1);
                }
            }
            NodeKind::Update(base, fields) => {
                self.line(depth, &head, id);
                self.node("of: ", *base, depth + 1);
                for (name, v) in fields {
                    self.node(&format!("{name}: "), *v, depth + 1);
                }
            }
            NodeKind::Native { func, args } => {
                let name = crate::stdlib::NATIVES
                    .get(*func as usize)
                    .map_or("?", |n| n.name);
                self.line(depth, &format!("{head} {name}"), id);
                for a in args {
                    self.node("arg: ", *a, depth + 1);
                }
            }
            NodeKind::Ok(x) | NodeKind::Err(x) | NodeKind::Some(x) | NodeKind::Neg(x) => {
                self.line(depth, &head, id);
                self.node("", *x, depth + 1);
            }
            NodeKind::Binary(op, a, b) => {
                self.line(depth, &format!("{head} {}", op.as_str()), id);
                self.node("lhs: ", *a, depth + 1);
                self.node("rhs: ", *b, depth + 1);
            }
            NodeKind::If(c, a, b) => {
                self.line(depth, &head, id);
                self.node("if: ", *c, depth + 1);
                self.node("then: ", *a, depth + 1);
                self.node("else: ", *b, depth + 1);
            }
            NodeKind::Lambda(l) => {
                let params: Vec<String> = l
                    .params
                    .iter()
                    .enumerate()
                    .map(|(i, p)| format!("{} → %{i}", self.var(p)))
                    .collect();
                let caps: Vec<String> = l
                    .captures
                    .iter()
                    .enumerate()
                    .map(|(i, (c, name))| match c {
                        VarRef::Local(s) => format!("^{i} = %{s} ({})", self.var(name)),
                        VarRef::Capture(s) => format!("^{i} = ^{s} ({})", self.var(name)),
                    })
                    .collect();
                let mut text = format!("{head} ({})", params.join(", "));
                if !caps.is_empty() {
                    let _ = write!(text, " captures {}", caps.join(", "));
                }
                let _ = write!(text, ", {}", slots(l.frame_size));
                self.line(depth, &text, id);
                self.node("body: ", l.body, depth + 1);
            }
            NodeKind::Apply(f, args) => {
                self.line(depth, &head, id);
                self.node("fn: ", *f, depth + 1);
                for a in args {
                    self.node("arg: ", *a, depth + 1);
                }
            }
        }
    }

    /// The fields of a record or `gather`, in order; printing anonymously,
    /// sorted by name when the order cannot be observed: always for a
    /// `gather` (its calls run concurrently), and for a record whose field
    /// values contain nothing that could call a tool (their evaluation
    /// order is then invisible).
    fn fields<N: std::fmt::Display>(
        &mut self,
        fields: &[(N, NodeId)],
        depth: usize,
        concurrent: bool,
    ) {
        if !self.anonymous {
            for (name, v) in fields {
                self.node(&format!("{name}: "), *v, depth);
            }
            return;
        }
        const MAY_CALL: [&str; 8] = [
            "exec",
            "apply",
            "approve",
            "annotate",
            "gather",
            "for_each",
            "bounded_loop",
            "scope",
        ];
        let mut parts: Vec<(String, String)> = Vec::with_capacity(fields.len());
        for (name, v) in fields {
            let saved = std::mem::take(&mut self.out);
            self.node(&format!("{name}: "), *v, depth);
            let text = std::mem::replace(&mut self.out, saved);
            parts.push((name.to_string(), text));
        }
        let may_call = parts
            .iter()
            .any(|(_, t)| MAY_CALL.iter().any(|k| t.contains(k)));
        if concurrent || !may_call {
            parts.sort_by(|a, b| a.0.cmp(&b.0));
        }
        for (_, text) in parts {
            self.out.push_str(&text);
        }
    }

    fn arms(&mut self, arms: &[Arm], depth: usize) {
        for arm in arms {
            let binder = match (&arm.name, arm.bind) {
                (Some(n), Some(s)) => format!("{} → %{s}", self.var(n)),
                _ => "_".to_string(),
            };
            let role = match &arm.test {
                ArmTest::Ok => format!("Ok({binder}) => "),
                ArmTest::Err => format!("Err({binder}) => "),
                ArmTest::Some => format!("Some({binder}) => "),
                ArmTest::None => "None => ".to_string(),
                ArmTest::Str(s) => format!("{s:?} => "),
                ArmTest::Any => format!("{binder} => "),
            };
            self.node(&role, arm.body, depth);
        }
    }
}
