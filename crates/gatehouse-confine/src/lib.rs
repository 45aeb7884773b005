//! Confinement (issue 28): what an admitted server may read, write and reach, independent of the
//! mechanism that enforces it, and the pure decisions around it: the declaration and its JSON
//! form, the bubblewrap command line, the egress proxy's reading of a request head, and the bound
//! on how many refusals are audited. No I/O.

mod declaration;
mod flood;
mod plan;
mod proxy;

pub use declaration::*;
pub use flood::*;
pub use plan::*;
pub use proxy::*;
