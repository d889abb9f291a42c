//! Mutations of well-typed programs into the classic bugs, on the syntax
//! tree: each picks one place where the bug can be made (a field read, a
//! match on a Result, a use of a linear variable, a `map` callback, a `let`)
//! and makes it there. The mutated tree is printed and checked; the checker
//! must reject it with the bug's code.
//!
//! Linear variables are recognised by name: the generator names every
//! linear binder (tokens, minted records, approvals) `tk…`, and nothing else.

use crate::gen::{closed_value, texpr, Rng, ToolDef, Ty};
use lt::source::Span;
use lt::syntax::ast::*;

/// The classic bugs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Bug {
    /// Read a field that does not exist (a renamed field): E0202.
    RenameField,
    /// Leave out the `Err` arm of a match on a Result: E0604.
    DropErrArm,
    /// Use a linear value a second time: E0501.
    TokenTwice,
    /// Call a tool inside a `map` callback: E0401.
    ToolInMap,
    /// Make a `let` refer to itself: E0302.
    Recursion,
    /// Collect minted tokens in a `traverse`, `fan_out` or `gather`: E0506.
    CollectToken,
    /// Apply, inside a `scope`, a function defined outside it that calls a
    /// tool without an undo: E0220.
    IrrevocableInScope,
}

impl Bug {
    /// Every bug.
    pub const ALL: [Bug; 7] = [
        Bug::RenameField,
        Bug::DropErrArm,
        Bug::TokenTwice,
        Bug::ToolInMap,
        Bug::Recursion,
        Bug::CollectToken,
        Bug::IrrevocableInScope,
    ];

    /// The code the checker must report.
    pub fn code(self) -> &'static str {
        match self {
            Bug::RenameField => "E0202",
            Bug::DropErrArm => "E0604",
            Bug::TokenTwice => "E0501",
            Bug::ToolInMap => "E0401",
            Bug::Recursion => "E0302",
            Bug::CollectToken => "E0506",
            Bug::IrrevocableInScope => "E0220",
        }
    }

    /// A short name for reports.
    pub fn name(self) -> &'static str {
        match self {
            Bug::RenameField => "rename a field read",
            Bug::DropErrArm => "drop an Err arm",
            Bug::TokenTwice => "use a token twice",
            Bug::ToolInMap => "call a tool inside map",
            Bug::Recursion => "add recursion",
            Bug::CollectToken => "collect tokens in a traverse",
            Bug::IrrevocableInScope => "apply a function without undo in a scope",
        }
    }
}

fn sp() -> Span {
    Span::new(0, 0)
}
fn ident(n: &str) -> Ident {
    Ident {
        name: n.into(),
        span: sp(),
    }
}
fn mk(kind: ExprKind) -> Expr {
    Expr::new(kind, sp())
}

/// Calls `f` on every expression of `e`, outermost first.
fn visit(e: &mut Expr, f: &mut dyn FnMut(&mut Expr)) {
    f(e);
    match &mut e.kind {
        ExprKind::Let(chain) => {
            for b in chain.bindings.iter_mut() {
                visit(&mut b.value, f);
            }
            visit(&mut chain.body, f);
        }
        ExprKind::Fn { body, .. } => visit(body, f),
        ExprKind::App(a, b) | ExprKind::Binary(_, _, a, b) => {
            visit(a, f);
            visit(b, f);
        }
        ExprKind::If(a, b, c) => {
            visit(a, f);
            visit(b, f);
            visit(c, f);
        }
        ExprKind::Match(s, arms) => {
            visit(s, f);
            for arm in arms {
                visit(&mut arm.body, f);
            }
        }
        ExprKind::Record(fields) => fields.iter_mut().for_each(|x| visit(&mut x.value, f)),
        ExprKind::Update(base, fields) => {
            visit(base, f);
            fields.iter_mut().for_each(|x| visit(&mut x.value, f));
        }
        ExprKind::List(items, _) => items.iter_mut().for_each(|x| visit(x, f)),
        ExprKind::Field(x, _)
        | ExprKind::Ok(x)
        | ExprKind::Err(x)
        | ExprKind::Some(x)
        | ExprKind::Exec(_, x)
        | ExprKind::Approve(_, x)
        | ExprKind::Gather(x)
        | ExprKind::Scope(x)
        | ExprKind::Annotate(_, x)
        | ExprKind::Neg(x) => visit(x, f),
        ExprKind::Loop { head, body, .. } => {
            visit(head, f);
            visit(body, f);
        }
        ExprKind::Unit
        | ExprKind::Bool(_)
        | ExprKind::Int(_)
        | ExprKind::Float(_)
        | ExprKind::Str(_)
        | ExprKind::Var(_)
        | ExprKind::None
        | ExprKind::Error => {}
    }
}

