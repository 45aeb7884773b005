//! The per-server egress proxy. Being written.
