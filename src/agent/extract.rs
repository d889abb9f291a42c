//! Finding the program in a model's reply.
//!
//! Models answer in Markdown. The program is the reply's fenced code block
//! (```` ```lt ````): the last block tagged `lt` (or `lambda-tool`,
//! `ltool`), else the last untagged block, else the last block tagged with a
//! language lt does not know of. A block tagged with a language that is
//! not lt (`python`, `json`, `bash`, …) is not taken for a program: the
//! model is told so. A fence that is never closed (a reply cut off at its
//! token limit) still yields its text, marked [`Extracted::Program::unclosed`].
//!
//! A reply without any block is tried as a program only while nothing has
//! run yet (λ-Tool hosts send bare programs); after a run it is the model's
//! final answer. Before a run, a bare reply that does not start like an lt
//! program (a comment, `tool`, `type`, `effect`, `let`, `match`, `exec`, …)
//! is prose: the model is asked for a block (told that lt is not Python
//! when the reply is Python code).

/// What a reply holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Extracted {
    /// A program to check.
    Program {
        /// Its text.
        text: String,
        /// It came from a fenced block (else: the whole reply).
        fenced: bool,
        /// The block's fence was never closed (the reply was cut off).
        unclosed: bool,
    },
    /// No program: after a run, this is the model's final answer.
    Answer(String),
    /// No program, and the loop needs one (nothing has run yet). The
    /// reason, for the model.
    Missing(String),
}

/// Languages whose blocks are not lt programs.
const OTHER_LANGUAGES: [&str; 16] = [
    "python",
    "py",
    "python3",
    "json",
    "bash",
    "sh",
    "shell",
    "javascript",
    "js",
    "typescript",
    "ts",
    "toml",
    "yaml",
    "sql",
    "rust",
    "text",
];

/// One fenced block of a reply.
#[derive(Debug)]
struct Block {
    lang: String,
    text: String,
    closed: bool,
}

/// The fenced blocks of `reply`, in order (```` ``` ```` or `~~~` fences of
/// three or more, at the start of a line after at most three spaces, as
/// CommonMark says; a closing fence is the same character, at least as long).
fn blocks(reply: &str) -> Vec<Block> {
    let mut out = Vec::new();
    let mut open: Option<(char, usize, String, String)> = None;
    for line in reply.split_inclusive('\n') {
        let trimmed = line.trim_start_matches(' ');
        let indent = line.len() - trimmed.len();
        let fence = (indent <= 3)
            .then(|| {
                let c = trimmed.chars().next()?;
                if c != '`' && c != '~' {
                    return None;
                }
                let n = trimmed.chars().take_while(|&x| x == c).count();
                (n >= 3).then_some((c, n))
            })
            .flatten();
        match (&mut open, fence) {
            (Some((c, n, _, _)), Some((fc, fnum)))
                if fc == *c && fnum >= *n && trimmed[fnum..].trim().is_empty() =>
            {
                if let Some((_, _, lang, text)) = open.take() {
                    out.push(Block {
                        lang,
                        text,
                        closed: true,
                    });
                }
            }
            (Some((_, _, _, text)), _) => text.push_str(line),
            (None, Some((c, n))) => {
                let info = trimmed[n..].trim();
                let lang = info
                    .split(|ch: char| ch.is_whitespace() || ch == ',' || ch == '{')
                    .next()
                    .unwrap_or("")
                    .to_ascii_lowercase();
                open = Some((c, n, lang, String::new()));
            }
            (None, None) => {}
        }
    }
    if let Some((_, _, lang, text)) = open {
        out.push(Block {
            lang,
            text,
            closed: false,
        });
    }
    out
}

fn is_lt(lang: &str) -> bool {
    matches!(
        lang,
        "lt" | "lambda-tool" | "lambda_tool" | "ltool" | "λ-tool"
    )
}

