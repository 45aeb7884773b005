//! The audit log's retention as the host applies it: the policy's at open, a bundle's longer
//! one as soon as the bundle is installed while the host runs (re-applied when the trust is
//! reloaded, as the durability is), and the user's shorter one never winning over it.

use std::sync::Arc;

use gatehouse_host::ScriptedConsent;
use gatehouse_testkit as kit;
use gatehouse_testkit::bundles;
use serde_json::json;

#[tokio::test]
async fn a_bundle_installed_while_the_host_runs_keeps_the_log_longer() {
    let dir = tempfile::tempdir().unwrap();
    kit::host::write_servers(
        dir.path(),
        &json!({"mcpServers": {"x": {"command": "/nonexistent/x"}}}),
    );
    let policy = dir.path().join("policy.toml");
    std::fs::write(
        &policy,
        gatehouse_policy::policy::DEFAULT_POLICY_TOML
            .replace("retain_days = 180", "retain_days = 30")
            .replace("rotate_mib = 64", "rotate_mib = 2"),
    )
    .unwrap();
    let mut options = kit::host::options(dir.path());
    options.policy = Some(policy);
    let host = kit::host::open(options, Arc::new(ScriptedConsent::new(Vec::new())));
    let retention = host.settings().audit.retention;
    assert_eq!(retention.keep_days, Some(30));
    assert_eq!(retention.set_by, ["policy"]);
    assert_eq!(retention.rotate_mib, 2);

    // The admin installs a bundle that keeps a year; the next admission reloads the trust.
    let mut signed = bundles::signed(json!([]));
    signed["specVersion"] = json!(5);
    signed["audit"] = json!({"retainDays": 365});
    bundles::install(&kit::host::paths(dir.path()).system_trust_roots, &signed);
    host.connect_all().await;
    let settings = host.settings();
    assert_eq!(settings.audit.retention.keep_days, Some(365));
    assert_eq!(settings.audit.retention.set_by, ["test-bundle@1"]);
    // The segment size stays the policy's, and the Settings view's JSON carries it all.
    let value = serde_json::to_value(&settings).unwrap();
    assert_eq!(
        value["audit"]["retention"],
        json!({"keep_days": 365, "set_by": ["test-bundle@1"], "rotate_mib": 2})
    );

    // The bundle goes: the policy's retention applies again.
    std::fs::remove_file(
        kit::host::paths(dir.path())
            .system_trust_roots
            .join("test-bundle.json"),
    )
    .unwrap();
    host.connect_all().await;
    assert_eq!(host.settings().audit.retention.keep_days, Some(30));
    host.shutdown().await;
}
