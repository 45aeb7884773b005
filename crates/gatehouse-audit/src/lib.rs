//! Placeholder: the audit log is being written.
