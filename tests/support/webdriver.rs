//! A small W3C WebDriver client over HTTP (ureq) for the console's browser
//! tests: it starts Debian's `chromedriver` on a free port, opens a
//! headless Chromium with a fresh profile, and speaks the protocol's JSON
//! (navigate, find, click, type, read, run a script, screenshot).
//! `available()` says whether the browser is installed; under CI
//! (`CI=true`) a missing browser is a failure, elsewhere a loud skip.
#![allow(dead_code)]

use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

fn binary(var: &str, default: &str) -> PathBuf {
    std::env::var_os(var).map_or_else(|| PathBuf::from(default), PathBuf::from)
}

/// Chromium and chromedriver (`LT_CHROMIUM`, `LT_CHROMEDRIVER` override
/// `/usr/bin/chromium`, `/usr/bin/chromedriver`), if both are installed.
/// Missing: panics under CI, else prints a loud notice and says `None`.
pub fn available(test: &str) -> Option<(PathBuf, PathBuf)> {
    let chromium = binary("LT_CHROMIUM", "/usr/bin/chromium");
    let driver = binary("LT_CHROMEDRIVER", "/usr/bin/chromedriver");
    if chromium.exists() && driver.exists() {
        return Some((chromium, driver));
    }
    let msg = format!(
        "{test}: Chromium or chromedriver is missing ({} / {}); install them with `apt-get install -y chromium chromium-driver` (.ci/run does)",
        chromium.display(),
        driver.display()
    );
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("{msg}: under CI the browser tests must run");
    }
    // Written to the process's stderr directly, not through `eprintln!`,
    // which the test harness captures: the notice shows in a plain `cargo
    // test` run.
    let stars = "*".repeat(70);
    let _ = std::io::Write::write_all(
        &mut std::io::stderr(),
        format!("\n{stars}\nSKIPPED {msg}\n{stars}\n\n").as_bytes(),
    );
    None
}

