//! Confinement of stdio servers (issue 28). Being written.

pub(crate) mod proxy;
