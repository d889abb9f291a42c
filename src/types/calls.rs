//! Application and tool calls: `f x y`, `exec tool NAME arg`.
//!
//! An application spine is collected iteratively (`f a b c`), so that a
//! builtin at its head is typed by [`super::builtins`] and a block followed
//! by another expression (two programs in a row) gets its own error. Each
//! argument is checked against the parameter type, and the function's latent
//! effect row is performed at the call. `exec tool NAME arg` checks the
//! argument against the tool's input (a record literal field by field; a `!T`
//! may be passed as plain data here, the tool consumes it), performs the
//! tool's effects (and, for a tool with an `undo`, the undo tool's: a scope
//! the call runs in may undo it; for one without, a call a scope could not
//! roll back, [`super::undo`]), and has type `Result<Out, String>`.

use super::checker::Checker;
use super::infer::BUILTINS;
use super::ty::Type;
use crate::diag::{did_you_mean, Code, Diagnostic};
use crate::source::Span;
use crate::syntax::ast::*;

impl Checker<'_> {
    pub(super) fn synth_app(&mut self, e: &Expr) -> Type {
        let expected = self.expected_app.take();
        let mut args: Vec<(&Expr, Span)> = Vec::new();
        let mut head = e;
        while let ExprKind::App(f, a) = &head.kind {
            args.push((a, head.span));
            head = f;
        }
        args.reverse();
        if let ExprKind::Var(id) = &head.kind {
            if BUILTINS.contains(&&*id.name) && !self.env.contains(&id.name) {
                return self.builtin(id, &args);
            }
            if !self.env.contains(&id.name) {
                if let Some(native) = crate::stdlib::lookup(&id.name) {
                    return self.native_app(native, head, &args, expected.as_ref());
                }
            }
        }
        if let ExprKind::Exec(tool, tool_arg) = &head.kind {
            if !args.is_empty() {
                return self.exec_with_extra_args(tool, tool_arg, head.span, &args);
            }
        }
        let what = match &head.kind {
            ExprKind::Var(id) => format!("calling `{}`", id.name),
            _ => "this call".to_string(),
        };
        let mut fty = self.synth(head);
        let block = matches!(
            head.kind,
            ExprKind::Match(..) | ExprKind::If(..) | ExprKind::Let(..)
        );
        let applicable = matches!(
            &*self.metas.resolve(&fty),
            Type::Fun(..) | Type::Linear(_) | Type::Meta(_) | Type::Error
        );
        if block && !applicable {
            if let Some(&(next, _)) = args.first() {
                for (a, _) in &args {
                    self.synth(a);
                }
                let d = Diagnostic::error(Code::E0206, next.span, "a program is one expression, but a second one follows")
                    .with_label("this starts a second expression")
                    .with_secondary(head.span, "the first expression ends here")
                    .with_help(
                        "to run steps in order, nest them: bind the first step's result with `let r = … in` and \
                         continue in its body, or call the next tool inside the `Ok` arm",
                    );
                self.diags.push(d);
                return Type::Error;
            }
        }
        let mut callee_span = head.span;
        for (arg, app_span) in args {
            fty = self.apply(fty, callee_span, arg, app_span, &what);
            callee_span = app_span;
        }
        fty
    }

    /// Applies a function of type `fty` (spanning `callee`) to `arg`.
    pub(super) fn apply(
        &mut self,
        fty: Type,
        callee: Span,
        arg: &Expr,
        app: Span,
        what: &str,
    ) -> Type {
        let resolved = self.metas.resolve_peeled(&fty).into_owned();
        match resolved {
            Type::Fun(p, eff, r) => {
                self.check(arg, &p);
                self.perform_at(&eff, app, what, callee);
                *r
            }
            Type::Error => {
                self.synth(arg);
                Type::Error
            }
            Type::Meta(id) => {
                self.synth(arg);
                let mut d =
                    Diagnostic::error(Code::E0209, callee, "cannot tell what function this is")
                        .with_label("its type is not known here");
                if let Some((origin, what)) = self.metas.origin(id) {
                    d = d.with_secondary(origin, what);
                }
                self.diags.push(d.with_help(
                    "annotate the parameter with a function type, e.g. `fn f: Int -{}-> Int => …`",
                ));
                Type::Error
            }
            _ if matches!(arg.kind, ExprKind::Error) => Type::Error,
            other => {
                self.synth(arg);
                let shown = self.show(&other);
                let mut d = Diagnostic::error(
                    Code::E0206,
                    arg.span,
                    format!("a value of type `{shown}` is not a function"),
                )
                .with_label("this is passed as an argument")
                .with_secondary(callee, format!("this has type `{shown}`"));
                d = if matches!(other, Type::Result(..)) {
                    d.with_help(
                        "a Result must be matched first: `match … { Ok(v) => …, Err(e) => … }`",
                    )
                } else {
                    d.with_help("remove the extra argument, or add the missing operator or parentheses (application binds tighter than `+`)")
                };
                self.diags.push(d);
                Type::Error
            }
        }
    }

    pub(super) fn exec(&mut self, tool: &Ident, arg: &Expr, span: Span) -> Type {
        let Some(sig) = self.tool(&tool.name) else {
            self.synth(arg);
            let allowed = self.suggestions_allowed();
            let names: Vec<&str> = if allowed {
                self.tools.iter().map(|t| &*t.name).collect()
            } else {
                Vec::new()
            };
            let mut d = Diagnostic::error(
                Code::E0204,
                tool.span,
                format!("unknown tool `{}`", tool.name),
            )
            .with_label("no tool with this name is declared");
            d = match did_you_mean(&tool.name, names.iter().copied()) {
                Some(s) => d.with_help(format!("did you mean `{s}`?")),
                None if !allowed => {
                    d.with_help("declare the tool before the program, or use a declared one")
                }
                None if names.is_empty() => d.with_help(format!(
                    "no tool is declared: take `{}` from its declarations file (`lt tools import` writes `tools.lt` from the tools' schemas): `lt check FILE --tools tools.lt`, or copy its declaration above the program",
                    tool.name
                )),
                None => d.with_help(format!("the declared tools are: {}", names.join(", "))),
            };
            self.diags.push(d);
            return Type::result(Type::Error, Type::String);
        };
        match (&arg.kind, self.metas.resolve(&sig.input).into_owned()) {
            (ExprKind::Record(fields), Type::Record(fe)) => {
                self.check_record(fields, &fe, arg.span, Some(&sig.name), true);
            }
            _ => {
                self.consuming = true;
                self.check(arg, &sig.input);
            }
        }
        self.perform(&sig.effects, span, &format!("`exec tool {}`", sig.name));
        if self.irrevocable(&sig.name).is_some() {
            self.irrevocable_call(&sig.name, tool.span, &sig.effects);
        }
        // A call with an undo may be rolled back by any scope it runs in at
        // run time, also one it reaches through a function defined outside:
        // the undo's effects are the call's too.
        if let Some(undo) = sig.undo.as_ref().and_then(|u| self.tool(&u.tool)) {
            let what = format!("the undo of `{}` (`{}`)", sig.name, undo.name);
            self.perform(&undo.effects, span, &what);
        }
        Type::result(sig.output.clone(), Type::String)
    }

    /// `exec tool t a b …`: a tool takes one argument. One error, suggesting
    /// the record the tool takes.
    pub(super) fn exec_with_extra_args(
        &mut self,
        tool: &Ident,
        arg: &Expr,
        head: Span,
        extra: &[(&Expr, Span)],
    ) -> Type {
        let sig = self.tool(&tool.name);
        match &sig {
            Some(_) => {
                self.synth(arg);
            }
            None => {
                self.exec(tool, arg, head);
            }
        }
        for (e, _) in extra {
            self.synth(e);
        }
        if let (Some(sig), Some(&(first, _))) = (sig, extra.first()) {
            let example = match self.metas.resolve(&sig.input).into_owned() {
                Type::Record(fs) if !fs.is_empty() => fs
                    .iter()
                    .map(|(n, _)| format!("{n} = …"))
                    .collect::<Vec<_>>()
                    .join(", "),
                _ => "a = …, b = …".to_string(),
            };
            let d = Diagnostic::error(
                Code::E0206,
                first.span,
                format!("tool `{}` takes one argument", tool.name),
            )
            .with_label("extra argument")
            .with_secondary(arg.span, "this is the tool's argument")
            .with_note(format!(
                "tool `{}` takes {}",
                tool.name,
                self.show(&sig.input)
            ))
            .with_help(format!(
                "pass the values as one record: `exec tool {} {{{example}}}`",
                tool.name
            ));
            self.diags.push(d);
        }
        Type::result(Type::Error, Type::String)
    }
}
