//! `trust`: the loaded trust-root bundles and the posture.

use gatehouse_host::BundleSource;
use serde_json::json;

use crate::commands::{Context, load_trust};
use crate::failure::Failure;
use crate::output;

pub fn run(context: &Context) -> Result<u8, Failure> {
    let trust = load_trust(context)?;
    let bundles = trust.summaries();
    if context.json {
        output::print_json(&json!({
            "posture": trust.posture(),
            "posture_reason": trust.posture_reason(),
            "locked_by": trust.locked_by(),
            "bundles": bundles,
            "problems": trust.problems(),
        }));
    } else {
        println!("posture: {} ({})", trust.posture(), trust.posture_reason());
        if bundles.is_empty() {
            println!("no trust-root bundles loaded");
        }
        for b in &bundles {
            let demo = if b.source == BundleSource::Demo {
                " [DEMO]"
            } else {
                ""
            };
            println!(
                "  {}{demo}  {:?}, expires {}, {}{}, servers: {}",
                b.bundle,
                b.source,
                b.expires,
                b.posture,
                if b.locked { ", locked" } else { "" },
                b.servers.join(", ")
            );
        }
        for p in trust.problems() {
            println!("  not loaded ({}): {}", p.code, p.message);
        }
    }
    Ok(0)
}
