//! Confinement (issue 28): what an admitted server may read, write and reach, independent of the
//! mechanism that enforces it, and the pure decisions around it. Being written.
