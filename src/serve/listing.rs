//! The filters of a session list, as the API (`GET /v1/sessions`) and the
//! console (`GET /`) take them in the query: `status`, `profile`, `tool`,
//! `since`, `until` and `cursor`, read once here into a
//! [`ListQuery`].
//!
//! A time is milliseconds since the epoch (`1764871234567`), an RFC 3339
//! time (`2026-12-06T01:00:00Z`), a browser's `datetime-local` value
//! (`2026-12-06T01:00`, read as UTC) or a day (`2026-12-06`, its
//! midnight UTC). `since` is inclusive, `until` exclusive.

use super::store::{ListQuery, SessionStatus};
use serde::Deserialize;

/// The list's filters as the query gives them (an empty value is no
/// filter, as a form sends an unset field).
#[derive(Clone, Debug, Default, Deserialize)]
pub struct Filters {
    /// A status name (`running`, …, `cancelled`).
    pub status: Option<String>,
    /// A profile's name.
    pub profile: Option<String>,
    /// A tool's name: sessions whose program called it.
    pub tool: Option<String>,
    /// Sessions created at or after this time.
    pub since: Option<String>,
    /// Sessions created before this time.
    pub until: Option<String>,
    /// The previous page's `next_cursor`.
    pub cursor: Option<String>,
}

fn given(v: &Option<String>) -> Option<&str> {
    v.as_deref().map(str::trim).filter(|s| !s.is_empty())
}

/// Milliseconds since the epoch of `s` (the forms in the module note).
pub fn parse_time(s: &str) -> Option<i64> {
    if let Ok(ms) = s.parse::<i64>() {
        return Some(ms);
    }
    let full = match s.len() {
        10 => format!("{s}T00:00:00Z"),
        16 => format!("{s}:00Z"),
        _ if s.ends_with('Z') || s.ends_with('z') => s.to_string(),
        _ => format!("{s}Z"),
    };
    let t = humantime::parse_rfc3339_weak(&full).ok()?;
    let d = t.duration_since(std::time::UNIX_EPOCH).ok()?;
    i64::try_from(d.as_millis()).ok()
}

impl Filters {
    /// The query for one page of `tenant`'s sessions. Errors: what is
    /// wrong with the query, to answer with a 400.
    pub fn query(&self, tenant: &str, limit: usize) -> Result<ListQuery, String> {
        let status = match given(&self.status) {
            None => None,
            Some(s) => Some(SessionStatus::parse(s).ok_or_else(|| {
                format!("there is no status {s:?}; a status is one of running, waiting_client, waiting_approval, ended, failed, cancelled")
            })?),
        };
        let time = |name: &str, v: &Option<String>| -> Result<Option<i64>, String> {
            match given(v) {
                None => Ok(None),
                Some(s) => parse_time(s).map(Some).ok_or_else(|| {
                    format!("`{name}` is not a time: {s:?}; give milliseconds since the epoch, an RFC 3339 time such as 2026-12-06T01:00:00Z, or a day such as 2026-12-06")
                }),
            }
        };
        let since_ms = time("since", &self.since)?;
        let until_ms = time("until", &self.until)?;
        let before = match given(&self.cursor) {
            None => None,
            Some(c) => Some(
                c.split_once('.')
                    .and_then(|(ms, id)| Some((ms.parse::<i64>().ok()?, id.to_string())))
                    .ok_or("the cursor is not one this server gave")?,
            ),
        };
        Ok(ListQuery {
            tenant: tenant.to_string(),
            status,
            profile: given(&self.profile).map(str::to_string),
            tool: given(&self.tool).map(str::to_string),
            since_ms,
            until_ms,
            limit,
            before,
        })
    }

    /// The filters (not the cursor) as a query string, each `key=value&`
    /// percent-encoded, to build the next page's link.
    pub fn query_string(&self) -> String {
        let mut s = String::new();
        for (k, v) in [
            ("status", &self.status),
            ("profile", &self.profile),
            ("tool", &self.tool),
            ("since", &self.since),
            ("until", &self.until),
        ] {
            if let Some(v) = given(v) {
                s.push_str(&format!("{k}={}&", encode(v)));
            }
        }
        s
    }
}

/// `s` percent-encoded for a query value.
fn encode(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_in_every_accepted_form() {
        assert_eq!(parse_time("1764871234567"), Some(1_764_871_234_567));
        assert_eq!(parse_time("1970-01-02"), Some(86_400_000));
        assert_eq!(parse_time("1970-01-01T00:01"), Some(60_000));
        assert_eq!(parse_time("1970-01-01T00:00:01Z"), Some(1_000));
        assert_eq!(parse_time("1970-01-01T00:00:01.5Z"), Some(1_500));
        assert_eq!(parse_time("yesterday"), None);
    }

    #[test]
    fn a_bad_filter_says_what_is_wrong() {
        let f = Filters {
            status: Some("done".into()),
            ..Filters::default()
        };
        assert!(f
            .query("acme", 50)
            .is_err_and(|e| e.contains("no status \"done\"")));
        let f = Filters {
            since: Some("soon".into()),
            ..Filters::default()
        };
        assert!(f
            .query("acme", 50)
            .is_err_and(|e| e.contains("`since` is not a time")));
        let f = Filters {
            profile: Some(" ".into()),
            tool: Some("a b&c".into()),
            ..Filters::default()
        };
        let q = f.query("acme", 50).expect("query");
        assert_eq!((q.profile, q.tool.as_deref()), (None, Some("a b&c")));
        assert_eq!(f.query_string(), "tool=a%20b%26c&");
    }
}
