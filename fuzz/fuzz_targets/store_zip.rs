//! Zips: wheels and `.mcpb` bundles (`gatehouse_store::check_zip`) under small limits, so the
//! fuzzer reaches the entry, size and path limits quickly. Properties (store_invariants.rs):
//! every accepted entry's path is normalised (relative, no `..`, `.` or empty segment, no
//! backslash, NUL or control character), unique, unique ignoring case, and under a directory
//! entry; the files' sizes and count are within the limits; the real limits accept the same
//! entries. Seeds: fuzz/seeds/store_zip (written by fuzz/seeds/make_store_seeds.py).
#![no_main]

mod store_invariants;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    store_invariants::exercise(data, gatehouse_store::check_zip);
});
