//! The two MCP protocol eras Gatehouse speaks, and how one is chosen.

use std::fmt;
use std::str::FromStr;

use rmcp::model::ProtocolVersion;

/// A protocol era: a dated MCP revision with its own lifecycle.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum Era {
    /// `2025-11-25`: `initialize` handshake, sessions, server-sent `elicitation/create`.
    #[serde(rename = "2025-11-25")]
    V2025_11_25,
    /// `2026-07-28`: `server/discover`, per-request `_meta`, MRTR (`input_required`).
    #[serde(rename = "2026-07-28")]
    V2026_07_28,
}

impl Era {
    pub const ALL: [Era; 2] = [Era::V2025_11_25, Era::V2026_07_28];

    pub fn as_str(self) -> &'static str {
        match self {
            Era::V2025_11_25 => "2025-11-25",
            Era::V2026_07_28 => "2026-07-28",
        }
    }

    pub fn protocol_version(self) -> ProtocolVersion {
        match self {
            Era::V2025_11_25 => ProtocolVersion::V_2025_11_25,
            Era::V2026_07_28 => ProtocolVersion::V_2026_07_28,
        }
    }

    /// The era a negotiated protocol version belongs to. Versions before 2025-11-25 share its
    /// lifecycle (`initialize`), so they are reported as that era.
    pub fn of(version: &ProtocolVersion) -> Era {
        if *version >= ProtocolVersion::V_2026_07_28 {
            Era::V2026_07_28
        } else {
            Era::V2025_11_25
        }
    }
}

impl fmt::Display for Era {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Era {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Era::ALL
            .into_iter()
            .find(|era| era.as_str() == s)
            .ok_or_else(|| format!("unknown protocol era {s:?}: use 2025-11-25 or 2026-07-28"))
    }
}

/// How the era of a connection is chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum EraPreference {
    /// Try 2026-07-28 (`server/discover`); fall back to 2025-11-25 `initialize` when the server
    /// answers like a legacy server.
    #[default]
    Auto,
    /// Speak only this era; a server that does not speak it is a connection error.
    Only(Era),
}

impl FromStr for EraPreference {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s == "auto" {
            return Ok(EraPreference::Auto);
        }
        s.parse::<Era>()
            .map(EraPreference::Only)
            .map_err(|_| format!("unknown protocol era {s:?}: use auto, 2025-11-25 or 2026-07-28"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_both_eras_and_auto_and_refuses_others() {
        assert_eq!("2025-11-25".parse::<Era>(), Ok(Era::V2025_11_25));
        assert_eq!("2026-07-28".parse::<Era>(), Ok(Era::V2026_07_28));
        assert_eq!("auto".parse::<EraPreference>(), Ok(EraPreference::Auto));
        assert!(
            "2025-06-18"
                .parse::<Era>()
                .unwrap_err()
                .contains("2025-06-18")
        );
        assert!("latest".parse::<EraPreference>().is_err());
    }

    #[test]
    fn older_versions_belong_to_the_initialize_era() {
        assert_eq!(Era::of(&ProtocolVersion::V_2025_06_18), Era::V2025_11_25);
        assert_eq!(Era::of(&ProtocolVersion::V_2025_11_25), Era::V2025_11_25);
        assert_eq!(Era::of(&ProtocolVersion::V_2026_07_28), Era::V2026_07_28);
    }
}
