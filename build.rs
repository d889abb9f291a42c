//! Build steps: generates the LALR(1) parser from `grammar/lt.lalrpop` and
//! embeds the error-code pages of `docs/errors/` into the binary.
use std::{env, fs, path::PathBuf};

fn main() {
    println!("cargo:rerun-if-changed=grammar");
    // The binaries are linked as position-dependent executables on Linux:
    // a PIE `lt` spends about a fifth of a trivial run in the dynamic
    // loader applying ~28,000 relative relocations (and copying the pages
    // they touch). The code stays position-independent, so the library,
    // tests and proc-macros are unaffected (docs/performance.md).
    if env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        println!("cargo:rustc-link-arg-bins=-no-pie");
    }
    println!("cargo:rerun-if-changed=docs/errors");
    let out = PathBuf::from(env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    lalrpop::Configuration::new()
        .set_in_dir("grammar")
        .set_out_dir(&out)
        .process()
        .expect("the grammar in grammar/ must generate a parser");

    let dir = PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"))
        .join("docs/errors");
    let mut pages: Vec<String> = fs::read_dir(&dir)
        .map(|rd| {
            rd.filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == "md"))
                .filter_map(|p| Some(p.file_stem()?.to_str()?.to_string()))
                .filter(|stem| stem.starts_with('E'))
                .collect()
        })
        .unwrap_or_default();
    pages.sort();
    // Each page is named relative to the crate's root as the library is
    // compiled, not by this run's absolute path: a target directory shared
    // by two checkouts (CARGO_TARGET_DIR) keeps this script's output when
    // the other checkout builds, and an absolute path would point into the
    // first one (gone when it was a throw-away clone).
    let mut src = String::from("&[\n");
    for code in pages {
        src.push_str(&format!(
            "    ({code:?}, include_str!(concat!(env!(\"CARGO_MANIFEST_DIR\"), \"/docs/errors/{code}.md\"))),\n"
        ));
    }
    src.push_str("]\n");
    fs::write(out.join("error_pages.rs"), src).expect("OUT_DIR is writable");
}
