//! The state of one checking run ([`Checker`]) and the records it keeps
//! for the checks that run once the program is typed ([`Collected`],
//! [`ScopedCall`]). Its methods are spread over the files of this folder,
//! one judgement or check each (`infer.rs`: synth and check; `calls.rs`,
//! `combinators.rs`, `undo.rs`, …); this file is below all of them.

use super::decls::{ToolSig, TypeEnv};
use super::ty::{EffectSet, Type};
use super::unify::Metas;
use crate::diag::Diagnostic;
use crate::scope::Scope;
use crate::source::Span;
use crate::syntax::ast::{BinOp, Name};
use rustc_hash::FxHashMap as HashMap;
use std::collections::HashSet;
use std::rc::Rc;
/// A variable in scope. The type is shared with
/// [`Checker::binder_types`] (and, for a `let`, [`Checker::let_types`]).
#[derive(Clone, Debug)]
pub(super) struct VarInfo {
    pub ty: Rc<Type>,
}

/// Why a context allows only some effects, for `E0401`.
#[derive(Clone, Debug)]
pub(super) struct Allowed {
    pub set: EffectSet,
    pub span: Span,
    pub reason: String,
    pub help: String,
}

/// One function body being checked (the first frame is the program's).
pub(super) struct Frame {
    pub performed: EffectSet,
    pub allowed: Option<Allowed>,
    /// The undo variable of the function (none for the program): whether
    /// it may make a call a `scope` cannot roll back ([`super::undo`]).
    pub undo: Option<u32>,
    /// The `scope`s open in this body, innermost last.
    pub scopes: Vec<Span>,
}

impl Frame {
    pub(super) fn new(allowed: Option<Allowed>, undo: Option<u32>) -> Frame {
        Frame {
            performed: EffectSet::pure(),
            allowed,
            undo,
            scopes: Vec::new(),
        }
    }
}

