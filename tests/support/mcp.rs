//! The Python virtual environment with the MCP servers the tests run: the
//! `mcp` SDK (for `tests/fixtures/mcp/server.py`), `mcp-server-time` and
//! `mcp-server-git`, pinned in `tests/fixtures/mcp/setup-venv.sh`.
//!
//! [`venv`] runs that script (which does nothing when the venv is complete)
//! once per test binary, under a file lock so that test binaries running at
//! the same time do not build it twice. A test that needs the venv fails,
//! loudly, when it cannot be made: it is never skipped.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The folder of the fixture server (`server.py`).
pub fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mcp")
}

/// The fixture server's script.
pub fn fixture_server() -> PathBuf {
    fixtures().join("server.py")
}

/// The target folder the `lt` binary under test was built in.
fn target_dir() -> PathBuf {
    let lt = Path::new(super::LT);
    // <target>/<profile>/lt
    lt.parent()
        .and_then(Path::parent)
        .map(Path::to_path_buf)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target"))
}

/// `<target>/mcp-venv`, created if missing (see the module's note). Panics
/// with the script's output when it cannot be made.
pub fn venv() -> PathBuf {
    static VENV: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    match VENV.get_or_init(make_venv) {
        Ok(path) => path.clone(),
        Err(why) => panic!("the MCP test venv could not be made: {why}"),
    }
}

/// The venv's Python.
pub fn python() -> PathBuf {
    venv().join("bin/python")
}

/// A console script of the venv (`mcp-server-time`, `mcp-server-git`).
pub fn script(name: &str) -> PathBuf {
    venv().join("bin").join(name)
}

fn make_venv() -> Result<PathBuf, String> {
    let target = target_dir();
    std::fs::create_dir_all(&target).map_err(|e| format!("{}: {e}", target.display()))?;
    let lock_path = target.join("mcp-venv.lock");
    let lock =
        std::fs::File::create(&lock_path).map_err(|e| format!("{}: {e}", lock_path.display()))?;
    lock.lock()
        .map_err(|e| format!("cannot lock {}: {e}", lock_path.display()))?;
    let script = fixtures().join("setup-venv.sh");
    let out = std::process::Command::new("bash")
        .arg(&script)
        .env("CARGO_TARGET_DIR", &target)
        .output()
        .map_err(|e| format!("cannot run {}: {e}", script.display()))?;
    drop(lock);
    if !out.status.success() {
        return Err(format!(
            "{} failed ({}):\n{}{}",
            script.display(),
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let venv = target.join("mcp-venv");
    if !venv.join("bin/python").exists() {
        return Err(format!("{} has no bin/python after setup", venv.display()));
    }
    Ok(venv)
}
