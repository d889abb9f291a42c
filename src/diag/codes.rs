//! The stable diagnostic codes.
//!
//! Codes are grouped by phase and never reused (as in rustc):
//! `E00xx` lexical, `E01xx` syntax, `E02xx` types, `E03xx` termination,
//! `E04xx` effects, `E05xx` linearity, `E06xx` Result handling, `E07xx`
//! session policy (`lt check --profile`: calls the profile would deny;
//! `lt agent --tools`: tools not in the session's tool list).
//! Each code has a page `docs/errors/<CODE>.md`, embedded in the binary and
//! printed by `lt explain <CODE>`.

macro_rules! codes {
    ($( $name:ident = $text:literal, $title:literal; )*) => {
        /// A stable diagnostic code; `as_str` gives its `E0xxx` spelling.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Code {
            $( #[doc = $title] $name, )*
        }

        impl Code {
            /// Every code, in numeric order.
            pub const ALL: &'static [Code] = &[$(Code::$name,)*];

            /// The `E0xxx` spelling.
            pub fn as_str(self) -> &'static str {
                match self { $( Code::$name => $text, )* }
            }

            /// A short title for the code's page.
            pub fn title(self) -> &'static str {
                match self { $( Code::$name => $title, )* }
            }
        }
    };
}

codes! {
    E0001 = "E0001", "unexpected character";
    E0002 = "E0002", "unterminated string literal";
    E0003 = "E0003", "unterminated block comment";
    E0004 = "E0004", "invalid escape sequence in a string";
    E0005 = "E0005", "integer literal out of range";
    E0101 = "E0101", "unexpected token";
    E0102 = "E0102", "unexpected end of input";
    E0103 = "E0103", "program nested too deeply";
    E0104 = "E0104", "program has no expression";
    E0105 = "E0105", "unknown annotation field";
    E0201 = "E0201", "type mismatch";
    E0202 = "E0202", "unknown field";
    E0203 = "E0203", "unbound variable";
    E0204 = "E0204", "unknown tool";
    E0205 = "E0205", "unknown type name";
    E0206 = "E0206", "applying a value that is not a function";
    E0207 = "E0207", "duplicate field or declaration name";
    E0208 = "E0208", "record fields do not match";
    E0209 = "E0209", "type cannot be inferred";
    E0210 = "E0210", "builtin used without its arguments";
    E0211 = "E0211", "comparison on a type that does not support it";
    E0212 = "E0212", "unknown effect";
    E0213 = "E0213", "duplicate tool declaration";
    E0214 = "E0214", "pattern does not fit the matched type";
    E0215 = "E0215", "type too large";
    E0216 = "E0216", "string literal outside an enum";
    E0217 = "E0217", "a concurrent form that is not one tool call";
    E0218 = "E0218", "bounded_loop without a literal bound";
    E0219 = "E0219", "an undo that does not fit its tool";
    E0220 = "E0220", "scope around a call that cannot be undone";
    E0221 = "E0221", "approval for a tool that takes none";
    E0301 = "E0301", "loops are not allowed";
    E0302 = "E0302", "recursion is not allowed";
    E0401 = "E0401", "effect not allowed here";
    E0501 = "E0501", "linear value used more than once";
    E0502 = "E0502", "linear value never used";
    E0503 = "E0503", "linear value captured by a function";
    E0504 = "E0504", "branches use a linear value differently";
    E0505 = "E0505", "linear value used as a plain value";
    E0506 = "E0506", "linear value in a traverse, fan_out or gather";
    E0601 = "E0601", "field access on a Result";
    E0602 = "E0602", "unhandled Result at the top level";
    E0603 = "E0603", "Result bound but never matched";
    E0604 = "E0604", "match on a Result without both Ok and Err arms";
    E0605 = "E0605", "duplicate or unreachable match arm";
    E0606 = "E0606", "Result used where a plain value is expected";
    E0607 = "E0607", "match does not cover every case";
    E0701 = "E0701", "tool not in the profile's allow list";
    E0702 = "E0702", "tool denied by the profile";
    E0703 = "E0703", "effect not granted by the profile";
    E0704 = "E0704", "tool declared differently from the session's tool list";
    E0705 = "E0705", "tool not in the session's tool list";
}

impl Code {
    /// Parses `E0201` (case-insensitive; `0201` and `201` are accepted too).
    pub fn parse(text: &str) -> Option<Code> {
        let t = text.trim().trim_start_matches(['E', 'e']);
        let n: u32 = t.parse().ok()?;
        Code::ALL
            .iter()
            .copied()
            .find(|c| c.as_str()[1..].parse::<u32>().ok() == Some(n))
    }

    /// The page `docs/errors/<CODE>.md`, if it exists.
    pub fn page(self) -> Option<&'static str> {
        PAGES
            .iter()
            .find(|(c, _)| *c == self.as_str())
            .map(|(_, p)| *p)
    }
}

/// `(code, markdown)` for every file in `docs/errors/`, embedded by `build.rs`.
pub static PAGES: &[(&str, &str)] = include!(concat!(env!("OUT_DIR"), "/error_pages.rs"));

impl std::fmt::Display for Code {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