/// The state of one checking run.
pub struct Checker<'a> {
    pub(super) metas: Metas,
    pub(super) diags: Vec<Diagnostic>,
    pub(super) tools: &'a [ToolSig],
    /// Type aliases and declared effect labels.
    pub(super) types: &'a TypeEnv,
    /// Record literals checked against a record type that omit some of its
    /// `Option` fields: literal span → the omitted fields (lowering fills
    /// them with `None`).
    pub(super) omitted_fields: HashMap<Span, Vec<Name>>,
    /// Type parameters of natives that must be ordered: `(metavariable, use, native)`.
    pub(super) ordered: Vec<(Type, Span, &'static str)>,
    /// Every type parameter of a native: `(metavariable, use, native)`.
    pub(super) data_vars: Vec<(Type, Span, &'static str)>,
    /// `==`/`!=` whose operand type held unsolved metavariables: `(type, operator span, op)`.
    pub(super) comparisons: Vec<(Type, Span, BinOp)>,
    /// Values a `traverse`, `fan_out` or `gather` holds on to or may drop,
    /// checked for linear types once the program is typed (E0506).
    pub(super) collected: Vec<Collected>,
    /// Functions applied inside a `scope`, checked once the program is
    /// typed (E0220).
    pub(super) scoped_calls: Vec<ScopedCall>,
    /// The irrevocable calls reported as E0220: `(scope, tool)`.
    pub(super) undo_reported: Vec<(Span, Name)>,
    pub(super) tool_index: HashMap<Name, usize>,
    /// The variables in scope (each binding undone when its scope ends).
    pub(super) env: Scope<VarInfo>,
    pub(super) frames: Vec<Frame>,
    pub(super) callback_reason: Option<Allowed>,
    /// Set just before checking a tool's argument (or a field of a record
    /// literal that is one): a linear value may be passed as plain data there,
    /// because the tool consumes it.
    pub(super) consuming: bool,
    /// The type expected of the application being synthesized, when it is
    /// checked (taken by the first `synth_app`, so only the outermost
    /// application sees it).
    pub(super) expected_app: Option<Type>,
    /// Whether E0215 was reported (once per program: after it the same
    /// doubling usually starts again from the error type).
    pub(super) type_size_reported: bool,
    /// While checking a later branch against the first branch's type:
    /// `(later branch span, first branch span, what the first branch is)`.
    pub(super) branch_ctx: Option<(Span, Span, &'static str)>,
    pub(super) recursive_refs: &'a HashSet<Span>,
    /// `(name span, name, type)` of every `let`, in source order.
    pub(super) let_types: Vec<(Span, Name, Rc<Type>)>,
    /// The type of every binder (let, parameter, pattern), by binder span.
    pub(super) binder_types: HashMap<Span, Rc<Type>>,
}

impl<'a> Checker<'a> {
    /// A checker over the declared `tools`; `recursive_refs` are the spans of
    /// self-references already reported by validation (E0302).
    pub fn new(
        tools: &'a [ToolSig],
        types: &'a TypeEnv,
        recursive_refs: &'a HashSet<Span>,
    ) -> Checker<'a> {
        Checker {
            metas: Metas::default(),
            diags: Vec::new(),
            tools,
            types,
            omitted_fields: HashMap::default(),
            ordered: Vec::new(),
            data_vars: Vec::new(),
            comparisons: Vec::new(),
            collected: Vec::new(),
            scoped_calls: Vec::new(),
            undo_reported: Vec::new(),
            tool_index: tools
                .iter()
                .enumerate()
                .map(|(i, t)| (t.name.clone(), i))
                .collect(),
            env: Scope::default(),
            frames: vec![Frame::new(None, None)],
            callback_reason: None,
            consuming: false,
            expected_app: None,
            type_size_reported: false,
            branch_ctx: None,
            recursive_refs,
            let_types: Vec::new(),
            binder_types: HashMap::default(),
        }
    }

    /// Makes room for `binders` variables (and their types) at once; for
    /// a fresh checker (its scope is replaced by an empty one).
    pub fn reserve(&mut self, binders: usize) {
        self.env = Scope::with_capacity(binders);
        self.binder_types.reserve(binders);
        self.let_types.reserve(binders);
    }

    /// The declared tool called `name`.
    pub(super) fn tool(&self, name: &str) -> Option<&'a ToolSig> {
        let tools: &'a [ToolSig] = self.tools;
        self.tool_index.get(name).map(|&i| &tools[i])
    }

    /// Whether to search for "did you mean" candidates: only while few
    /// diagnostics exist (at most [`MAX_DIAGNOSTICS`](super::MAX_DIAGNOSTICS)
    /// are shown), so that a program with thousands of errors stays linear.
    pub(super) fn suggestions_allowed(&self) -> bool {
        self.diags.len() < 2 * super::MAX_DIAGNOSTICS
    }

    /// The effects performed at the top level so far.
    pub fn top_effects(&self) -> EffectSet {
        self.frames
            .first()
            .map(|f| f.performed.clone())
            .unwrap_or_default()
    }

    /// `t` with solved metavariables substituted, for messages.
    pub(super) fn show(&self, t: &Type) -> String {
        self.metas.show_bounded(t, 300)
    }
}

/// What a `traverse`, `fan_out` or `gather` holds, to be checked for linear
/// types once the program is typed (E0506).
pub struct Collected {
    /// The type of the values held: the results (element type or record),
    /// or the elements a `traverse` walks.
    pub ty: Type,
    /// The combinator's name (or its `gather`).
    pub span: Span,
    /// `traverse`, `fan_out` or `gather`.
    pub name: &'static str,
    /// True for the elements a `traverse` walks (false for results).
    pub elements: bool,
}

/// A function applied inside a `scope`, to be checked once the variables
/// are solved.
pub struct ScopedCall {
    /// The variable of the function applied.
    pub var: u32,
    /// The function applied (`f` in `f x`), or the builtin calling it.
    pub at: Span,
    /// What makes the call, for messages: "`f`", "the callback of `traverse`".
    pub subject: String,
    /// The effects of the function (beyond the undo variable).
    pub effects: EffectSet,
    /// The innermost enclosing `scope`.
    pub scope: Span,
}