/// Applies `change` to one node (picked at random) among those `is_site`
/// accepts. False when there is none.
fn at_random_site(
    body: &mut Expr,
    rng: &mut Rng,
    is_site: &dyn Fn(&Expr) -> bool,
    change: &mut dyn FnMut(&mut Expr),
) -> bool {
    let mut n = 0usize;
    visit(body, &mut |e| {
        if is_site(e) {
            n += 1;
        }
    });
    if n == 0 {
        return false;
    }
    let target = rng.below(n);
    let mut i = 0usize;
    let mut done = false;
    visit(body, &mut |e| {
        if !done && is_site(e) {
            if i == target {
                change(e);
                done = true;
            }
            i += 1;
        }
    });
    done
}

fn is_result_match(e: &Expr) -> bool {
    let ExprKind::Match(_, arms) = &e.kind else {
        return false;
    };
    arms.iter()
        .any(|a| matches!(a.pattern.kind, PatternKind::Ok(_)))
        && arms
            .iter()
            .any(|a| matches!(a.pattern.kind, PatternKind::Err(_)))
}

fn var(n: &str) -> Expr {
    mk(ExprKind::Var(ident(n)))
}

fn app(f: Expr, a: Expr) -> Expr {
    mk(ExprKind::App(Box::new(f), Box::new(a)))
}

fn arm(kind: PatternKind, body: Expr) -> Arm {
    Arm {
        pattern: Pattern { kind, span: sp() },
        body,
        span: sp(),
    }
}

fn lam(p: &str, annot: Option<TypeExpr>, body: Expr) -> Expr {
    mk(ExprKind::Fn {
        param: ident(p),
        annot: annot.map(Box::new),
        body: Box::new(body),
    })
}

fn let_in(name: &str, value: Expr, body: Expr) -> Expr {
    let binding = LetBinding {
        rec_kw: None,
        name: ident(name),
        annot: None,
        value,
        span: sp(),
    };
    mk(ExprKind::Let(Box::new(LetChain {
        bindings: [binding].into(),
        body,
    })))
}

fn is_map_callback(e: &Expr) -> bool {
    let ExprKind::App(f, _) = &e.kind else {
        return false;
    };
    let ExprKind::App(head, cb) = &f.kind else {
        return false;
    };
    matches!(&head.kind, ExprKind::Var(x) if &*x.name == "map")
        && matches!(cb.kind, ExprKind::Fn { .. })
}

