//! The `--store postgres://…` URL: parsed once, shown without its
//! password, and connected with a timeout; a failed connection becomes an
//! [`OpenError`] with a hint.
//!
//! ```text
//! postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE[?connect_timeout=S&…]
//!   ─▶ Target { config (libpq's keys, as the postgres crate reads them),
//!               name: postgres://USER@HOST:PORT/DATABASE (never the password) }
//! ```
//!
//! Invariant: no text this module produces holds the password; a message
//! of the driver that would (it never should) has it replaced by `***`.

use postgres::error::SqlState;
use postgres::{Client, Config, NoTls};
use std::time::Duration;

/// How long a connection attempt waits unless the URL says otherwise.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Why the store could not be opened: what, how to fix it, and whether
/// the flags are at fault (exit 2) or the database (exit 3).
#[derive(Debug)]
pub struct OpenError {
    /// What failed, naming the store (never its password).
    pub message: String,
    /// How to fix it.
    pub hint: Option<String>,
    /// `true`: the URL is at fault (exit 2); `false`: the database (exit 3).
    pub usage: bool,
}

impl std::fmt::Display for OpenError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)?;
        if let Some(h) = &self.hint {
            write!(f, " ({h})")?;
        }
        Ok(())
    }
}

/// A database to connect to.
#[derive(Clone)]
pub struct Target {
    config: Config,
    /// The URL without its password (and without its query).
    pub name: String,
    /// The passwords the URL holds (user info, `password=`), to scrub
    /// from the driver's messages.
    password: Vec<String>,
}

impl std::fmt::Debug for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.name)
    }
}

impl Target {
    /// Parses `url` (`postgres://` or `postgresql://`). Errors: it is not
    /// a URL the driver reads (a usage error).
    pub fn parse(url: &str) -> Result<Target, OpenError> {
        let password = url_passwords(url);
        let mut config: Config = url.parse().map_err(|e: postgres::Error| OpenError {
            message: format!(
                "the store URL {} is not a PostgreSQL URL the driver reads: {}",
                redact_url(url),
                scrub(&e.to_string(), &password)
            ),
            hint: Some("write postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE".into()),
            usage: true,
        })?;
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(CONNECT_TIMEOUT);
        }
        if config.get_application_name().is_none() {
            config.application_name("lt serve");
        }
        let name = name_of(&config);
        Ok(Target {
            config,
            name,
            password,
        })
    }

    /// The same database, its connections named `name` in
    /// `pg_stat_activity` (a worker's lease connection: other workers see
    /// whether it is alive).
    pub fn named(&self, name: &str) -> Target {
        let mut t = self.clone();
        t.config.application_name(name);
        t
    }

    /// A new connection. Errors: the server cannot be reached, refuses the
    /// user, has no such database.
    pub fn connect(&self) -> Result<Client, OpenError> {
        self.config
            .connect(NoTls)
            .map_err(|e| self.connect_error(&e))
    }

    /// `e`'s text, with its causes (the driver's `db error` says little
    /// alone), without the password.
    pub fn scrub(&self, e: &dyn std::error::Error) -> String {
        self.scrub_text(&full_text(e))
    }

    /// `text` without the password.
    pub fn scrub_text(&self, text: &str) -> String {
        scrub(text, &self.password)
    }

    /// The error of a failed connection, with a hint by its cause.
    fn connect_error(&self, e: &postgres::Error) -> OpenError {
        let code = e.code();
        let hint = if code == Some(&SqlState::INVALID_PASSWORD)
            || code == Some(&SqlState::INVALID_AUTHORIZATION_SPECIFICATION)
        {
            "check the user and the password in the URL (the password is not shown)".to_string()
        } else if code == Some(&SqlState::INVALID_CATALOG_NAME) {
            format!(
                "create the database first (createdb {}), or name another one",
                self.config.get_dbname().unwrap_or("DATABASE")
            )
        } else if code.is_some() {
            "the server refused the connection; see its message".to_string()
        } else {
            "is PostgreSQL running there and reachable? check the host and port (connect_timeout=S in the URL sets how long to wait)".to_string()
        };
        // The driver's own message: its cause (refused, timed out, DNS)
        // is in the source chain.
        let text = full_text(e);
        OpenError {
            message: format!(
                "cannot connect to the store {}: {}",
                self.name,
                self.scrub_text(&text)
            ),
            hint: Some(hint),
            usage: false,
        }
    }
}

