//! The `lambda_tool` binary: lt speaking λ-Tool's command-line protocol
//! (`docs/protocol.md`), a thin wrapper over [`lt::compat`] (the same code
//! as `lt compat …`).
use std::process::ExitCode;

/// mimalloc: large lists are allocated and freed without a fresh mapping
/// (and its page faults) each time (docs/performance.md).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let mut args: Vec<String> = Vec::new();
    for arg in std::env::args_os() {
        match arg.into_string() {
            Ok(a) => args.push(a),
            Err(bad) => return lt::compat::bad_argument(&bad.to_string_lossy()),
        }
    }
    // As for `lt`: deep programs are bounded by the parser's depth limit and
    // the checker grows its stack on demand; a large stack covers the rest.
    let worker = std::thread::Builder::new()
        .stack_size(256 * 1024 * 1024)
        .spawn(move || lt::compat::main_with_args(args));
    match worker {
        // A panic is a bug; the host still gets its result line.
        Ok(handle) => handle.join().unwrap_or_else(|_| lt::compat::crashed()),
        Err(e) => {
            eprintln!("error: cannot start lambda_tool: {e}");
            ExitCode::from(2)
        }
    }
}
