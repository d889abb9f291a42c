//! A program against a tenant: `lt check`'s rules, plus the tenant's tool
//! list (a program declares only the tenant's tools, each as the tenant
//! declares it: E0704, E0705, as `lt agent --tools` does) and the
//! profile's static check (E0701–E0703, as `lt check --profile` does).
//! Needs a big stack on deep programs: call it on a session's thread.

use super::config::Tenant;
use crate::agent::tool_list::add_tool_list_diagnostics;
use crate::control::profile::Profile;
use crate::control::report::CheckReport;
use crate::control::session::{lower_checked, Rejected};
use crate::control::static_check;
use crate::ir::Ir;
use crate::source::SourceFile;
use crate::types::{check_source, Analysis, Declarations};
use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Rc;

/// The name a program sent to the server has in diagnostics and logs.
pub const PROGRAM_NAME: &str = "program.lt";

/// Checks `file` against `tenant`'s tool list and `profile`: the analysis
/// with every diagnostic (type, tool list, policy).
pub fn analyse(tenant: &Tenant, profile: Option<&Profile>, file: &SourceFile) -> Analysis {
    let mut analysis = check_source(&file.text);
    let declarations = tenant_declarations(&tenant.declarations_text);
    add_tool_list_diagnostics(&mut analysis, &declarations, &tenant.declarations_text);
    if let Some(p) = profile {
        static_check::check_analysis(&mut analysis, p);
    }
    analysis
}

thread_local! {
    /// Tenants' declarations as checked on this thread, by their text
    /// (the session threads are reused: each checks a tenant's once).
    static DECLARATIONS: RefCell<Vec<(String, Rc<Declarations>)>> = const { RefCell::new(Vec::new()) };
}

/// Declarations texts kept per thread (one per tenant, in practice).
const KEPT_DECLARATIONS: usize = 64;

/// `text` (a tenant's declarations) checked, once per thread.
fn tenant_declarations(text: &str) -> Rc<Declarations> {
    DECLARATIONS.with(|kept| {
        if let Some((_, a)) = kept.borrow().iter().find(|(t, _)| t == text) {
            return Rc::clone(a);
        }
        let checked = Rc::new(crate::types::check_declarations(text));
        let mut kept = kept.borrow_mut();
        if kept.len() == KEPT_DECLARATIONS {
            kept.remove(0);
        }
        kept.push((text.to_string(), Rc::clone(&checked)));
        checked
    })
}

/// `lt check --json`'s report of `file` against `tenant` and `profile`
/// (with the profile's name, as `lt check --profile` adds it).
pub fn report(tenant: &Tenant, profile: Option<&Profile>, file: &SourceFile) -> serde_json::Value {
    let analysis = analyse(tenant, profile, file);
    let mut v =
        serde_json::to_value(CheckReport::new(file, &analysis)).unwrap_or(serde_json::Value::Null);
    if let (Some(p), Some(obj)) = (profile, v.as_object_mut()) {
        obj.insert("profile".into(), serde_json::json!(p.name));
    }
    v
}

thread_local! {
    /// Programs lowered on this thread lately, by tenant, profile and text
    /// (clients send the same program again and again; the session threads
    /// are reused). Only accepted programs are kept.
    static LOWERED: RefCell<VecDeque<(LoweredKey, Rc<Ir>)>> = const { RefCell::new(VecDeque::new()) };
}

/// Programs kept per thread.
const KEPT_PROGRAMS: usize = 32;

/// What a lowered program depends on: the tenant (its declarations), the
/// profile (its static check) and the program's text.
type LoweredKey = (String, String, String);

/// Checks and lowers `file` for a session: the IR, or the report that
/// refuses it (`lt run --json`'s rejection, `stage: "check"`). An accepted
/// program is kept on this thread (`KEPT_PROGRAMS`): the same text for
/// the same tenant and profile is not checked twice (both are fixed while
/// the server runs).
pub fn lower(
    tenant: &Tenant,
    profile: &Profile,
    file: &SourceFile,
) -> Result<Rc<Ir>, serde_json::Value> {
    let found = LOWERED.with(|kept| {
        kept.borrow()
            .iter()
            .find(|((t, p, text), _)| *t == tenant.name && *p == profile.name && *text == file.text)
            .map(|(_, ir)| Rc::clone(ir))
    });
    if let Some(ir) = found {
        return Ok(ir);
    }
    let ir = Rc::new(lower_uncached(tenant, profile, file)?);
    LOWERED.with(|kept| {
        let mut kept = kept.borrow_mut();
        if kept.len() == KEPT_PROGRAMS {
            kept.pop_front();
        }
        let key = (tenant.name.clone(), profile.name.clone(), file.text.clone());
        kept.push_back((key, Rc::clone(&ir)));
    });
    Ok(ir)
}

/// [`lower`] without the thread's programs.
fn lower_uncached(
    tenant: &Tenant,
    profile: &Profile,
    file: &SourceFile,
) -> Result<Ir, serde_json::Value> {
    let analysis = analyse(tenant, Some(profile), file);
    match lower_checked(analysis) {
        Ok(ir) => Ok(ir),
        Err(Rejected::Diagnostics(analysis)) => {
            let rejected = crate::control::report::RunOutput::Rejected(CheckReport {
                stage: Some(crate::control::report::Stage::Check),
                ..CheckReport::new(file, &analysis)
            });
            Err(serde_json::to_value(rejected).unwrap_or(serde_json::Value::Null))
        }
        Err(Rejected::Lowering(e)) => Err(serde_json::to_value(
            crate::control::session::run_failed(file, &e, Default::default()),
        )
        .unwrap_or(serde_json::Value::Null)),
    }
}
