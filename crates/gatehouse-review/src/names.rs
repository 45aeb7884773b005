//! The names the gateway offers other servers' tools under (`SERVER__TOOL`), so a definition
//! naming another server's tool that way is found too. A copy of `gatehouse-gateway`'s rule
//! (`names::offered_name`) because this crate is pure and below the gateway; a test in the
//! CLI's review tests holds the two equal.

use sha2::{Digest, Sha256};

const MAX_PLAIN_SERVER: usize = 30;
const MAX_NAME: usize = 64;
const SEPARATOR: &str = "__";

fn allowed(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '-'
}

fn substitute(s: &str) -> String {
    s.chars()
        .map(|c| if allowed(c) { c } else { '_' })
        .collect()
}

fn hash_hex(s: &str, digits: usize) -> String {
    let digest = Sha256::digest(s.as_bytes());
    let mut hex = hex::encode(digest);
    hex.truncate(digits);
    hex
}

fn server_part(server: &str) -> String {
    let plain = !server.is_empty()
        && server.chars().all(allowed)
        && !server.contains(SEPARATOR)
        && !server.ends_with('_')
        && server.len() <= MAX_PLAIN_SERVER;
    if plain {
        return server.to_string();
    }
    let mut cut: String = substitute(server).chars().take(20).collect();
    cut.push('_');
    cut.push_str(&hash_hex(server, 6));
    cut
}

fn tool_part(tool: &str, room: usize) -> String {
    let plain = !tool.is_empty() && tool.chars().all(allowed) && tool.len() <= room;
    if plain {
        return tool.to_string();
    }
    let mut cut: String = substitute(tool)
        .chars()
        .take(room.saturating_sub(9))
        .collect();
    cut.push('_');
    cut.push_str(&hash_hex(tool, 8));
    cut
}

/// The name the gateway offers `tool` of `server` under (`SERVER__TOOL`).
pub fn offered_name(server: &str, tool: &str) -> String {
    let server = server_part(server);
    let room = MAX_NAME.saturating_sub(server.len() + SEPARATOR.len());
    format!("{server}{SEPARATOR}{}", tool_part(tool, room))
}
