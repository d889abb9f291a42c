//! Robustness of the real `lt` binary on hostile and extreme inputs.
//!
//! Every case runs `lt check` under a timeout guard and requires that the
//! process exits normally with 0, 1 or 2 (never a signal, 101 or a panic
//! message), within a few seconds, and prints a diagnostic whenever it does
//! not succeed. Nesting deeper than the parser's limit (1000) must be
//! reported as `E0103`, once.
//!
//! Large inputs are generated into a fresh directory under the system temp
//! dir (removed afterwards), never into the repository.
//!
//! Time limits are given for a release build and multiplied by
//! [`DEBUG_SLOWDOWN`] when the tests (and so the binary) are built without
//! optimisations; they are hang guards, not benchmarks.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// The `lt` binary built by Cargo for these tests.
const LT: &str = env!("CARGO_BIN_EXE_lt");

/// How much slower an unoptimised `lt` is than a release build (measured:
/// 5–11x on these inputs), so that debug runs do not flake.
const DEBUG_SLOWDOWN: u32 = 12;

/// The nesting depth used for the "deeply nested" cases.
const DEEP: usize = 100_000;

/// A time limit of `release_secs` in a release build.
fn limit(release_secs: u64) -> Duration {
    let base = Duration::from_secs(release_secs);
    if cfg!(debug_assertions) {
        base * DEBUG_SLOWDOWN
    } else {
        base
    }
}

/// The default limit: "a few seconds".
fn few_seconds() -> Duration {
    limit(5)
}

// ------------------------------------------------------------------ harness

/// What one run of the binary did.
struct Run {
    what: String,
    code: Option<i32>,
    signal: Option<i32>,
    timed_out: bool,
    elapsed: Duration,
    stdout: String,
    stderr: String,
}

impl Run {
    /// A short description for assertion messages.
    fn describe(&self) -> String {
        let head = |s: &str| -> String {
            let cut: String = s.chars().take(600).collect();
            if cut.len() < s.len() {
                format!("{cut}… ({} bytes in all)", s.len())
            } else {
                cut
            }
        };
        format!(
            "{}: exit code {:?}, signal {:?}, timed out {}, {:.2?}\n--- stdout:\n{}\n--- stderr:\n{}",
            self.what,
            self.code,
            self.signal,
            self.timed_out,
            self.elapsed,
            head(&self.stdout),
            head(&self.stderr)
        )
    }

    /// The exit code, after asserting the process ended normally in time,
    /// with 0, 1 or 2, without a panic, and with a diagnostic unless it
    /// succeeded.
    fn sane(&self) -> i32 {
        assert!(
            !self.timed_out,
            "did not finish within the time limit\n{}",
            self.describe()
        );
        assert!(
            self.signal.is_none(),
            "killed by a signal (crash or stack overflow)\n{}",
            self.describe()
        );
        let code = self.code.unwrap_or(-1);
        assert!(
            matches!(code, 0..=2),
            "exit code must be 0, 1 or 2\n{}",
            self.describe()
        );
        for bad in [
            "panicked",
            "internal error",
            "RUST_BACKTRACE",
            "stack overflow",
        ] {
            assert!(
                !self.stderr.contains(bad),
                "stderr mentions `{bad}`\n{}",
                self.describe()
            );
        }
        if code != 0 {
            // Human diagnostics go to stderr; `--json` prints them on stdout.
            let printed = !self.stderr.trim().is_empty() || self.stdout.contains("\"diagnostics\"");
            assert!(
                printed,
                "a failing run must print a diagnostic\n{}",
                self.describe()
            );
        }
        code
    }

    /// Asserts a normal exit with `expected`.
    fn expect_code(&self, expected: i32) {
        let code = self.sane();
        assert_eq!(code, expected, "unexpected exit code\n{}", self.describe());
    }

    /// How many diagnostics with `code` the human output shows (`[E0103]`).
    fn count(&self, code: &str) -> usize {
        self.stderr.matches(&format!("[{code}]")).count()
    }

    /// Asserts exit 1 with at least one `code` diagnostic.
    fn expect_error(&self, code: &str) {
        self.expect_code(1);
        assert!(
            self.count(code) >= 1,
            "expected a {code} diagnostic\n{}",
            self.describe()
        );
    }

