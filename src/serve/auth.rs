//! API keys: stored only as SHA-256 digests, compared in constant time
//! (`subtle`), sent as `Authorization: Bearer KEY`.
//!
//! A presented key is hashed once and compared with every stored digest
//! of every tenant, without stopping at the first match, so the time taken
//! says nothing about which digest (or how much of it) matched.

use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

/// The line to write in `serve.toml` for `key`: `sha256:<64 hex digits>`.
pub fn hash_line(key: &str) -> String {
    format!("sha256:{}", hex::encode(digest(key)))
}

/// SHA-256 of the key's bytes.
pub fn digest(key: &str) -> [u8; 32] {
    Sha256::digest(key.as_bytes()).into()
}

/// Who holds which key digests: `(tenant, digests)` pairs.
pub struct Keys {
    entries: Vec<(String, [u8; 32])>,
}

impl Keys {
    /// The digests of each tenant.
    pub fn new<'a>(tenants: impl IntoIterator<Item = (&'a str, &'a [[u8; 32]])>) -> Keys {
        let mut entries = Vec::new();
        for (name, hashes) in tenants {
            for h in hashes {
                entries.push((name.to_string(), *h));
            }
        }
        Keys { entries }
    }

    /// The tenant whose key `header` (an `Authorization` value) carries,
    /// if any. Every digest is compared, matched or not.
    pub fn tenant(&self, header: Option<&str>) -> Option<&str> {
        // The scheme is case-insensitive (RFC 9110 §11.1).
        let (scheme, key) = header?.split_once(' ')?;
        if !scheme.eq_ignore_ascii_case("bearer") {
            return None;
        }
        let key = key.trim();
        if key.is_empty() {
            return None;
        }
        let presented = digest(key);
        let mut found: Option<&str> = None;
        for (name, stored) in &self.entries {
            if bool::from(stored.ct_eq(&presented)) {
                found = Some(name);
            }
        }
        found
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_maps_to_its_tenant_and_nothing_else_does() {
        let a = [digest("acme-dev-key")];
        let g = [digest("globex-dev-key")];
        let keys = Keys::new([("acme", &a[..]), ("globex", &g[..])]);
        assert_eq!(keys.tenant(Some("Bearer acme-dev-key")), Some("acme"));
        assert_eq!(keys.tenant(Some("Bearer globex-dev-key")), Some("globex"));
        assert_eq!(keys.tenant(Some("Bearer acme-dev-ke")), None);
        assert_eq!(keys.tenant(Some("acme-dev-key")), None);
        assert_eq!(keys.tenant(Some("Bearer ")), None);
        // The scheme in any case; no other scheme.
        assert_eq!(keys.tenant(Some("bearer acme-dev-key")), Some("acme"));
        assert_eq!(keys.tenant(Some("BEARER acme-dev-key")), Some("acme"));
        assert_eq!(keys.tenant(Some("Basic acme-dev-key")), None);
        assert_eq!(keys.tenant(None), None);
    }

    #[test]
    fn the_hash_line_is_sha256_hex() {
        assert_eq!(
            hash_line("test"),
            "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
        );
    }
}
