//! policies/default.toml and policies/README.md stay in sync: every setting in the file is
//! documented and every documented setting exists, documented defaults written as a single
//! TOML value match the file, and every reason code is documented with its decision.

use std::collections::BTreeMap;
use std::path::Path;

use gatehouse_policy::codes;
use gatehouse_policy::policy::DEFAULT_POLICY_TOML;

fn readme() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../policies/README.md");
    std::fs::read_to_string(path).expect("policies/README.md")
}

/// The lines of one `## ` section.
fn section<'a>(text: &'a str, title: &str) -> Vec<&'a str> {
    text.lines()
        .skip_while(|l| *l != title)
        .skip(1)
        .take_while(|l| !l.starts_with("## "))
        .collect()
}

/// Table rows whose first cell is a single backticked word: (word, the other cells).
fn rows<'a>(lines: &[&'a str]) -> Vec<(&'a str, Vec<&'a str>)> {
    lines
        .iter()
        .filter_map(|line| {
            let cells: Vec<&str> = line
                .strip_prefix('|')?
                .split(" | ")
                .map(str::trim)
                .collect();
            let key = cells[0].strip_prefix('`')?.strip_suffix('`')?;
            (!key.contains('`')).then(|| (key, cells[1..].to_vec()))
        })
        .collect()
}

fn flatten(prefix: &str, table: &toml::Table, out: &mut BTreeMap<String, toml::Value>) {
    for (key, value) in table {
        let name = if prefix.is_empty() {
            key.clone()
        } else {
            format!("{prefix}.{key}")
        };
        match value {
            toml::Value::Table(inner) => flatten(&name, inner, out),
            other => {
                out.insert(name, other.clone());
            }
        }
    }
}

#[test]
fn every_setting_is_documented_and_every_documented_setting_exists() {
    let table: toml::Table = toml::from_str(DEFAULT_POLICY_TOML).unwrap();
    let mut settings = BTreeMap::new();
    flatten("", &table, &mut settings);
    let text = readme();
    let documented: BTreeMap<&str, Vec<&str>> =
        rows(&section(&text, "## Settings")).into_iter().collect();

    let missing: Vec<&String> = settings
        .keys()
        .filter(|k| !documented.contains_key(k.as_str()))
        .collect();
    assert!(
        missing.is_empty(),
        "settings in default.toml but not in README.md: {missing:?}"
    );
    let extra: Vec<&&str> = documented
        .keys()
        .filter(|k| !settings.contains_key(**k))
        .collect();
    assert!(
        extra.is_empty(),
        "settings in README.md but not in default.toml: {extra:?}"
    );

    // Defaults written as one backticked TOML value must be the file's.
    let mut checked = 0;
    for (key, cells) in &documented {
        let default = cells[0];
        let Some(inner) = default.strip_prefix('`').and_then(|d| d.strip_suffix('`')) else {
            continue;
        };
        if inner.contains('`') {
            continue;
        }
        let parsed: toml::Table = toml::from_str(&format!("v = {inner}"))
            .unwrap_or_else(|e| panic!("README default of {key} ({default}) is not TOML: {e}"));
        assert_eq!(parsed["v"], settings[*key], "README default of {key}");
        checked += 1;
    }
    assert!(checked >= 15, "only {checked} defaults checked");
}

#[test]
fn every_reason_code_is_documented_with_its_decision() {
    let text = readme();
    let documented: BTreeMap<&str, Vec<&str>> = rows(&section(&text, "## Reason codes"))
        .into_iter()
        .collect();
    for (code, decision) in codes::ALL {
        let cells = documented
            .get(code)
            .unwrap_or_else(|| panic!("{code} is not documented in policies/README.md"));
        let short = match decision.as_str() {
            "hold_for_elicitation_evidence" => "hold",
            "deny_sensitive_form_elicitation" => "deny form",
            "deny_untrusted_elicitation_url" => "deny URL",
            "deny_token_or_secret_transit" => "deny transit",
            "kill_session_on_elicitation_abuse" => "kill",
            other => panic!("no code leads to {other}"),
        };
        assert_eq!(cells[0], short, "documented decision of {code}");
    }
    for code in documented.keys() {
        assert!(
            codes::decision_of(code).is_some(),
            "README documents unknown code {code}"
        );
    }
}

#[test]
fn every_decision_is_documented() {
    let text = readme();
    let documented: Vec<&str> = rows(&section(&text, "## Decisions"))
        .into_iter()
        .map(|(k, _)| k)
        .collect();
    for decision in [
        "allow_elicitation_with_receipt",
        "hold_for_elicitation_evidence",
        "deny_sensitive_form_elicitation",
        "deny_untrusted_elicitation_url",
        "deny_token_or_secret_transit",
        "kill_session_on_elicitation_abuse",
    ] {
        assert!(
            documented.contains(&decision),
            "{decision} is not documented"
        );
    }
    assert_eq!(documented.len(), 6);
}