/// Whether `text` starts like an lt program (after blank lines and
/// comments): a declaration's shape (`tool NAME:`, `type NAME =`,
/// `effect NAME;`), `let NAME =`/`let NAME:`, `exec tool NAME`, `@intent(`,
/// or a keyword or combinator followed by code (`match … {`, `if … then`,
/// `map (`…). Prose and data that merely begin with such a word (`type:
/// pro`, `match found: Ada`, `let me know`) do not.
pub fn looks_like_program(text: &str) -> bool {
    let mut rest = text.trim_start();
    loop {
        if let Some(r) = rest.strip_prefix("//") {
            rest = r.split_once('\n').map_or("", |(_, r)| r).trim_start();
        } else if let Some(r) = rest.strip_prefix("(*") {
            rest = r.split_once("*)").map_or("", |(_, r)| r).trim_start();
        } else {
            break;
        }
    }
    if rest.starts_with("@intent") {
        return true;
    }
    let word = |s: &str| -> (String, String) {
        let s = s.trim_start();
        let w: String = s
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        let after = s[w.len()..].to_string();
        (w, after)
    };
    let is_name = |w: &str| {
        w.chars()
            .next()
            .is_some_and(|c| c.is_alphabetic() || c == '_')
    };
    let (first, after) = word(rest);
    let (second, after2) = word(&after);
    let next = after2.trim_start().chars().next();
    let first_line = rest.lines().next().unwrap_or("");
    match first.as_str() {
        "tool" => is_name(&second) && next == Some(':'),
        "type" => is_name(&second) && next == Some('='),
        "effect" => is_name(&second) && next == Some(';'),
        "let" => is_name(&second) && matches!(next, Some('=') | Some(':')),
        "exec" => second == "tool",
        "match" => rest.contains('{') && rest.contains("=>"),
        "if" => rest.contains(" then "),
        "gather" | "scope" => after.trim_start().starts_with('{'),
        "map" | "filter" | "fold" | "traverse" | "fan_out" | "bounded_loop" | "approve" => {
            !first_line.contains(": ") && (rest.contains("=>") || second == "tool")
        }
        _ => false,
    }
}

/// What a model writing Python instead of lt is told.
const NOT_PYTHON: &str = "lt is not Python: no `def`, `for`, `return` or statements; a program is tool declarations followed by one expression. Send the program in one ```lt block.";

/// Whether a reply without any block is Python code (a line starting with
/// `def`, `async def`, `class`, `import` or `from … import`), so that the
/// model is not told that it sent no program at all.
fn looks_like_python(text: &str) -> bool {
    text.lines().map(str::trim_start).any(|l| {
        ["def ", "async def ", "class ", "import "]
            .iter()
            .any(|p| l.starts_with(p))
            || (l.starts_with("from ") && l.contains(" import "))
    })
}

