//! `lt prompt --tools DECLS.lt`: the system prompt of the agent loop on
//! stdout, the guide for models (`docs/llm-guide.md`) followed by the
//! declarations of DECLS.lt ([`crate::agent::prompt`]).
//!
//! Exit codes: 0 the prompt was printed; 1 the declarations have errors
//! (rendered as `lt check` renders them, nothing on stdout); 2 DECLS.lt
//! cannot be read. A file that ends with an expression (a whole program) is
//! accepted: the expression is left out of the prompt, with a warning on
//! stderr; so is a file that declares no tool (a warning too).

use super::{diagnostics::print_diagnostic_list, note_write, read_source};
use super::{EXIT_DIAGNOSTICS, EXIT_OK, EXIT_USAGE};
use crate::agent::prompt::{load_declarations, system_prompt};
use crate::source::SourceFile;

/// Runs `lt prompt`; returns the exit status. `tools` is the declarations
/// file (`-` for standard input); `color` colours the diagnostics.
pub fn run(tools: &str, color: bool) -> u8 {
    let (name, text) = match read_source(tools) {
        Ok(x) => x,
        Err(msg) => {
            err!("error: {msg}");
            return EXIT_USAGE;
        }
    };
    let file = SourceFile::new(name, text);
    let decls = match load_declarations(&file.text) {
        Ok(d) => d,
        Err(e) => {
            print_diagnostic_list(&file, &e.diagnostics, e.truncated, color);
            return EXIT_DIAGNOSTICS;
        }
    };
    if decls.dropped_expression {
        err!(
            "warning: {}: the expression after the declarations is left out of the prompt; only the declarations are shown",
            file.name
        );
    }
    if decls.tools.is_empty() {
        err!(
            "warning: {} declares no tools, so the prompt lists none\n  = help: declare each tool with its input, effects and output: `tool lookup: {{id: String}} -{{Read}}-> {{email: String}};`",
            file.name
        );
    }
    let prompt = system_prompt(&decls.text);
    {
        use std::io::Write as _;
        let mut lock = std::io::stdout().lock();
        note_write(lock.write_all(prompt.as_bytes()).and_then(|_| lock.flush()));
    }
    EXIT_OK
}