/// The program with `bug` made at a random place, or `None` when the
/// program has no place for it.
pub fn mutate(program: &Program, tools: &[ToolDef], bug: Bug, seed: u64) -> Option<Program> {
    let mut p = program.clone();
    let mut rng = Rng::new(seed);
    let applied = match bug {
        Bug::RenameField => at_random_site(
            &mut p.body,
            &mut rng,
            &|e| matches!(e.kind, ExprKind::Field(..)),
            &mut |e| {
                if let ExprKind::Field(_, f) = &mut e.kind {
                    f.name = format!("{}_renamed", f.name).into();
                }
            },
        ),
        Bug::DropErrArm => at_random_site(&mut p.body, &mut rng, &is_result_match, &mut |e| {
            if let ExprKind::Match(_, arms) = &mut e.kind {
                arms.retain(|a| !matches!(a.pattern.kind, PatternKind::Err(_)));
            }
        }),
        Bug::TokenTwice => at_random_site(
            &mut p.body,
            &mut rng,
            &|e| matches!(&e.kind, ExprKind::Var(x) if x.name.starts_with("tk")),
            &mut |e| {
                // x  →  (let dup = x in x)
                let x = e.clone();
                let binding = LetBinding {
                    rec_kw: None,
                    name: ident("dup_use"),
                    annot: None,
                    value: x.clone(),
                    span: sp(),
                };
                *e = mk(ExprKind::Let(Box::new(LetChain {
                    bindings: [binding].into(),
                    body: x,
                })));
            },
        ),
        Bug::ToolInMap => {
            // A tool with effects (a pure tool may be called anywhere) and
            // no approval to give.
            let usable: Vec<&ToolDef> = tools
                .iter()
                .filter(|t| !t.effects.is_empty() && t.approval_field().is_none())
                .collect();
            if usable.is_empty() {
                return None;
            }
            let t = usable[rng.below(usable.len())];
            let arg = closed_value(&t.input, rng.next());
            at_random_site(&mut p.body, &mut rng, &is_map_callback, &mut |e| {
                let ExprKind::App(f, _) = &mut e.kind else {
                    return;
                };
                let ExprKind::App(_, cb) = &mut f.kind else {
                    return;
                };
                let ExprKind::Fn { body, .. } = &mut cb.kind else {
                    return;
                };
                // body  →  match exec tool T arg { Ok(_) => body, Err(_) => body }
                let old = (**body).clone();
                let call = mk(ExprKind::Exec(ident(&t.name), Box::new(arg.clone())));
                let arm = |kind: PatternKind| Arm {
                    pattern: Pattern { kind, span: sp() },
                    body: old.clone(),
                    span: sp(),
                };
                **body = mk(ExprKind::Match(
                    Box::new(call),
                    vec![
                        arm(PatternKind::Ok(Binder::Wildcard(sp()))),
                        arm(PatternKind::Err(Binder::Wildcard(sp()))),
                    ],
                ));
            })
        }
        Bug::Recursion => {
            let has_fn = {
                let mut found = false;
                visit(&mut p.body, &mut |e| {
                    if let ExprKind::Let(chain) = &e.kind {
                        found |= chain
                            .bindings
                            .iter()
                            .any(|b| matches!(b.value.kind, ExprKind::Fn { .. }));
                    }
                });
                found
            };
            // `let _ = …` binds no name to refer to.
            let fits = move |b: &LetBinding| {
                &*b.name.name != "_" && (!has_fn || matches!(b.value.kind, ExprKind::Fn { .. }))
            };
            let is_site = move |e: &Expr| match &e.kind {
                ExprKind::Let(chain) => chain.bindings.iter().any(fits),
                _ => false,
            };
            let pick = rng.next();
            at_random_site(&mut p.body, &mut rng, &is_site, &mut |e| {
                let ExprKind::Let(chain) = &mut e.kind else {
                    return;
                };
                let sites: Vec<usize> = (0..chain.bindings.len())
                    .filter(|&i| fits(&chain.bindings[i]))
                    .collect();
                let i = sites[(pick % sites.len() as u64) as usize];
                let b = &mut chain.bindings[i];
                let me = mk(ExprKind::Var(b.name.clone()));
                let recurse = |value: Expr, call: Expr| {
                    mk(ExprKind::If(
                        Box::new(mk(ExprKind::Bool(true))),
                        Box::new(value),
                        Box::new(call),
                    ))
                };
                if let ExprKind::Fn { param, body, .. } = &mut b.value.kind {
                    // fn x => body  →  fn x => if true then body else f x
                    let call = mk(ExprKind::App(
                        Box::new(me),
                        Box::new(mk(ExprKind::Var(param.clone()))),
                    ));
                    let old = (**body).clone();
                    **body = recurse(old, call);
                } else {
                    // v  →  if true then v else x
                    let old = b.value.clone();
                    b.value = recurse(old, me);
                }
            })
        }
        Bug::CollectToken => {
            let usable: Vec<&ToolDef> = tools
                .iter()
                .filter(|t| t.mints() && t.approval_field().is_none())
                .collect();
            if usable.is_empty() {
                return None;
            }
            let t = usable[rng.below(usable.len())];
            let arg = closed_value(&t.input, rng.next());
            let form = rng.below(3);
            at_random_site(&mut p.body, &mut rng, &is_result_match, &mut |e| {
                // m  →  a match on what collects tokens, m in every arm
                let m = e.clone();
                let call = mk(ExprKind::Exec(ident(&t.name), Box::new(arg.clone())));
                let one = mk(ExprKind::List(vec![mk(ExprKind::Int(1))], None));
                let each = lam("x_col", None, call.clone());
                let results = |r: PatternKind, other: PatternKind| {
                    vec![arm(r, m.clone()), arm(other, m.clone())]
                };
                let ok_err = || {
                    results(
                        PatternKind::Ok(Binder::Var(ident("ms_col"))),
                        PatternKind::Err(Binder::Var(ident("e_col"))),
                    )
                };
                *e = match form {
                    // match traverse (fn x => exec tool T arg) [1] { Ok(ms) => m, Err(e) => m }
                    0 => mk(ExprKind::Match(
                        Box::new(app(app(var("traverse"), each), one)),
                        ok_err(),
                    )),
                    // match head (fan_out (fn x => exec tool T arg) [1]) { Some(r) => m, None => m }
                    1 => mk(ExprKind::Match(
                        Box::new(app(var("head"), app(app(var("fan_out"), each), one))),
                        results(
                            PatternKind::Some(Binder::Var(ident("r_col"))),
                            PatternKind::None,
                        ),
                    )),
                    // let g = gather {a = exec tool T arg} in match g.a { Ok(ms) => m, Err(e) => m }
                    _ => {
                        let g = mk(ExprKind::Gather(Box::new(mk(ExprKind::Record(vec![
                            Field {
                                name: ident("a"),
                                value: call,
                            },
                        ])))));
                        let field = mk(ExprKind::Field(Box::new(var("g_col")), ident("a")));
                        let_in("g_col", g, mk(ExprKind::Match(Box::new(field), ok_err())))
                    }
                };
            })
        }
        Bug::IrrevocableInScope => {
            let usable: Vec<&ToolDef> = tools
                .iter()
                .filter(|t| {
                    t.undo.is_none()
                        && t.effects.iter().any(|l| l != "Read")
                        && t.approval_field().is_none()
                })
                .collect();
            if usable.is_empty() {
                return None;
            }
            let t = usable[rng.below(usable.len())];
            let arg = closed_value(&t.input, rng.next());
            at_random_site(
                &mut p.body,
                &mut rng,
                &|e| matches!(e.kind, ExprKind::Scope(_)),
                &mut |e| {
                    let ExprKind::Scope(body) = &e.kind else {
                        return;
                    };
                    // scope { b }  →  let f = fn p: Unit => exec tool T arg in
                    //                 scope { match f () { Ok(_) => b, Err(_) => b } }
                    let b = (**body).clone();
                    let call = mk(ExprKind::Exec(ident(&t.name), Box::new(arg.clone())));
                    let f = lam("p_irr", Some(texpr(&Ty::Unit)), call);
                    let applied = mk(ExprKind::Match(
                        Box::new(app(var("f_irr"), mk(ExprKind::Unit))),
                        vec![
                            arm(PatternKind::Ok(Binder::Wildcard(sp())), b.clone()),
                            arm(PatternKind::Err(Binder::Wildcard(sp())), b),
                        ],
                    ));
                    *e = let_in("f_irr", f, mk(ExprKind::Scope(Box::new(applied))));
                },
            )
        }
    };
    applied.then_some(p)
}
