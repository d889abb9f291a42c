//! The console's HTML: escaping (everything a tenant or a tool wrote goes
//! through [`esc`] or [`highlight`] before it is written into a page), the
//! layout every page shares, and a small highlighter for lt programs.

/// A logged-in browser: its tenant and the CSRF token of its forms.
#[derive(Clone, Debug)]
pub struct Who {
    /// The tenant whose key was given.
    pub tenant: String,
    /// The token every state-changing form must carry.
    pub csrf: String,
}

/// `s` with `& < > " '` escaped: safe in element text and in a quoted
/// attribute.
pub fn esc(s: &str) -> String {
    html_escape::encode_quoted_attribute(s).into_owned()
}

/// `s` percent-encoded for a path segment or a query value.
pub fn pct(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// Milliseconds since the epoch as `2026-12-05 16:21:35.123 UTC`.
pub fn when(ms: i64) -> String {
    let Ok(ms) = u64::try_from(ms) else {
        return "?".into();
    };
    let t = std::time::UNIX_EPOCH + std::time::Duration::from_millis(ms);
    let s = humantime::format_rfc3339_millis(t).to_string();
    s.trim_end_matches('Z').replacen('T', " ", 1) + " UTC"
}

/// A whole page: `title`, the navigation (with the logout form when
/// logged in), and `body`. `live`: the script refreshes the `#live`
/// element every two seconds.
pub fn layout(title: &str, who: Option<&Who>, live: bool, body: &str) -> String {
    let nav = match who {
        Some(w) => format!(
            "<nav><a href=\"/\" id=\"nav-sessions\">Sessions</a><a href=\"/approvals\" id=\"nav-approvals\">Approvals</a>\
             <span class=\"tenant\">tenant <b id=\"tenant\">{}</b></span>\
             <form method=\"post\" action=\"/logout\" class=\"inline\"><input type=\"hidden\" name=\"csrf\" value=\"{}\">\
             <button type=\"submit\" id=\"logout\">Log out</button></form></nav>",
            esc(&w.tenant),
            esc(&w.csrf)
        ),
        None => "<nav><span class=\"brand\">lt console</span></nav>".into(),
    };
    format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>{} · lt</title><link rel=\"stylesheet\" href=\"/console/console.css\">\
         <script src=\"/console/console.js\" defer></script></head>\
         <body data-live=\"{}\">{nav}<main>{body}</main></body></html>",
        esc(title),
        if live { "1" } else { "0" }
    )
}

const KEYWORDS: &[&str] = &[
    "tool",
    "effect",
    "match",
    "exec",
    "approve",
    "let",
    "in",
    "if",
    "then",
    "else",
    "fun",
    "type",
    "scope",
    "gather",
    "fan_out",
    "bounded_loop",
    "annotate",
    "true",
    "false",
];

/// An lt program as HTML: keywords, strings, numbers, comments, types and
/// `Ok`/`Err` in spans of their own, everything escaped.
pub fn highlight(src: &str) -> String {
    let chars: Vec<char> = src.chars().collect();
    let mut out = String::with_capacity(src.len() * 2);
    let mut i = 0;
    let span = |out: &mut String, class: &str, text: &str| {
        out.push_str(&format!("<span class=\"{class}\">{}</span>", esc(text)));
    };
    while i < chars.len() {
        let c = chars[i];
        let start = i;
        if c == '/' && chars.get(i + 1) == Some(&'/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
            span(&mut out, "c", &chars[start..i].iter().collect::<String>());
        } else if c == '"' {
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                if chars[i] == '\\' {
                    i += 1;
                }
                i += 1;
            }
            i = (i + 1).min(chars.len());
            span(&mut out, "s", &chars[start..i].iter().collect::<String>());
        } else if c.is_ascii_digit() {
            while i < chars.len() && (chars[i].is_ascii_digit() || chars[i] == '.') {
                i += 1;
            }
            span(&mut out, "n", &chars[start..i].iter().collect::<String>());
        } else if c.is_alphabetic() || c == '_' || c == '@' {
            i += 1;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            let word: String = chars[start..i].iter().collect();
            if KEYWORDS.contains(&word.as_str()) || word.starts_with('@') {
                span(&mut out, "k", &word);
            } else if word == "Ok" || word == "Err" {
                span(&mut out, "v", &word);
            } else if word.starts_with(char::is_uppercase) {
                span(&mut out, "t", &word);
            } else {
                out.push_str(&esc(&word));
            }
        } else {
            i += 1;
            out.push_str(&esc(&c.to_string()));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping_leaves_no_markup() {
        assert_eq!(
            esc("<script>alert('x')</script>&\""),
            "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;&amp;&quot;"
        );
    }

    #[test]
    fn highlighting_escapes_and_marks_tokens() {
        let h = highlight("match exec tool f \"<b>\" { Ok(x) => 1, // <i>\n Err(e) => e }");
        assert!(h.contains("<span class=\"k\">match</span>"), "{h}");
        assert!(
            h.contains("<span class=\"s\">&quot;&lt;b&gt;&quot;</span>"),
            "{h}"
        );
        assert!(h.contains("<span class=\"c\">// &lt;i&gt;</span>"), "{h}");
        assert!(h.contains("<span class=\"v\">Ok</span>"), "{h}");
        assert!(!h.contains("<b>") && !h.contains("<i>"), "{h}");
        // An unterminated string does not run past the end.
        assert_eq!(highlight("\"ab\\"), "<span class=\"s\">&quot;ab\\</span>");
    }

    #[test]
    fn times_read_as_utc() {
        assert_eq!(when(0), "1970-01-01 00:00:00.000 UTC");
        assert_eq!(when(-1), "?");
    }
}
