//! The managed settings an admin distributes (MDM, GPO, config management) so that each AI
//! client runs Gatehouse and nothing else: pure generation, no I/O. The CLI's `clients
//! lockdown` writes these files; README.md ("Locking AI clients down") says where each goes.
//!
//! Every file carries [`MARKER`] (a JSON key, a plist key, a `.reg` comment, a README line), so
//! a re-run recognises its own files and updates them, and never overwrites anyone else's.

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::ClientId;
use super::document::serve_args;

/// The text that marks a file as written by `gatehouse clients lockdown`.
pub const MARKER: &str =
    "Written by `gatehouse clients lockdown`; run it again to update this file.";

/// The JSON key (and plist key) that carries [`MARKER`]. Every client reading these files
/// ignores unknown keys (Claude Code, Cursor and the Copilot managed settings say so; the test
/// runs the real Claude Code CLI over them).
pub const MARKER_KEY: &str = "_gatehouse";

/// Where a file goes on one platform, or why it does not go there.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Destinations {
    pub linux: &'static str,
    pub macos: &'static str,
    pub windows: &'static str,
}

/// One file of the lockdown set.
#[derive(Debug, Clone)]
pub struct LockdownFile {
    /// Which client reads it; `None` for README.txt.
    pub client: Option<ClientId>,
    /// Relative to the output directory, `/`-separated.
    pub path: &'static str,
    pub bytes: Vec<u8>,
    /// One line: what it does.
    pub purpose: &'static str,
    pub destinations: Destinations,
}

/// Whether `bytes` (as read from disk) are a file this module wrote: it carries [`MARKER`]. A
/// `.reg` file is UTF-16LE with a byte-order mark, as regedit writes them.
pub fn is_ours(bytes: &[u8]) -> bool {
    let text = match bytes {
        [0xFF, 0xFE, rest @ ..] if rest.len() % 2 == 0 => String::from_utf16_lossy(
            &rest
                .chunks_exact(2)
                .map(|pair| u16::from_le_bytes([pair[0], pair[1]]))
                .collect::<Vec<u16>>(),
        ),
        _ => String::from_utf8_lossy(bytes).into_owned(),
    };
    text.contains(MARKER)
}

