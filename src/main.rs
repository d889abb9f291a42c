//! The `lt` binary: a thin wrapper over [`lt::cli`].
use std::process::ExitCode;

/// mimalloc: large lists are allocated and freed without a fresh mapping
/// (and its page faults) each time (docs/performance.md).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let mut args: Vec<String> = Vec::new();
    // `lt compat …` answers in the protocol's JSON even here (docs/protocol.md).
    let compat = std::env::args_os().nth(1).is_some_and(|a| a == "compat");
    for arg in std::env::args_os() {
        match arg.into_string() {
            Ok(a) => args.push(a),
            Err(bad) if compat => return lt::compat::bad_argument(&bad.to_string_lossy()),
            Err(bad) => {
                eprintln!(
                    "error: the argument {} is not valid UTF-8; lt takes UTF-8 paths and options",
                    bad.to_string_lossy()
                );
                return ExitCode::from(2);
            }
        }
    }
    // Deeply nested programs are bounded by the parser's depth limit, and the
    // checker grows its stack on demand; a large main stack covers the rest
    // (for example dropping a very deep inferred type).
    let worker = std::thread::Builder::new()
        .stack_size(256 * 1024 * 1024)
        .spawn(move || lt::cli::main_with_args(args));
    match worker {
        Ok(handle) => handle.join().unwrap_or_else(|_| {
            eprintln!(
                "error: internal error in lt (this is a bug; please report it with the input)"
            );
            ExitCode::from(101)
        }),
        Err(e) => {
            eprintln!("error: cannot start lt: {e}");
            ExitCode::from(2)
        }
    }
}