/// Whether `e` says the connection is gone: closed, or ended by the
/// server (SQLSTATE class 08, connection exception; 57P01..57P03, the
/// server shutting down or terminating the backend).
pub fn is_lost(e: &postgres::Error) -> bool {
    if e.is_closed() {
        return true;
    }
    e.code()
        .map(|c| c.code())
        .is_some_and(|c| c.starts_with("08") || c.starts_with("57P"))
}

/// `e`'s message and those of its sources, joined by `: `.
pub(super) fn full_text(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let more = s.to_string();
        if !text.contains(&more) {
            text.push_str(": ");
            text.push_str(&more);
        }
        source = s.source();
    }
    text
}

/// `postgres://USER@HOST:PORT/DATABASE` of `config`.
fn name_of(config: &Config) -> String {
    use postgres::config::Host;
    let user = config
        .get_user()
        .map(|u| format!("{u}@"))
        .unwrap_or_default();
    let ports = config.get_ports();
    let hosts: Vec<String> = config
        .get_hosts()
        .iter()
        .enumerate()
        .map(|(i, h)| {
            let host = match h {
                Host::Tcp(h) => h.clone(),
                Host::Unix(p) => p.display().to_string(),
            };
            match ports.get(i).or(ports.first()) {
                Some(p) => format!("{host}:{p}"),
                None => host,
            }
        })
        .collect();
    let db = config.get_dbname().unwrap_or("");
    format!("postgres://{user}{}/{db}", hosts.join(","))
}

/// Every password a URL holds: in its user info and in each `password=`
/// of its query (a URL may hold both, and the driver reads one).
fn url_passwords(url: &str) -> Vec<String> {
    let mut found = Vec::new();
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let authority = rest.split(['/', '?']).next().unwrap_or("");
    if let Some((userinfo, _)) = authority.rsplit_once('@') {
        if let Some((_, pw)) = userinfo.split_once(':') {
            found.push(pw.to_string());
        }
    }
    if let Some((_, query)) = url.split_once('?') {
        found.extend(
            query
                .split('&')
                .filter_map(|kv| kv.strip_prefix("password="))
                .map(str::to_string),
        );
    }
    found.retain(|p| !p.is_empty());
    found
}

/// `url` with its passwords replaced by `***` (user info and query).
pub fn redact_url(url: &str) -> String {
    scrub(url, &url_passwords(url))
}

/// `text` with every occurrence of each of `passwords` (and its
/// percent-decoded form) replaced by `***`.
fn scrub(text: &str, passwords: &[String]) -> String {
    let mut out = text.to_string();
    for pw in passwords.iter().filter(|p| !p.is_empty()) {
        out = out.replace(pw.as_str(), "***");
        let decoded = percent_decode(pw);
        if !decoded.is_empty() && decoded != *pw {
            out = out.replace(&decoded, "***");
        }
    }
    out
}

/// `%XX` sequences decoded (others kept).
fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(b)) => {
                out.push(b);
                i += 3;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_name_and_every_message_leave_the_password_out() {
        let url = "postgres://lt:s3cr%40t@db.example:6543/prod?sslmode=disable";
        let t = Target::parse(url).expect("parses");
        assert_eq!(t.name, "postgres://lt@db.example:6543/prod");
        assert_eq!(
            redact_url(url),
            "postgres://lt:***@db.example:6543/prod?sslmode=disable"
        );
        assert_eq!(t.scrub_text("auth s3cr@t s3cr%40t"), "auth *** ***");
        assert!(!format!("{t:?}").contains("s3cr"));
        let q = "postgres://lt@h/db?password=hunter2";
        assert_eq!(redact_url(q), "postgres://lt@h/db?password=***");
        // Both places at once (break-it pass: the query's was shown).
        let both = "postgres://lt:S3cret@h/db?password=Other9&sslmode=bogus";
        assert_eq!(
            redact_url(both),
            "postgres://lt:***@h/db?password=***&sslmode=bogus"
        );
        let err = Target::parse(both)
            .err()
            .map(|e| e.message)
            .unwrap_or_default();
        assert!(!err.contains("S3cret") && !err.contains("Other9"), "{err}");
    }

    #[test]
    fn a_bad_url_is_a_usage_error_without_the_password() {
        let e = Target::parse("postgres://lt:hunter2@h:notaport/db").expect_err("bad port");
        assert!(e.usage);
        assert!(!e.to_string().contains("hunter2"), "{e}");
    }
}