/// The whole set for a `gatehouse` executable at `gatehouse` (an absolute path, as every
/// client starts it without a shell or a PATH of the user's choosing).
pub fn files(gatehouse: &str) -> Vec<LockdownFile> {
    let command = |client: ClientId| -> Vec<String> {
        std::iter::once(gatehouse.to_string())
            .chain(serve_args(client).iter().map(|a| a.to_string()))
            .collect()
    };
    let stdio_entry = |client: ClientId| json!({"type": "stdio", "command": gatehouse, "args": serve_args(client)});
    let vscode_allowed = json!([{ "serverCommand": command(ClientId::Vscode) }]);
    let desktop_servers = json!([{
        "name": "gatehouse",
        "command": gatehouse,
        "args": serve_args(ClientId::ClaudeDesktop),
    }]);

    let mut out = vec![
        LockdownFile {
            client: Some(ClientId::ClaudeCode),
            path: "claude_code/managed-mcp.json",
            bytes: json_bytes(json!({
                MARKER_KEY: MARKER,
                "mcpServers": { "gatehouse": stdio_entry(ClientId::ClaudeCode) },
            })),
            purpose: "Claude Code loads only the servers in this file (exclusive control): Gatehouse, as `gatehouse serve --client claude_code`.",
            destinations: Destinations {
                linux: "/etc/claude-code/managed-mcp.json",
                macos: "/Library/Application Support/ClaudeCode/managed-mcp.json",
                windows: r"C:\Program Files\ClaudeCode\managed-mcp.json",
            },
        },
        LockdownFile {
            client: Some(ClientId::ClaudeCode),
            path: "claude_code/managed-settings.json",
            bytes: json_bytes(json!({
                MARKER_KEY: MARKER,
                "allowManagedMcpServersOnly": true,
                "allowedMcpServers": [{ "serverCommand": command(ClientId::ClaudeCode) }],
            })),
            purpose: "Claude Code's managed settings: only this exact command may run as an MCP server, and only the managed allow-list counts (merge these keys into an existing managed-settings.json).",
            destinations: Destinations {
                linux: "/etc/claude-code/managed-settings.json",
                macos: "/Library/Application Support/ClaudeCode/managed-settings.json",
                windows: r"C:\Program Files\ClaudeCode\managed-settings.json",
            },
        },
        LockdownFile {
            client: Some(ClientId::Vscode),
            path: "vscode/managed-settings.json",
            bytes: json_bytes(json!({
                MARKER_KEY: MARKER,
                "allowedMcpServers": vscode_allowed,
            })),
            purpose: "GitHub Copilot's enterprise managed settings (read by VS Code): every MCP server that does not match this exact command is blocked.",
            destinations: Destinations {
                linux: "/etc/github-copilot/managed-settings.json (root-owned)",
                macos: "/Library/Application Support/GitHubCopilot/managed-settings.json (or the .mobileconfig below)",
                windows: r"C:\Program Files\GitHubCopilot\managed-settings.json (or the .reg below)",
            },
        },
        LockdownFile {
            client: Some(ClientId::Vscode),
            path: "vscode/com.github.copilot.mobileconfig",
            bytes: mobileconfig(
                "com.github.copilot",
                "GitHub Copilot (VS Code): Gatehouse only",
                &[("allowedMcpServers", vscode_allowed.to_string())],
            ),
            purpose: "The same allow-list as a macOS configuration profile (managed preferences of com.github.copilot; the value is a JSON string).",
            destinations: Destinations {
                linux: "not used on Linux",
                macos: "install through your MDM (Jamf, Kandji, Intune…)",
                windows: "not used on Windows",
            },
        },
        LockdownFile {
            client: Some(ClientId::Vscode),
            path: "vscode/GitHubCopilot.reg",
            bytes: reg_file(
                r"HKEY_LOCAL_MACHINE\SOFTWARE\Policies\GitHubCopilot",
                &[("allowedMcpServers", vscode_allowed.to_string())],
            ),
            purpose: "The same allow-list as Windows policy (REG_SZ under HKLM\\SOFTWARE\\Policies\\GitHubCopilot).",
            destinations: Destinations {
                linux: "not used on Linux",
                macos: "not used on macOS",
                windows: "import with regedit, a GPO (Registry preference) or Intune",
            },
        },
        LockdownFile {
            client: Some(ClientId::Cursor),
            path: "cursor/permissions.json",
            bytes: json_bytes(json!({
                MARKER_KEY: MARKER,
                "mcpAllowlist": ["gatehouse:*"],
            })),
            purpose: "Cursor's allow-list of MCP tools that run without asking: Gatehouse's only (Gatehouse applies its own approvals); every other server's tool asks each time and the user cannot add to the list.",
            destinations: Destinations {
                linux: "~/.cursor/permissions.json (each user)",
                macos: "~/.cursor/permissions.json (each user)",
                windows: r"%USERPROFILE%\.cursor\permissions.json (each user)",
            },
        },
        LockdownFile {
            client: Some(ClientId::Cursor),
            path: "cursor/mcp.json",
            bytes: json_bytes(json!({
                MARKER_KEY: MARKER,
                "mcpServers": { "gatehouse": {
                    "command": gatehouse,
                    "args": serve_args(ClientId::Cursor),
                } },
            })),
            purpose: "Cursor's global MCP servers: Gatehouse alone (a user can still edit this file; see README).",
            destinations: Destinations {
                linux: "~/.cursor/mcp.json (each user)",
                macos: "~/.cursor/mcp.json (each user)",
                windows: r"%USERPROFILE%\.cursor\mcp.json (each user)",
            },
        },
        LockdownFile {
            client: Some(ClientId::ClaudeDesktop),
            path: "claude_desktop/com.anthropic.claudefordesktop.mobileconfig",
            bytes: mobileconfig(
                "com.anthropic.claudefordesktop",
                "Claude Desktop: Gatehouse only",
                &[
                    ("managedMcpServers", desktop_servers.to_string()),
                    ("isLocalDevMcpEnabled", "false".to_string()),
                ],
            ),
            purpose: "Claude Desktop's managed preferences: Gatehouse as the managed MCP server, and no local MCP servers of the user's own (values are strings, JSON for the list).",
            destinations: Destinations {
                linux: "Claude Desktop has no Linux build",
                macos: "install through your MDM (it lands in /Library/Managed Preferences/)",
                windows: "not used on Windows",
            },
        },
        LockdownFile {
            client: Some(ClientId::ClaudeDesktop),
            path: "claude_desktop/Claude.reg",
            bytes: reg_file(
                r"HKEY_LOCAL_MACHINE\SOFTWARE\Policies\Claude",
                &[
                    ("managedMcpServers", desktop_servers.to_string()),
                    ("isLocalDevMcpEnabled", "false".to_string()),
                ],
            ),
            purpose: "The same managed preferences as Windows policy (REG_SZ under HKLM\\SOFTWARE\\Policies\\Claude).",
            destinations: Destinations {
                linux: "Claude Desktop has no Linux build",
                macos: "not used on macOS",
                windows: "import with regedit, a GPO (Registry preference) or Intune",
            },
        },
    ];
    let readme = readme(gatehouse, &out);
    out.push(LockdownFile {
        client: None,
        path: "README.txt",
        bytes: readme.into_bytes(),
        purpose: "This list: each file and where it goes.",
        destinations: Destinations {
            linux: "keep with the files",
            macos: "keep with the files",
            windows: "keep with the files",
        },
    });
    out
}

fn json_bytes(value: Value) -> Vec<u8> {
    let mut bytes = serde_json::to_vec_pretty(&value).unwrap_or_default();
    bytes.push(b'\n');
    bytes
}

