//! The `profile=` argument: a path to a file with a `[profile]` table, or
//! a dict with the table's keys (turned into that TOML table, so it is
//! validated exactly as a file is, errors naming `<profile dict>`).

use lt::control::profile::Profile;
use lt::exec::ConfigError;
use std::path::Path;

/// Where a profile comes from.
#[derive(Clone, Debug)]
pub enum ProfileArg {
    /// None given.
    None,
    /// A file.
    Path(String),
    /// The `[profile]` table's keys, as JSON (from a Python dict).
    Table(serde_json::Value),
}

impl ProfileArg {
    /// The profile, named `default` when it has no name; `None` when none
    /// was given. Errors: the file or the table is invalid.
    pub fn load(&self) -> Result<Option<Profile>, ConfigError> {
        let p = match self {
            ProfileArg::None => return Ok(None),
            ProfileArg::Path(path) => Profile::load(Path::new(path))?,
            ProfileArg::Table(table) => {
                let origin = "<profile dict>";
                let text = toml::to_string(&serde_json::json!({ "profile": table })).map_err(
                    |e| ConfigError {
                        path: origin.into(),
                        line: None,
                        column: None,
                        message: format!("the profile dict cannot be written as TOML: {e}"),
                        help: Some(
                            "give str keys and TOML values (str, int, float, bool, lists, dicts; no None)"
                                .into(),
                        ),
                    },
                )?;
                Profile::from_toml(&text, origin)?.unwrap_or_default()
            }
        };
        Ok(Some(if p.name.is_empty() {
            Profile {
                name: "default".into(),
                ..p
            }
        } else {
            p
        }))
    }
}
