//! Interpreter: check → lower → run with small limits against a host whose
//! every answer is derived from the fuzz input (see `lt_fuzz::FuzzHost`).
//!
//! Input: `PROGRAM [0x00 ANSWER-BYTES]`. Without a NUL byte the answers come
//! from a PRNG seeded by the program text, so a plain `.lt` file is a valid
//! input.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let (src, answers) = match data.iter().position(|&b| b == 0) {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &[][..]),
    };
    let Ok(text) = std::str::from_utf8(src) else {
        return;
    };
    lt_fuzz::run_program(text, answers);
});