fn readme(gatehouse: &str, files: &[LockdownFile]) -> String {
    let mut text = format!(
        "Gatehouse client lockdown\n{MARKER}\n\nEvery client below is set to run `{gatehouse} serve --client CLIENT` and no other MCP server.\nThe path must be where Gatehouse is installed on every machine that receives these files.\n"
    );
    for file in files {
        text.push_str(&format!(
            "\n{}\n  {}\n  Linux:   {}\n  macOS:   {}\n  Windows: {}\n",
            file.path,
            file.purpose,
            file.destinations.linux,
            file.destinations.macos,
            file.destinations.windows
        ));
    }
    text.push_str(
        "\nWhat this does not stop: a user with admin rights on the machine (they can remove these files or\nprofiles), and AI clients not listed here. Cursor's permissions.json only decides which tools run\nwithout asking; to restrict which servers Cursor connects, use its team admin dashboard.\n",
    );
    text
}

/// A stable UUID (version-4 layout) from `seed`, so a re-run writes the same profile
/// identifiers and an MDM sees an update rather than a new profile.
fn uuid(seed: &str) -> String {
    let digest = Sha256::digest(seed.as_bytes());
    let mut b = [0u8; 16];
    b.copy_from_slice(&digest[..16]);
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let hex = hex::encode_upper(b);
    format!(
        "{}-{}-{}-{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    )
}

fn xml_escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A macOS configuration profile with one payload of managed preferences for `domain`; every
/// value is a string, as both vendors document for these keys.
fn mobileconfig(domain: &str, display: &str, values: &[(&str, String)]) -> Vec<u8> {
    let identifier = format!("dev.gatehouse.lockdown.{domain}");
    let mut keys = format!(
        "\t\t\t<key>{MARKER_KEY}</key>\n\t\t\t<string>{}</string>\n",
        xml_escape(MARKER)
    );
    for (key, value) in values {
        keys.push_str(&format!(
            "\t\t\t<key>{}</key>\n\t\t\t<string>{}</string>\n",
            xml_escape(key),
            xml_escape(value)
        ));
    }
    let seed: String = values.iter().map(|(k, v)| format!("{k}={v};")).collect();
    format!(
        r#"<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
<plist version="1.0">
<dict>
	<key>PayloadContent</key>
	<array>
		<dict>
{keys}			<key>PayloadDisplayName</key>
			<string>{display}</string>
			<key>PayloadIdentifier</key>
			<string>{identifier}.settings</string>
			<key>PayloadType</key>
			<string>{domain}</string>
			<key>PayloadUUID</key>
			<string>{payload_uuid}</string>
			<key>PayloadVersion</key>
			<integer>1</integer>
		</dict>
	</array>
	<key>PayloadDescription</key>
	<string>{marker}</string>
	<key>PayloadDisplayName</key>
	<string>{display}</string>
	<key>PayloadIdentifier</key>
	<string>{identifier}</string>
	<key>PayloadScope</key>
	<string>System</string>
	<key>PayloadType</key>
	<string>Configuration</string>
	<key>PayloadUUID</key>
	<string>{profile_uuid}</string>
	<key>PayloadVersion</key>
	<integer>1</integer>
</dict>
</plist>
"#,
        display = xml_escape(display),
        identifier = xml_escape(&identifier),
        domain = xml_escape(domain),
        marker = xml_escape(MARKER),
        payload_uuid = uuid(&format!("payload:{domain}:{seed}")),
        profile_uuid = uuid(&format!("profile:{domain}")),
    )
    .into_bytes()
}

/// A regedit file (version 5.00: UTF-16LE with a byte-order mark and CRLF line ends, as regedit
/// itself writes them, so a non-ASCII install path survives) setting REG_SZ values under `key`.
fn reg_file(key: &str, values: &[(&str, String)]) -> Vec<u8> {
    let quote = |s: &str| s.replace('\\', "\\\\").replace('"', "\\\"");
    let mut text = format!("Windows Registry Editor Version 5.00\r\n\r\n; {MARKER}\r\n[{key}]\r\n");
    for (name, value) in values {
        text.push_str(&format!("\"{}\"=\"{}\"\r\n", quote(name), quote(value)));
    }
    let mut bytes = vec![0xFF, 0xFE];
    for unit in text.encode_utf16() {
        bytes.extend_from_slice(&unit.to_le_bytes());
    }
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_file_carries_the_marker_and_a_foreign_one_does_not() {
        for file in files(r#"/opt/gate "house"/<&>/gatehouse"#) {
            assert!(is_ours(&file.bytes), "{}", file.path);
        }
        assert!(!is_ours(b"{\"mcpServers\": {}}"));
        assert!(!is_ours(&[0xFF, 0xFE, 0x41]));
    }

    #[test]
    fn uuids_are_stable_and_well_formed() {
        let a = uuid("x");
        assert_eq!(a, uuid("x"));
        assert_ne!(a, uuid("y"));
        assert_eq!(a.len(), 36);
        assert_eq!(&a[14..15], "4");
    }
}
