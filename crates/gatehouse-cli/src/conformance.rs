//! `gatehouse conformance URL`: the client the official MCP conformance suite drives.

use crate::commands::{Context, Failure};

pub async fn run(_context: &Context, _url: &str) -> Result<u8, Failure> {
    Err(Failure::usage("conformance: scenario logic pending"))
}
