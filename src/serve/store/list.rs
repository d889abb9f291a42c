//! The `WHERE … ORDER BY … LIMIT` of [`ServerStore::list_sessions`]
//! (`super::ServerStore`), built once for both stores: they differ only
//! in how a parameter is written (`?1`, `$1`) and how a log line's JSON
//! field is read.

use super::ListQuery;

/// A parameter of the built query.
#[derive(Clone, Debug, PartialEq)]
pub enum Arg {
    /// A text value.
    Text(String),
    /// An integer value.
    Int(i64),
}

/// How a store writes its SQL.
pub struct Dialect {
    /// The `n`th parameter (1-based): `?n` or `$n`.
    pub param: fn(usize) -> String,
    /// The expression reading field `field` of the JSON text in column
    /// `col`.
    pub json_field: fn(col: &str, field: &str) -> String,
    /// Whether the text in column `col` contains parameter `p`'s text.
    pub contains: fn(col: &str, p: &str) -> String,
}

/// SQLite: `?n`, `json_extract`.
pub const SQLITE: Dialect = Dialect {
    param: |n| format!("?{n}"),
    json_field: |col, field| format!("json_extract({col}, '$.{field}')"),
    contains: |col, p| format!("instr({col}, {p}) > 0"),
};

/// PostgreSQL: `$n`, `->>` on the line cast to `jsonb`.
pub const POSTGRES: Dialect = Dialect {
    param: |n| format!("${n}"),
    json_field: |col, field| format!("(({col})::jsonb ->> '{field}')"),
    contains: |col, p| format!("strpos({col}, {p}) > 0"),
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
        and(
            &mut sql,
            &mut args,
            Arg::Text(status.as_str().into()),
            &|p| format!("status = {p}"),
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
        // The text search first: it spares parsing the lines that do not
        // hold the name at all (most of them, for a rare tool).
        let kind = (d.json_field)("e.line", "kind");
        let name = (d.json_field)("e.line", "tool");
        and(&mut sql, &mut args, Arg::Text(tool.clone()), &|p| {
            format!(
                "EXISTS (SELECT 1 FROM events e WHERE e.session = sessions.id AND {} AND {kind} = 'proposed' AND {name} = {p})",
                (d.contains)("e.line", &p)
            )
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