/// A browser session driven through chromedriver; both end on drop.
pub struct Browser {
    driver: Child,
    base: String,
    session: String,
    profile: PathBuf,
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

fn send(method: &str, url: &str, body: Option<&Value>) -> Value {
    let req = ureq::request(method, url).timeout(Duration::from_secs(60));
    let resp = match body {
        Some(b) => req
            .set("Content-Type", "application/json")
            .send_string(&b.to_string()),
        None => req.call(),
    };
    let resp = match resp {
        Ok(r) => r,
        Err(ureq::Error::Status(_, r)) => r,
        Err(e) => panic!("webdriver {method} {url}: {e}"),
    };
    serde_json::from_str(&resp.into_string().unwrap_or_default()).unwrap_or(Value::Null)
}

impl Browser {
    /// Starts chromedriver and a headless Chromium.
    pub fn start(chromium: &Path, driver: &Path) -> Browser {
        let port = free_port();
        let child = Command::new(driver)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("chromedriver starts");
        let base = format!("http://127.0.0.1:{port}");
        let until = Instant::now() + Duration::from_secs(30);
        loop {
            let ready = ureq::get(&format!("{base}/status"))
                .timeout(Duration::from_secs(2))
                .call()
                .ok()
                .and_then(|r| r.into_string().ok())
                .and_then(|t| serde_json::from_str::<Value>(&t).ok())
                .is_some_and(|v| v["value"]["ready"] == true);
            if ready {
                break;
            }
            assert!(Instant::now() < until, "chromedriver did not get ready");
            std::thread::sleep(Duration::from_millis(100));
        }
        let profile =
            std::env::temp_dir().join(format!("lt-chromium-{}-{port}", std::process::id()));
        let caps = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {
                "binary": chromium.to_string_lossy(),
                "args": [
                    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                    "--no-first-run", "--disable-background-networking",
                    "--disable-component-update", "--disable-sync",
                    "--window-size=1280,900",
                    format!("--user-data-dir={}", profile.display()),
                ]
            }
        }}});
        let mut b = Browser {
            driver: child,
            base,
            session: String::new(),
            profile,
        };
        let v = send("POST", &format!("{}/session", b.base), Some(&caps));
        b.session = v["value"]["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("no browser session: {v}"))
            .to_string();
        b
    }

    fn cmd(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        let v = send(
            method,
            &format!("{}/session/{}{path}", self.base, self.session),
            body.as_ref(),
        );
        v["value"].clone()
    }

    pub fn goto(&self, url: &str) {
        self.cmd("POST", "/url", Some(json!({ "url": url })));
    }

    pub fn url(&self) -> String {
        self.cmd("GET", "/url", None)
            .as_str()
            .unwrap_or("")
            .to_string()
    }

    /// The element `css` matches, if any now.
    pub fn find(&self, css: &str) -> Option<String> {
        let v = self.cmd(
            "POST",
            "/element",
            Some(json!({"using": "css selector", "value": css})),
        );
        v[ELEMENT].as_str().map(str::to_string)
    }

    /// Every element `css` matches now.
    pub fn find_all(&self, css: &str) -> Vec<String> {
        let v = self.cmd(
            "POST",
            "/elements",
            Some(json!({"using": "css selector", "value": css})),
        );
        v.as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|e| e[ELEMENT].as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Waits up to `secs` for `css` to match; the element.
    pub fn wait(&self, css: &str, secs: u64) -> String {
        let until = Instant::now() + Duration::from_secs(secs);
        loop {
            if let Some(e) = self.find(css) {
                return e;
            }
            assert!(
                Instant::now() < until,
                "{css} never appeared on {}: {}",
                self.url(),
                self.source()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    pub fn click(&self, element: &str) {
        self.cmd(
            "POST",
            &format!("/element/{element}/click"),
            Some(json!({})),
        );
    }

    pub fn type_into(&self, element: &str, text: &str) {
        self.cmd(
            "POST",
            &format!("/element/{element}/value"),
            Some(json!({ "text": text })),
        );
    }

    pub fn text(&self, element: &str) -> String {
        self.cmd("GET", &format!("/element/{element}/text"), None)
            .as_str()
            .unwrap_or("")
            .to_string()
    }

    pub fn attr(&self, element: &str, name: &str) -> String {
        self.cmd("GET", &format!("/element/{element}/attribute/{name}"), None)
            .as_str()
            .unwrap_or("")
            .to_string()
    }

    pub fn source(&self) -> String {
        self.cmd("GET", "/source", None)
            .as_str()
            .unwrap_or("")
            .to_string()
    }

    /// Runs `script` in the page; what it returns.
    pub fn run(&self, script: &str) -> Value {
        self.cmd(
            "POST",
            "/execute/sync",
            Some(json!({"script": script, "args": []})),
        )
    }

    /// Saves a PNG of the window to `path`.
    pub fn screenshot(&self, path: &Path) {
        let v = self.cmd("GET", "/screenshot", None);
        let png = base64(v.as_str().unwrap_or(""));
        assert!(png.starts_with(b"\x89PNG"), "a PNG");
        if let Some(p) = path.parent() {
            std::fs::create_dir_all(p).expect("screenshot folder");
        }
        std::fs::write(path, png).expect("screenshot written");
    }
}

/// Standard base64 decoded (padding and unknown characters skipped).
fn base64(s: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(s.len() * 3 / 4);
    let (mut acc, mut bits) = (0u32, 0u32);
    for c in s.bytes() {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => continue,
        };
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    out
}

impl Drop for Browser {
    fn drop(&mut self) {
        if !self.session.is_empty() {
            let _ = ureq::delete(&format!("{}/session/{}", self.base, self.session))
                .timeout(Duration::from_secs(10))
                .call();
        }
        let _ = self.driver.kill();
        let _ = self.driver.wait();
        let _ = std::fs::remove_dir_all(&self.profile);
    }
}
