//! The in-sandbox init. Being written.
fn main() {}