/// The program in `reply`. `ran`: a program has run in this session (a
/// reply without a block is then the final answer).
pub fn extract(reply: &str, ran: bool) -> Extracted {
    if ran && reply.trim().is_empty() {
        return Extracted::Missing(
            "Your reply was empty. Answer the task in plain text, or send the next program in one ```lt block.".into(),
        );
    }
    let all = blocks(reply);
    // After a run, a block that is not tagged `lt` is a program only if it
    // starts like one: answers often quote data in a plain block.
    let program_like = |b: &&Block| !ran || looks_like_program(&b.text);
    let pick = all
        .iter()
        .rev()
        .find(|b| is_lt(&b.lang))
        .or_else(|| {
            all.iter()
                .rev()
                .filter(program_like)
                .find(|b| b.lang.is_empty())
        })
        .or_else(|| {
            all.iter()
                .rev()
                .filter(program_like)
                .find(|b| !OTHER_LANGUAGES.contains(&b.lang.as_str()))
        });
    if let Some(b) = pick {
        return Extracted::Program {
            text: b.text.clone(),
            fenced: true,
            unclosed: !b.closed,
        };
    }
    if let Some(b) = all.first() {
        let why = if b.lang.starts_with("py") {
            format!(
                "Your reply has a ```{} block but no ```lt block. {NOT_PYTHON}",
                b.lang
            )
        } else {
            format!(
                "Your reply has a ```{} block but no ```lt block. Send the program in one ```lt block.",
                b.lang
            )
        };
        return if ran {
            Extracted::Answer(reply.trim().to_string())
        } else {
            Extracted::Missing(why)
        };
    }
    if ran {
        return Extracted::Answer(reply.trim().to_string());
    }
    if looks_like_program(reply) {
        return Extracted::Program {
            text: reply.to_string(),
            fenced: false,
            unclosed: false,
        };
    }
    let why = if reply.trim().is_empty() {
        "Your reply was empty. Send the program in one ```lt block.".to_string()
    } else if looks_like_python(reply) {
        format!("Your reply looks like Python, and has no ```lt block. {NOT_PYTHON}")
    } else {
        "Your reply has no program: nothing has run yet, so there is no result to answer from. Send the program in one ```lt block.".to_string()
    };
    Extracted::Missing(why)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn program(reply: &str) -> Option<(String, bool)> {
        match extract(reply, false) {
            Extracted::Program { text, unclosed, .. } => Some((text, unclosed)),
            _ => None,
        }
    }

    #[test]
    fn takes_the_last_lt_block() {
        let r = "Here:\n```lt\nold\n```\nbetter:\n```lt\nnew\n```\n";
        assert_eq!(program(r), Some(("new\n".into(), false)));
    }

    #[test]
    fn prefers_lt_over_untagged_and_skips_python() {
        let r = "```lt\na\n```\n```\nb\n```\n";
        assert_eq!(program(r), Some(("a\n".into(), false)));
        let r = "```python\ndef f(): pass\n```\n";
        assert!(matches!(extract(r, false), Extracted::Missing(m) if m.contains("not Python")));
        assert!(matches!(extract(r, true), Extracted::Answer(_)));
        let r = "def main():\n    return lookup(\"u1\").name\n";
        assert!(
            matches!(extract(r, false), Extracted::Missing(m) if m.contains("looks like Python"))
        );
        assert!(
            matches!(extract("I will look the user up.", false), Extracted::Missing(m) if m.contains("no program"))
        );
    }

    #[test]
    fn an_unclosed_fence_is_a_cut_off_program() {
        let r = "```lt\ntool t: Int -{Read}-> Int;\nmatch exec tool t 1 {";
        assert_eq!(
            program(r),
            Some((
                "tool t: Int -{Read}-> Int;\nmatch exec tool t 1 {".into(),
                true
            ))
        );
    }

    #[test]
    fn a_bare_reply_is_a_program_only_before_a_run() {
        let r = "// comment\ntool t: Int -{Read}-> Int;\n1";
        assert!(matches!(
            extract(r, false),
            Extracted::Program { fenced: false, .. }
        ));
        assert!(matches!(extract(r, true), Extracted::Answer(_)));
        assert!(matches!(
            extract("The answer is 4.", false),
            Extracted::Missing(_)
        ));
        assert_eq!(
            extract("The answer is 4.", true),
            Extracted::Answer("The answer is 4.".into())
        );
    }

    #[test]
    fn after_a_run_a_plain_block_of_data_is_part_of_the_answer() {
        let r = "The email is:\n```\nada@example.com\n```";
        assert_eq!(extract(r, true), Extracted::Answer(r.to_string()));
        let r = "Next:\n```\ntool t: Int -{Read}-> Int;\n1\n```";
        assert!(matches!(extract(r, true), Extracted::Program { .. }));
        assert!(matches!(extract("  ", true), Extracted::Missing(_)));
    }

    #[test]
    fn prose_and_data_that_begin_with_a_keyword_are_not_programs() {
        for text in [
            "type: pro\nname: Ada",
            "match found: Ada",
            "let me know",
            "tool: hammer",
            "if you want",
        ] {
            assert!(!looks_like_program(text), "{text}");
        }
        for text in [
            "tool t: Int -{Read}-> Int;\n1",
            "// c\ntype Money = Int;\n1",
            "effect Payment;\n1",
            "let x = 1 in x",
            "match exec tool t 1 { Ok(v) => v, Err(e) => 0 }",
            "map (fn x => x + 1) [1]",
        ] {
            assert!(looks_like_program(text), "{text}");
        }
    }

    #[test]
    fn tildes_and_longer_fences() {
        let r = "~~~~lt\n```\ninner\n```\n~~~~\n";
        assert_eq!(program(r), Some(("```\ninner\n```\n".into(), false)));
    }
}
