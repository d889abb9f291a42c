//! The `WHERE … ORDER BY … LIMIT` of [`ServerStore::list_sessions`]
//! (`super::ServerStore`), built once for both stores: they differ only
//! in how a parameter is written (`?1`, `$1`). The tool filter reads the
//! `session_tools` index (the tools each session proposed, written with
//! its events: the stores' schema.rs), not the events.

use super::{ListQuery, SessionRecord, SessionStatus};
use crate::log::StoreError;

/// The `WHERE … ORDER BY` of [`ServerStore::unfinished`](super::ServerStore::unfinished):
/// every session whose status is not final, oldest first; by `d`'s
/// table of them when it keeps one.
pub fn unfinished(d: &Dialect) -> String {
    let open: Vec<String> = SessionStatus::ALL
        .iter()
        .filter(|s| !s.is_final())
        .map(|s| format!("'{}'", s.as_str()))
        .collect();
    let among = d
        .open
        .map(|ids| format!("id IN ({ids}) AND "))
        .unwrap_or_default();
    format!(
        "{among}status IN ({}) ORDER BY created_ms, id",
        open.join(", ")
    )
}

/// One page of `q` with the damaged rows left out, read on past them: a
/// page that held one would otherwise come back short, and the API would
/// take it for the last (its `next_cursor` is set only on a full page).
/// `fetch(q)` reads one page: the readable records, how many rows it
/// read, and the last row's key (`created_ms`, `id`).
pub fn readable_page(
    q: &ListQuery,
    mut fetch: impl FnMut(&ListQuery) -> Result<FetchedPage, StoreError>,
) -> Result<Vec<SessionRecord>, StoreError> {
    let total = q.limit;
    let mut q = q.clone();
    let mut out = Vec::new();
    loop {
        let (kept, fetched, last) = fetch(&q)?;
        let asked = q.limit;
        out.extend(kept);
        match last {
            // A full page that lost rows to damage: read on past its last.
            Some(key) if fetched == asked && out.len() < total => {
                q.limit = total - out.len();
                q.before = Some(key);
            }
            _ => return Ok(out),
        }
    }
}

/// What one read of a page gave: its readable records, the rows read,
/// and the last row's key.
pub type FetchedPage = (Vec<SessionRecord>, usize, Option<(i64, String)>);

/// A parameter of the built query.
#[derive(Clone, Debug, PartialEq)]
pub enum Arg {
    /// A text value.
    Text(String),
    /// An integer value.
    Int(i64),
}

impl Arg {
    /// The store's own parameter value: `text` of a text, `int` of an
    /// integer.
    pub fn into_sql<P>(self, text: impl FnOnce(String) -> P, int: impl FnOnce(i64) -> P) -> P {
        match self {
            Arg::Text(s) => text(s),
            Arg::Int(n) => int(n),
        }
    }
}

/// How a store writes its SQL.
pub struct Dialect {
    /// The `n`th parameter (1-based): `?n` or `$n`.
    pub param: fn(usize) -> String,
    /// A query of the ids of the sessions whose status is not final, when
    /// the store keeps them apart (its `status` in no index): a filter by
    /// an open status reads those, not every session of the tenant.
    pub open: Option<&'static str>,
    /// Likewise, the ids of the tenant's failed and cancelled sessions:
    /// `{}` in place of the status asked for (a parameter), the tenant
    /// the filter's first parameter.
    pub stopped: Option<&'static str>,
}

/// SQLite: `?n`; `status` is indexed.
pub const SQLITE: Dialect = Dialect {
    param: |n| format!("?{n}"),
    open: None,
    stopped: None,
};

/// PostgreSQL: `$n`; the unfinished sessions, and the failed and
/// cancelled ones, in tables of their own (postgres/schema.rs, version 6).
pub const POSTGRES: Dialect = Dialect {
    param: |n| format!("${n}"),
    open: Some("SELECT u.session FROM unfinished u"),
    stopped: Some("SELECT x.session FROM stopped x WHERE x.tenant = $1 AND x.status = {}"),
};

/// The filter of `q` over table `sessions`, newest first, with its
/// parameters in order.
pub fn filter(q: &ListQuery, d: &Dialect) -> (String, Vec<Arg>) {
    let mut args = vec![Arg::Text(q.tenant.clone())];
    let mut sql = format!("tenant = {}", (d.param)(1));
    let and =
        |sql: &mut String, args: &mut Vec<Arg>, arg: Arg, clause: &dyn Fn(String) -> String| {
            args.push(arg);
            sql.push_str(" AND ");
            sql.push_str(&clause((d.param)(args.len())));
        };
    if let Some(status) = q.status {
        // Where the store keeps them apart, the ids of that status first:
        // by index, not every session of the tenant filtered.
        let among = |p: &str| match (d.open, d.stopped, status) {
            (Some(ids), _, s) if !s.is_final() => format!("id IN ({ids}) AND "),
            (_, Some(ids), SessionStatus::Failed | SessionStatus::Cancelled) => {
                format!("id IN ({}) AND ", ids.replace("{}", p))
            }
            _ => String::new(),
        };
        and(
            &mut sql,
            &mut args,
            Arg::Text(status.as_str().into()),
            &|p| format!("{}status = {p}", among(&p)),
        );
    }
    if let Some(profile) = &q.profile {
        and(&mut sql, &mut args, Arg::Text(profile.clone()), &|p| {
            format!("profile = {p}")
        });
    }
    if let Some(ms) = q.since_ms {
        and(&mut sql, &mut args, Arg::Int(ms), &|p| {
            format!("created_ms >= {p}")
        });
    }
    if let Some(ms) = q.until_ms {
        and(&mut sql, &mut args, Arg::Int(ms), &|p| {
            format!("created_ms < {p}")
        });
    }
    if let Some(tool) = &q.tool {
        // The sessions that proposed the tool, from the index by tool: a
        // rare tool's few, not every session's events.
        and(&mut sql, &mut args, Arg::Text(tool.clone()), &|p| {
            format!("id IN (SELECT t.session FROM session_tools t WHERE t.tool = {p})")
        });
    }
    if let Some((ms, id)) = &q.before {
        args.push(Arg::Int(*ms));
        args.push(Arg::Text(id.clone()));
        let (a, b) = ((d.param)(args.len() - 1), (d.param)(args.len()));
        sql.push_str(&format!(" AND (created_ms, id) < ({a}, {b})"));
    }
    args.push(Arg::Int(q.limit.clamp(1, 1000) as i64));
    sql.push_str(&format!(
        " ORDER BY created_ms DESC, id DESC LIMIT {}",
        (d.param)(args.len())
    ));
    (sql, args)
}