    /// Asserts exit 1 with exactly one `E0103` (nesting limit) diagnostic.
    fn expect_too_deep(&self) {
        self.expect_code(1);
        assert_eq!(
            self.count("E0103"),
            1,
            "expected exactly one E0103 (nesting limit)\n{}",
            self.describe()
        );
        assert!(
            self.stderr.contains("nested more than 1000 levels"),
            "the E0103 message should state the limit\n{}",
            self.describe()
        );
    }
}

/// Runs `lt ARGS` with `stdin` as standard input, killing it after `limit`.
fn run(what: &str, args: &[&str], stdin: &[u8], limit: Duration) -> Run {
    let mut child = Command::new(LT)
        .args(args)
        .env("NO_COLOR", "1")
        .env_remove("RUST_BACKTRACE")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("cannot start the lt binary");
    let started = Instant::now();
    // Feed and drain the pipes on threads so that a large output (or input)
    // can never block the child or this test.
    let mut input = child.stdin.take().expect("stdin is piped");
    let data = stdin.to_vec();
    let writer = std::thread::spawn(move || {
        let _ = input.write_all(&data);
    });
    let mut out = child.stdout.take().expect("stdout is piped");
    let mut err = child.stderr.take().expect("stderr is piped");
    let out_reader = std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = out.read_to_end(&mut buf);
        buf
    });
    let err_reader = std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = err.read_to_end(&mut buf);
        buf
    });
    let mut timed_out = false;
    let status = loop {
        if let Some(status) = child.try_wait().expect("cannot wait for lt") {
            break status;
        }
        if started.elapsed() > limit {
            timed_out = true;
            let _ = child.kill();
            break child.wait().expect("cannot wait for the killed lt");
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let elapsed = started.elapsed();
    let _ = writer.join();
    let stdout = out_reader.join().unwrap_or_default();
    let stderr = err_reader.join().unwrap_or_default();
    Run {
        what: what.to_string(),
        code: status.code(),
        signal: signal_of(&status),
        timed_out,
        elapsed,
        stdout: String::from_utf8_lossy(&stdout).into_owned(),
        stderr: String::from_utf8_lossy(&stderr).into_owned(),
    }
}

#[cfg(unix)]
fn signal_of(status: &std::process::ExitStatus) -> Option<i32> {
    use std::os::unix::process::ExitStatusExt;
    status.signal()
}

#[cfg(not(unix))]
fn signal_of(_: &std::process::ExitStatus) -> Option<i32> {
    None
}

/// A fresh directory under the system temp dir, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> TempDir {
        static COUNTER: AtomicUsize = AtomicUsize::new(0);
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let dir = std::env::temp_dir().join(format!(
            "lt-robustness-{}-{n}-{nanos}-{tag}",
            std::process::id()
        ));
        std::fs::create_dir_all(&dir).expect("cannot create a temp dir");
        TempDir(dir)
    }

    /// Writes `contents` to `name` in this directory and returns its path.
    fn file(&self, name: &str, contents: &[u8]) -> PathBuf {
        let path = self.0.join(name);
        std::fs::write(&path, contents).expect("cannot write a temp file");
        path
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `lt check FILE` on `contents` written to a temp file.
fn check_file(what: &str, contents: &[u8], limit: Duration) -> Run {
    let dir = TempDir::new(what);
    let path = dir.file("input.lt", contents);
    check_path(what, &path, limit)
}

fn check_path(what: &str, path: &Path, limit: Duration) -> Run {
    let p = path.to_str().expect("temp paths are UTF-8");
    run(what, &["check", p], b"", limit)
}

/// `lt check -` with `contents` on standard input.
fn check_stdin(what: &str, contents: &[u8], limit: Duration) -> Run {
    run(what, &["check", "-"], contents, limit)
}

/// A small deterministic generator (xorshift64*), so failures reproduce.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// `n` random characters (valid UTF-8): ASCII including controls, Latin,
/// CJK, emoji, combining marks, BOM and other odd code points.
fn random_text(seed: u64, n: usize) -> String {
    let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    let mut s = String::with_capacity(n * 2);
    while s.chars().count() < n {
        let c = match rng.below(8) {
            0..=3 => char::from_u32(rng.below(0x80) as u32),
            4 => char::from_u32(0xA0 + rng.below(0x700) as u32),
            5 => char::from_u32(0x4E00 + rng.below(0x5000) as u32),
            6 => char::from_u32(0x1F300 + rng.below(0x300) as u32),
            _ => [
                0xFEFF, 0x200B, 0x0301, 0x2028, 0xFFFD, 0x10FFFF, 0xE000, 0x0,
            ]
            .get(rng.below(8) as usize)
            .and_then(|&c| char::from_u32(c)),
        };
        if let Some(c) = c {
            s.push(c);
        }
    }
    s
}

/// `n` random lt-ish tokens separated by spaces or newlines.
fn token_soup(seed: u64, n: usize) -> String {
    const WORDS: &[&str] = &[
        "tool",
        "let",
        "rec",
        "in",
        "fn",
        "if",
        "then",
        "else",
        "match",
        "exec",
        "true",
        "false",
        "Ok",
        "Err",
        "List",
        "Result",
        "while",
        "for",
        "(",
        ")",
        "{",
        "}",
        "[",
        "]",
        ",",
        ";",
        ":",
        ".",
        "=",
        "=>",
        "->",
        "-",
        "+",
        "++",
        "*",
        "/",
        "%",
        "<",
        ">",
        "<=",
        ">=",
        "==",
        "!=",
        "!",
        "&&",
        "||",
        "_",
        "0",
        "42",
        "99999999999999999999",
        "\"s\"",
        "\"\\q\"",
        "\"open",
        "x",
        "f",
        "map",
        "fold",
        "traverse",
        "Int",
        "String",
        "-{Read}->",
        "(*",
        "*)",
        "//",
        "é",
        "😀",
        "#",
        "'",
    ];
    let mut rng = Rng(seed | 1);
    let mut s = String::new();
    for _ in 0..n {
        s.push_str(WORDS[rng.below(WORDS.len() as u64) as usize]);
        s.push(if rng.below(8) == 0 { '\n' } else { ' ' });
    }
    s
}

// ------------------------------------------------------------ small inputs

#[test]
fn empty_input() {
    let r = check_file("empty", b"", few_seconds());
    r.expect_error("E0104");
    let r = check_stdin("empty stdin", b"", few_seconds());
    r.expect_error("E0104");
    assert!(r.stderr.contains("<stdin>"), "{}", r.describe());
}

#[test]
fn whitespace_only() {
    let r = check_file("whitespace", b" \t\r\n\n   \x0c\n\t", few_seconds());
    r.expect_error("E0104");
    let r = check_file(
        "comments only",
        b"// nothing\n(* still (* nothing *) here *)\n",
        few_seconds(),
    );
    r.expect_error("E0104");
}

#[test]
fn random_valid_utf8_junk() {
    for seed in 0..16 {
        let text = random_text(seed, 2_000);
        let r = check_file(
            &format!("random UTF-8 text, seed {seed}"),
            text.as_bytes(),
            few_seconds(),
        );
        r.expect_code(1);
    }
    let text = random_text(99, 200_000);
    check_file("200k random characters", text.as_bytes(), few_seconds()).expect_code(1);
}

#[test]
fn random_token_soup() {
    for seed in 1..=24 {
        let text = token_soup(seed, 300);
        let r = check_file(
            &format!("token soup, seed {seed}"),
            text.as_bytes(),
            few_seconds(),
        );
        r.sane();
    }
}

#[test]
fn invalid_utf8_exits_2_with_a_clear_message() {
    // Valid first line; an invalid byte at line 2, column 4 (byte offset 16).
    let bytes = b"let x = 1 in\n x \xff\xfe\x80 more";
    let dir = TempDir::new("invalid-utf8");
    let path = dir.file("bad.lt", bytes);
    let r = check_path("invalid UTF-8 file", &path, few_seconds());
    r.expect_code(2);
    assert!(r.stderr.contains("not valid UTF-8"), "{}", r.describe());
    assert!(
        r.stderr.contains("line 2, column 4"),
        "the message should locate the byte\n{}",
        r.describe()
    );
    assert!(
        r.stderr.contains("bad.lt"),
        "the message should name the file\n{}",
        r.describe()
    );
    assert!(r.stdout.is_empty(), "{}", r.describe());

    let r = check_stdin("invalid UTF-8 on stdin", bytes, few_seconds());
    r.expect_code(2);
    assert!(
        r.stderr.contains("not valid UTF-8") && r.stderr.contains("<stdin>"),
        "{}",
        r.describe()
    );

    // Random bytes: always invalid here (0xFF never occurs in UTF-8).
    let mut rng = Rng(7);
    let mut junk: Vec<u8> = (0..100_000).map(|_| rng.below(256) as u8).collect();
    junk[500] = 0xFF;
    let r = check_file("random bytes", &junk, few_seconds());
    r.expect_code(2);
    assert!(r.stderr.contains("not valid UTF-8"), "{}", r.describe());

    // A truncated multi-byte sequence at the very end, and a lone surrogate.
    check_file(
        "truncated UTF-8 at EOF",
        "let s = \"é"
            .as_bytes()
            .split_last()
            .map_or(&[][..], |(_, r)| r),
        few_seconds(),
    )
    .expect_code(2);
    check_file("encoded surrogate", b"\"\xed\xa0\x80\"", few_seconds()).expect_code(2);

    // With --json the error is still exit 2, and stdout is a JSON object.
    let p = path.to_str().expect("UTF-8 path");
    let r = run(
        "invalid UTF-8 --json",
        &["check", "--json", p],
        b"",
        few_seconds(),
    );
    r.expect_code(2);
    let v: serde_json::Value =
        serde_json::from_str(r.stdout.trim()).expect("--json prints JSON even on I/O errors");
    assert_eq!(v["ok"], serde_json::json!(false), "{}", r.describe());
}

#[test]
fn string_with_every_escape() {
    let src = r#"let s = "nl\n tab\t cr\r nul\0 quote\" backslash\\ emoji\u{1F600} A\u{41} max\u{10FFFF} é" in s ++ "\u{0}""#;
    let r = check_file("every escape", src.as_bytes(), few_seconds());
    r.expect_code(0);
    assert!(r.stdout.contains("type: String"), "{}", r.describe());
    // Every invalid escape is an E0004, never a panic.
    for bad in [
        r#""\q""#,
        r#""\u{D800}""#,
        r#""\u{110000}""#,
        r#""\u{}""#,
        r#""\u{1234567}""#,
        r#""\u{zz}""#,
        r#""\u41""#,
        r#""\u{41""#,
        r#""\"#,
    ] {
        let r = check_file(
            &format!("invalid escape {bad}"),
            bad.as_bytes(),
            few_seconds(),
        );
        r.expect_code(1);
        assert!(
            r.count("E0004") + r.count("E0002") >= 1,
            "expected E0004 or E0002 for {bad}\n{}",
            r.describe()
        );
    }
}

#[test]
fn unterminated_string_at_eof() {
    let r = check_file("unterminated string", b"let x = \"abc", few_seconds());
    r.expect_error("E0002");
    let r = check_file(
        "unterminated string, escape at EOF",
        b"\"abc\\",
        few_seconds(),
    );
    r.expect_error("E0002");
    let r = check_file("lone quote", b"\"", few_seconds());
    r.expect_error("E0002");
}

#[test]
fn unterminated_block_comment() {
    let r = check_file(
        "unterminated comment",
        b"let x = 1 in (* never closed\n x",
        few_seconds(),
    );
    r.expect_error("E0003");
    let r = check_file("lone (*", b"(*", few_seconds());
    r.expect_error("E0003");
    let r = check_file(
        "nested, one level unclosed",
        b"1 (* a (* b *) c",
        few_seconds(),
    );
    r.expect_error("E0003");
    // 100,000 nested openers: the comment scanner must not recurse.
    let deep = "(*".repeat(DEEP);
    check_file("100k nested (*", deep.as_bytes(), few_seconds()).expect_error("E0003");
}

#[test]
fn huge_integer_literals() {
    check_file("i64::MAX", b"9223372036854775807", few_seconds()).expect_code(0);
    check_file("i64::MIN", b"-9223372036854775808", few_seconds()).sane();
    check_file("too large", b"99999999999999999999999999", few_seconds()).expect_error("E0005");
    let digits = "9".repeat(1_000_000);
    check_file("a million digits", digits.as_bytes(), few_seconds()).expect_error("E0005");
}

#[test]
fn long_tokens() {
    let ident = format!("let {0} = 1 in {0}", "x".repeat(1_000_000));
    check_file("1 MB identifier", ident.as_bytes(), few_seconds()).expect_code(0);
    let string = format!("\"{}\"", "s".repeat(1_000_000));
    check_file("1 MB string", string.as_bytes(), few_seconds()).expect_code(0);
    let line = format!("1 {}", "+ 1 ".repeat(500));
    check_file("long line", line.as_bytes(), few_seconds()).expect_code(0);
}

// ------------------------------------------------------------ large inputs

#[test]
fn ten_megabytes_of_valid_lets() {
    let line = "let x = {a = 1, b = \"s\"} in\n";
    let mut src = line.repeat(10 * 1024 * 1024 / line.len());
    src.push_str("x.a\n");
    assert!(src.len() > 10_000_000);
    let r = check_file("10 MB of lets", src.as_bytes(), limit(10));
    r.expect_code(0);
    assert!(r.stdout.contains("type: Int"), "{}", r.describe());
}

#[test]
fn ten_megabytes_of_junk_characters() {
    // One 10 MB line of characters that start no token.
    let src = "#$@~`?".repeat(10 * 1024 * 1024 / 6);
    let r = check_file("10 MB of junk", src.as_bytes(), limit(10));
    r.expect_error("E0001");
    // Junk spread over lines, with multi-byte characters.
    let src = "§¤ #@ ¿? ~ \n".repeat(10 * 1024 * 1024 / 16);
    let r = check_file("10 MB of junk lines", src.as_bytes(), limit(10));
    r.expect_error("E0001");
}

#[test]
fn diagnostics_for_huge_lines_stay_bounded() {
    let src = "#$@~`?".repeat(10 * 1024 * 1024 / 6);
    let r = check_file("10 MB of junk", src.as_bytes(), limit(10));
    r.expect_error("E0001");
    assert!(
        r.stderr.len() < 1_000_000,
        "stderr is {} bytes\n{}",
        r.stderr.len(),
        r.describe()
    );
}

#[test]
fn a_hundred_thousand_chained_lets_check() {
    let mut src = String::new();
    for i in 0..DEEP {
        src.push_str(&format!("let x{i} = {i} in\n"));
    }
    src.push_str("x0 + x99999\n");
    let r = check_file("100k chained lets", src.as_bytes(), few_seconds());
    r.expect_code(0);
    assert!(r.stdout.contains("type: Int"), "{}", r.describe());
}

#[test]
fn a_hundred_thousand_additions() {
    // `1 + 1 + …` is a left-nested tree 100,000 levels deep: rejected once
    // with E0103 (the nesting limit counts operator chains too), never a
    // crash.
    let src = vec!["1"; DEEP].join(" + ");
    let r = check_file("100k additions", src.as_bytes(), few_seconds());
    r.expect_too_deep();
}

#[test]
fn many_errors_are_truncated() {
    // 100,000 type errors: the output is capped and the rest counted.
    let mut src = String::new();
    for i in 0..DEEP {
        src.push_str(&format!("let x{i} = 1 + \"s\" in\n"));
    }
    src.push('1');
    let r = check_file("100k type errors", src.as_bytes(), few_seconds());
    r.expect_error("E0201");
    assert!(
        r.count("E0201") <= 100,
        "at most 100 diagnostics are shown\n{}",
        r.describe()
    );
    assert!(
        r.stderr.contains("more errors not shown"),
        "{}",
        r.describe()
    );
}

// ---------------------------------------------------------- deep nesting

/// `open × DEEP + middle + close × DEEP`.
fn nested(open: &str, middle: &str, close: &str) -> String {
    let mut s = String::with_capacity((open.len() + close.len()) * DEEP + middle.len());
    s.push_str(&open.repeat(DEEP));
    s.push_str(middle);
    s.push_str(&close.repeat(DEEP));
    s
}

#[test]
fn deeply_nested_parentheses() {
    check_file(
        "100k nested ( )",
        nested("(", "1", ")").as_bytes(),
        few_seconds(),
    )
    .expect_too_deep();
    check_file(
        "100k unclosed (",
        "(".repeat(DEEP).as_bytes(),
        few_seconds(),
    )
    .expect_too_deep();
}

#[test]
fn deeply_nested_brackets() {
    check_file(
        "100k nested [ ]",
        nested("[", "1", "]").as_bytes(),
        few_seconds(),
    )
    .expect_too_deep();
    check_file(
        "100k unclosed [",
        "[".repeat(DEEP).as_bytes(),
        few_seconds(),
    )
    .expect_too_deep();
}

#[test]
fn deeply_nested_functions() {
    let src = format!("{}1", "fn x: Int => ".repeat(DEEP));
    check_file("100k nested fn", src.as_bytes(), few_seconds()).expect_too_deep();
    let src = format!("{}1", "fn (x: Int) => ".repeat(DEEP));
    check_file("100k nested fn (x: T)", src.as_bytes(), few_seconds()).expect_too_deep();
}

#[test]
fn deeply_nested_ifs() {
    let src = nested("if true then ", "1", " else 2");
    check_file("100k nested if (then)", src.as_bytes(), few_seconds()).expect_too_deep();
    let src = format!("{}1", "if true then 1 else ".repeat(DEEP));
    check_file("100k nested if (else)", src.as_bytes(), few_seconds()).expect_too_deep();
}

#[test]
fn deeply_nested_matches() {
    let src = nested("match ", "1", " { _ => 1 }");
    check_file(
        "100k nested match scrutinees",
        src.as_bytes(),
        few_seconds(),
    )
    .expect_too_deep();
    let src = format!(
        "tool t: Int -{{Read}}-> Int;\n{}0{}",
        "match exec tool t 1 { Err(e) => 0, Ok(v) => ".repeat(DEEP),
        " }".repeat(DEEP)
    );
    check_file("100k nested match arms", src.as_bytes(), few_seconds()).expect_too_deep();
}

#[test]
fn deeply_nested_types() {
    let src = format!("let x: {}Int = [] in 1", "List ".repeat(DEEP));
    check_file("List List … Int", src.as_bytes(), few_seconds()).expect_too_deep();
    let src = format!("let x: {}Int = 1 in 1", "!".repeat(DEEP));
    check_file("!!!…Int", src.as_bytes(), few_seconds()).expect_too_deep();
    let src = format!("let x: {}Int = 1 in 1", "Int -> ".repeat(DEEP));
    check_file("Int -> Int -> …", src.as_bytes(), few_seconds()).expect_too_deep();
    let src = format!(
        "let x: {}Int{} = 1 in 1",
        "[".repeat(DEEP),
        "]".repeat(DEEP)
    );
    check_file("[[[…Int]]]", src.as_bytes(), few_seconds()).expect_too_deep();
    let src = format!(
        "let x: {}Int{} = 1 in 1",
        "{a: ".repeat(DEEP),
        "}".repeat(DEEP)
    );
    check_file("{a: {a: …}}", src.as_bytes(), few_seconds()).expect_too_deep();
    let src = format!(
        "let x: {}Int{} = 1 in 1",
        "Result<".repeat(DEEP),
        ", Int>".repeat(DEEP)
    );
    check_file("Result<Result<…>>", src.as_bytes(), few_seconds()).expect_too_deep();
    let src = format!("tool t: {}Int -{{Read}}-> Int;\n1", "List ".repeat(DEEP));
    check_file(
        "deep type in a tool declaration",
        src.as_bytes(),
        few_seconds(),
    )
    .expect_too_deep();
}

#[test]
fn other_deep_nestings() {
    let cases: Vec<(&str, String)> = vec![
        ("records", nested("{a = ", "1", "}")),
        ("negations", format!("{}1", "- ".repeat(DEEP))),
        ("Ok(…)", nested("Ok(", "1", ")")),
        (
            "field accesses",
            format!("let r = {{a = 1}} in r{}", ".a".repeat(DEEP)),
        ),
        (
            "applications",
            format!("let f = fn x: Int => x in f{}", " 1".repeat(DEEP)),
        ),
        (
            "let values",
            format!("{}1{}", "let x = ".repeat(DEEP), " in x".repeat(DEEP)),
        ),
        ("lists of lists", nested("[1, ", "2", "]")),
        (
            "exec arguments",
            format!(
                "tool t: Int -{{Read}}-> Int;\n{}1{}",
                "(exec tool t ".repeat(DEEP),
                ")".repeat(DEEP)
            ),
        ),
        ("&& chains", vec!["true"; DEEP].join(" && ")),
        ("++ chains", vec!["\"a\""; DEEP].join(" ++ ")),
    ];
    for (what, src) in cases {
        let r = check_file(
            &format!("100k nested {what}"),
            src.as_bytes(),
            few_seconds(),
        );
        match r.sane() {
            0 => {}
            _ => r.expect_too_deep(),
        }
    }
}

#[test]
fn deep_nesting_through_stdin() {
    let r = check_stdin(
        "100k nested ( ) on stdin",
        nested("(", "1", ")").as_bytes(),
        few_seconds(),
    );
    r.expect_too_deep();
}

#[test]
fn deep_nesting_with_json_output() {
    let dir = TempDir::new("deep-json");
    let path = dir.file("deep.lt", nested("[", "1", "]").as_bytes());
    let p = path.to_str().expect("UTF-8 path");
    let r = run(
        "100k nested [ ] --json",
        &["check", "--json", p],
        b"",
        few_seconds(),
    );
    r.expect_code(1);
    let v: serde_json::Value = serde_json::from_str(r.stdout.trim()).expect("valid JSON");
    let codes: Vec<&str> = v["diagnostics"]
        .as_array()
        .map(|ds| ds.iter().filter_map(|d| d["code"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(
        codes.iter().filter(|c| **c == "E0103").count(),
        1,
        "{codes:?}\n{}",
        r.describe()
    );
}

// ------------------------------------------- known slow paths (hang guards)

/// A `let` chain of `n` lines followed by `tail`.
fn let_chain_then(n: usize, tail: &str) -> String {
    let mut s = String::new();
    for i in 0..n {
        s.push_str(&format!("let x{i} = {i} in\n"));
    }
    s.push_str(tail);
    s
}

#[test]
fn long_let_chain_ending_early_is_fast() {
    // Missing body, or a body that is not an expression start but parses
    // cheaply: these take linear time.
    check_file(
        "100k lets, then EOF",
        let_chain_then(DEEP, "").as_bytes(),
        few_seconds(),
    )
    .expect_error("E0102");
    check_file(
        "100k lets, then `x0 )`",
        let_chain_then(DEEP, "x0 )").as_bytes(),
        few_seconds(),
    )
    .expect_code(1);
}

#[test]
fn long_let_chain_then_stray_token() {
    for tail in [")", "}", "else", ","] {
        let r = check_file(
            &format!("100k lets, then `{tail}`"),
            let_chain_then(DEEP, tail).as_bytes(),
            few_seconds(),
        );
        r.expect_code(1);
    }
}

#[test]
fn deep_prefix_nesting_then_stray_token() {
    for (what, open) in [
        ("fn", "fn x: Int => "),
        ("if-else", "if true then 1 else "),
        ("negation", "- "),
    ] {
        let src = format!("{})", open.repeat(DEEP));
        let r = check_file(
            &format!("100k nested {what}, then `)`"),
            src.as_bytes(),
            few_seconds(),
        );
        r.expect_too_deep();
    }
}

#[test]
fn many_unbound_variables_in_a_long_program() {
    let mut src = String::new();
    for i in 0..DEEP {
        src.push_str(&format!("let a{i} = nope{i} in\n"));
    }
    src.push('1');
    let r = check_file("100k unbound variables", src.as_bytes(), few_seconds());
    r.expect_error("E0203");
}

#[test]
fn many_unknown_tools() {
    let n = 20_000;
    let mut src = String::new();
    for i in 0..n {
        src.push_str(&format!("tool t{i}: Int -{{Read}}-> Int;\n"));
    }
    for i in 0..n {
        src.push_str(&format!(
            "let a{i} = match exec tool nope{i} 1 {{ Ok(v) => v, Err(e) => 0 }} in\n"
        ));
    }
    src.push('1');
    let r = check_file("20k unknown tools", src.as_bytes(), few_seconds());
    r.expect_error("E0204");
}
