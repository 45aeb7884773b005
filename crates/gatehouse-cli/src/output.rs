//! Printing: human text on stdout, diagnostics on stderr, one JSON document with --json.
//!
//! Server-supplied text is printed as data: control characters are escaped so a server
//! cannot move the cursor, recolour the terminal or fake a line of ours.

use std::io::{IsTerminal, Write};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use gatehouse_host::{Direction, HostEvent, ImportReport, ServerSummary, TrafficEntry};
use rmcp::model::{CallToolResult, Tool};
use serde_json::{Value, json};

use crate::failure::Failure;

pub fn print_json(value: &Value) {
    println!(
        "{}",
        serde_json::to_string_pretty(value).expect("JSON serializes")
    );
}

pub fn print_failure(failure: &Failure, json: bool) {
    if json {
        print_json(&json!({"error": {"code": failure.code, "message": failure.message}}));
    }
    eprintln!("gatehouse: error: {}", failure.message);
}

pub fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Escapes control characters (keeping newlines and tabs) in server-supplied text.
pub fn safe(text: &str) -> String {
    text.chars()
        .flat_map(|c| {
            if c.is_control() && c != '\n' && c != '\t' {
                c.escape_default().collect::<Vec<_>>()
            } else {
                vec![c]
            }
        })
        .collect()
}

/// A name as data: control characters and invisible format characters (zero-width, bidi
/// controls, BOM) escaped, so a look-alike tool name shows what it really is.
pub fn safe_name(text: &str) -> String {
    text.chars()
        .flat_map(|c| {
            if c.is_control() {
                c.escape_unicode().collect::<Vec<_>>()
            } else if gatehouse_review::is_invisible(c) {
                gatehouse_review::escape(c.encode_utf8(&mut [0; 4]))
                    .chars()
                    .collect()
            } else {
                vec![c]
            }
        })
        .collect()
}

/// One line of a definition's text (title, description): invisible and direction-changing
/// characters shown as `\u{XXXX}` ([`gatehouse_review::escape`]), control characters and
/// newlines escaped.
pub fn shown(text: &str) -> String {
    safe_line(&gatehouse_review::escape(text))
}

/// A definition's findings, one line each under the item.
pub fn print_findings(findings: &[gatehouse_review::Finding], indent: &str) {
    for finding in findings {
        println!("{indent}{}", finding_line(finding));
    }
}

/// One finding as a line: `! high model_instruction description: "…" (rule: what it saw)`.
pub fn finding_line(finding: &gatehouse_review::Finding) -> String {
    format!(
        "! {} {} {}: \"{}\" ({})",
        finding.severity.as_str(),
        finding.kind.code(),
        safe_line(&finding.field),
        safe_line(&finding.excerpt),
        safe_line(&finding.detail)
    )
}

/// The admission verdict, first thing after connecting.
pub fn print_verdict(headline: &str, detail: &str, verdict: &Value) {
    println!("admission: {}", safe_line(headline));
    if !detail.is_empty() {
        println!("  detail          {}", safe_line(detail));
    }
    let text = |key: &str| verdict.get(key).and_then(Value::as_str);
    if let Some(origin) = text("origin") {
        println!("  origin          {}", safe_line(origin));
    }
    if let Some(command) = text("command") {
        println!("  command         {}", safe_line(command));
    }
    // Whose word the identity is: an admins' vouch is never shown as the server's own.
    let identity = &verdict["identity"];
    if identity["attested_by"] == "vouched"
        && let Some(bundle) = identity["bundle"].as_str()
    {
        println!(
            "  identity        vouched for by {}; the server publishes no attestation",
            safe_line(bundle)
        );
    }
    println!(
        "  posture         {}",
        text("posture").unwrap_or("deny-by-default")
    );
    // What the server can read, write and reach, as admission decided it.
    if let Some(line) = crate::confinement_text::from_verdict(verdict)
        .as_ref()
        .and_then(crate::confinement_text::line)
    {
        println!("  confinement     {}", safe_line(&line));
    }
    let claimed = &verdict["claimed"];
    if let Some(publisher) = claimed.get("publisher").and_then(Value::as_str) {
        println!(
            "  publisher       {} (claimed in the attestation, not verified)",
            safe_line(publisher)
        );
    }
}

/// Tools the caller cannot use: hidden by the allow-list, or blocked by a pin change.
pub fn print_gated(
    hidden: &[Reviewed<Tool>],
    blocked: &[(
        Reviewed<Tool>,
        gatehouse_attest::gate::GateReason,
        String,
        String,
    )],
) {
    print_withheld(
        hidden,
        blocked,
        |tool| &tool.item.name,
        "callers cannot use them",
    );
}

/// Prompts that cannot be got: hidden by the allow-list, or blocked by a pin change.
pub fn print_gated_prompts(
    hidden: &[Reviewed<rmcp::model::Prompt>],
    blocked: &[(
        Reviewed<rmcp::model::Prompt>,
        gatehouse_attest::gate::GateReason,
        String,
        String,
    )],
) {
    print_withheld(
        hidden,
        blocked,
        |prompt| &prompt.item.name,
        "getting them is refused",
    );
}

fn print_withheld<T>(
    hidden: &[Reviewed<T>],
    blocked: &[(
        Reviewed<T>,
        gatehouse_attest::gate::GateReason,
        String,
        String,
    )],
    name: impl Fn(&Reviewed<T>) -> &str,
    refused: &str,
) {
    if !hidden.is_empty() {
        println!("\nnot admitted (hidden by the allow-list; {refused}):");
        for item in hidden {
            println!("  {}", safe_name(name(item)));
            print_findings(&item.findings, "    ");
        }
    }
    if !blocked.is_empty() {
        println!("\nblocked (definition changed since it was pinned; re-approve to use):");
        for (item, reason, expected, actual) in blocked {
            println!(
                "  {}  {}: pinned {expected}, now {actual}",
                safe_name(name(item)),
                reason.as_str()
            );
            print_findings(&item.findings, "    ");
        }
    }
}

/// One line of server text: newlines escaped too.
pub fn safe_line(text: &str) -> String {
    safe(text).replace('\n', "\\n")
}

pub fn print_summary(name: &str, summary: &ServerSummary, tools: usize) {
    println!(
        "connected to {name} ({} {})",
        summary.transport,
        safe_line(&summary.target)
    );
    println!(
        "  protocol   {} (era {})",
        summary.protocol_version, summary.era
    );
    let claimed = match (&summary.name, &summary.version) {
        (Some(n), Some(v)) => format!("{} {}", safe_line(n), safe_line(v)),
        (Some(n), None) => safe_line(n),
        _ => "(none given)".into(),
    };
    println!("  server     {claimed} (serverInfo: claimed by the server, not verified)");
    println!("  tools      {tools} listed");
    if let Some(instructions) = &summary.instructions {
        println!(
            "  instructions (from the server): {}",
            safe_line(instructions)
        );
    }
}

pub fn print_tools(tools: &[Reviewed<Tool>]) {
    if tools.is_empty() {
        println!("(no tools)");
        return;
    }
    let width = tools
        .iter()
        .map(|t| safe_name(&t.item.name).chars().count())
        .max()
        .unwrap_or(0)
        .min(40);
    for reviewed in tools {
        let tool = &reviewed.item;
        let description = tool
            .description
            .as_deref()
            .and_then(|d| d.lines().find(|l| !l.trim().is_empty()))
            .unwrap_or("");
        println!(
            "{:width$}  {}",
            safe_name(&tool.name),
            shown(description.trim())
        );
        print_findings(&reviewed.findings, "  ");
    }
}

/// One line per elicitation a call caused: decision, action, receipt.
pub fn print_elicitations(records: &[gatehouse_host::ElicitationRecord]) {
    for r in records {
        let what = match (&r.url, &r.input_key, &r.elicitation_id) {
            (Some(url), _, _) => format!(" {}", safe_line(&url.full)),
            _ => String::new(),
        };
        let why = if r.reasons.is_empty() {
            String::new()
        } else {
            format!(
                " ({})",
                r.reasons
                    .iter()
                    .map(|reason| format!("{}: {}", reason.code, safe_line(&reason.detail)))
                    .collect::<Vec<_>>()
                    .join("; ")
            )
        };
        eprintln!(
            "elicitation #{} ({}{what}): {}{why} → answered {} · receipt {}{}",
            r.prompt_id,
            r.mode,
            r.decision,
            r.action,
            r.receipt_id,
            r.note
                .as_deref()
                .map(|n| format!(" · {}", safe_line(n)))
                .unwrap_or_default()
        );
    }
}

pub fn print_result(result: &CallToolResult) {
    for block in &result.content {
        match block.as_text() {
            Some(text) => println!("{}", safe(&text.text)),
            None => println!("{}", serde_json::to_string(block).unwrap_or_default()),
        }
    }
    if let Some(structured) = &result.structured_content
        && result.content.is_empty()
    {
        println!(
            "{}",
            serde_json::to_string_pretty(structured).unwrap_or_default()
        );
    }
}

pub fn print_event(event: &HostEvent) {
    match event {
        HostEvent::Progress {
            progress,
            total,
            message,
            ..
        } => {
            let of = total.map(|t| format!("/{t}")).unwrap_or_default();
            let message = message
                .as_deref()
                .map(|m| format!(" {}", safe_line(m)))
                .unwrap_or_default();
            eprintln!("progress {progress}{of}{message}");
        }
        HostEvent::ToolsChanged { server } => eprintln!("{server}: the tool list changed"),
        HostEvent::ResourceUpdated { server, uri } => {
            eprintln!("{server}: resource updated {}", safe_line(uri))
        }
        HostEvent::ContextChanged { server } => {
            eprintln!("{server}: the prompt or resource list changed")
        }
        HostEvent::Elicitation {
            server,
            mode,
            message,
            url,
            action,
            reason,
        } => {
            let url = url
                .as_deref()
                .map(|u| format!(" url={}", safe_line(u)))
                .unwrap_or_default();
            let mode = mode.map_or("unknown", gatehouse_policy::Mode::as_str);
            eprintln!(
                "{server}: {mode} elicitation {:?}{url}: answered {action} ({reason})",
                safe_line(message)
            );
        }
        HostEvent::ElicitationRefused { server, detail } => {
            eprintln!("{server}: elicitation refused: {detail}")
        }
        HostEvent::Log {
            server,
            level,
            data,
        } => {
            eprintln!("{server} log [{level}]: {}", safe_line(&data.to_string()));
        }
        HostEvent::Unhandled { server, method } => {
            eprintln!("{server}: ignored notification {}", safe_line(method))
        }
    }
}

pub fn print_traffic(entries: &[TrafficEntry]) {
    for entry in entries {
        let arrow = match entry.direction {
            Direction::Out => "->",
            Direction::In => "<-",
        };
        let era = entry.era.map(|e| e.as_str()).unwrap_or("-");
        println!(
            "#{} {} {era} {} {arrow} {}",
            entry.seq, entry.time, entry.server, entry.message
        );
    }
}

pub fn print_servers(path: &Path, rows: &[Value]) {
    if rows.is_empty() {
        println!(
            "no servers in {}; add one with `gatehouse servers add NAME --stdio 'CMD'` or --url URL",
            path.display()
        );
        return;
    }
    for row in rows {
        println!(
            "{}  {}  {}",
            row["name"].as_str().unwrap_or_default(),
            row["transport"].as_str().unwrap_or_default(),
            safe_line(row["target"].as_str().unwrap_or_default())
        );
        if let Some(verdict) = row["verdict"].as_str() {
            println!("    {}", safe_line(verdict));
        }
        if let Some(package) = row.get("package").filter(|p| p.is_object()) {
            println!("    {}", safe_line(&package_line(package)));
        }
        if let Some(line) = crate::confinement_text::from_verdict(row)
            .as_ref()
            .and_then(crate::confinement_text::line)
        {
            println!("    {}", safe_line(&line));
        }
    }
}

/// A package server's binding in one line: `npm NAME VERSION · 104 packages · tree verified
/// (1234 files) · your args: DIR`.
pub fn package_line(package: &Value) -> String {
    let text = |field: &str| package[field].as_str().unwrap_or_default();
    let count = |field: &str| package[field].as_u64().unwrap_or_default();
    let args: Vec<&str> = package["user_args"]
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut line = format!(
        "{} {} {} · {} packages · tree verified ({} files)",
        text("ecosystem"),
        text("package"),
        text("version"),
        count("closure"),
        count("files_verified"),
    );
    if !args.is_empty() {
        line.push_str(&format!(" · your args: {}", args.join(" ")));
    }
    line
}

pub fn print_import(source: &Path, into: &Path, report: &ImportReport) {
    println!(
        "imported {} server(s) from {} into {}",
        report.imported.len(),
        source.display(),
        into.display()
    );
    for name in &report.imported {
        println!("  + {name}");
    }
    for name in &report.skipped {
        println!("  = {name} (exists; use --replace to overwrite)");
    }
    for moved in &report.secrets_moved {
        println!("  moved to the keychain: {moved}");
    }
    print_held_back(report);
    for warning in &report.warnings {
        eprintln!("warning: {warning}");
    }
}

/// The imported servers that are packages, and what each needs: bound (runs from the store),
/// pinnable (`servers pin`), or an admin's binding.
pub fn package_states_json(states: &[(String, gatehouse_host::host::PackageState)]) -> Value {
    Value::Array(
        states
            .iter()
            .map(|(name, state)| serde_json::json!({"name": name, "state": state}))
            .collect(),
    )
}

pub fn print_package_states(states: &[(String, gatehouse_host::host::PackageState)]) {
    use gatehouse_host::host::PackageState;
    for (name, state) in states {
        let what = match state {
            PackageState::PackageBound => "package-bound: runs from Gatehouse's store".to_string(),
            PackageState::PinnedByYou => "pinned by you: runs from Gatehouse's store".to_string(),
            PackageState::CanBePinned => format!(
                "a package no bundle binds: refused until pinned; `gatehouse servers pin {name}` pins it"
            ),
            PackageState::AskYourAdmin => {
                "a package no bundle binds: refused until your admin binds it".to_string()
            }
            PackageState::Refused => "a bound package, refused as configured".to_string(),
        };
        println!("  {name}: {what}");
    }
}

/// The entries an import held back (quarantined, with their exact settings) or refused.
pub fn print_held_back(report: &ImportReport) {
    for held in &report.quarantined {
        println!(
            "  ! {} (not imported: it sets what the server runs; check, then import again with --allow-launch-settings {}):",
            held.name, held.name
        );
        for setting in &held.settings {
            println!("      {setting}");
        }
    }
    for refused in &report.refused {
        println!(
            "  x {} (refused, {}): {}",
            refused.name,
            refused.code.as_str(),
            refused.detail
        );
    }
}

/// A spinner on stderr for slow connects, only when stderr is a terminal and output is not
/// JSON. It appears after a short delay so fast connects print nothing.
pub struct Spinner {
    done: Arc<AtomicBool>,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl Spinner {
    pub fn start(label: &str, json: bool) -> Spinner {
        let done = Arc::new(AtomicBool::new(false));
        if json || !std::io::stderr().is_terminal() {
            return Spinner { done, task: None };
        }
        let flag = done.clone();
        let label = label.to_string();
        let task = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(300)).await;
            let frames = ['|', '/', '-', '\\'];
            let mut i = 0;
            while !flag.load(Ordering::SeqCst) {
                eprint!("\r{} {label}…", frames[i % frames.len()]);
                let _ = std::io::stderr().flush();
                i += 1;
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        });
        Spinner {
            done,
            task: Some(task),
        }
    }

    pub fn stop(self) {
        self.done.store(true, Ordering::SeqCst);
        if let Some(task) = self.task {
            let finished = task.is_finished();
            task.abort();
            if !finished {
                // Clear the spinner's line.
                eprint!("\r\x1b[2K");
            }
        }
    }
}

/// How many bytes base64 data decodes to (the host checked it is strict base64).
pub fn base64_size(data: &str) -> usize {
    let padding = data.bytes().rev().take_while(|&b| b == b'=').count();
    (data.len() / 4 * 3).saturating_sub(padding)
}

/// Resources and templates callers may read: URI, title (or name), MIME type.
pub fn print_resources(
    resources: &[Reviewed<rmcp::model::Resource>],
    templates: &[Reviewed<rmcp::model::ResourceTemplate>],
) {
    if resources.is_empty() && templates.is_empty() {
        println!("(no resources)");
        return;
    }
    let row = |uri: &str, title: Option<&str>, name: &str, mime: Option<&str>, width: usize| {
        println!(
            "{:width$}  {}  {}",
            safe_name(uri),
            shown(title.unwrap_or(name)),
            safe_line(mime.unwrap_or("(no type given)"))
        );
    };
    let width = |uris: &mut dyn Iterator<Item = &str>| {
        uris.map(|u| u.chars().count()).max().unwrap_or(0).min(50)
    };
    if resources.is_empty() {
        println!("(no resources)");
    }
    let w = width(&mut resources.iter().map(|r| r.item.uri.as_str()));
    for reviewed in resources {
        let r = &reviewed.item;
        row(
            &r.uri,
            r.title.as_deref(),
            &r.name,
            r.mime_type.as_deref(),
            w,
        );
        print_findings(&reviewed.findings, "  ");
    }
    if !templates.is_empty() {
        println!("\ntemplates (read with --template URI_TEMPLATE --var NAME=VALUE):");
        let w = width(&mut templates.iter().map(|t| t.item.uri_template.as_str()));
        for reviewed in templates {
            let t = &reviewed.item;
            print!("  ");
            row(
                &t.uri_template,
                t.title.as_deref(),
                &t.name,
                t.mime_type.as_deref(),
                w,
            );
            print_findings(&reviewed.findings, "    ");
        }
    }
}

/// Resources and templates the allow-list hides: (URI or URI template, name, is a template,
/// why).
pub fn print_hidden_resources(
    hidden: &[(
        String,
        String,
        bool,
        gatehouse_attest::gate::GateReason,
        Vec<gatehouse_review::Finding>,
    )],
) {
    if hidden.is_empty() {
        return;
    }
    println!("\nnot admitted (hidden by the allow-list; reading them is refused):");
    for (uri, _name, template, reason, findings) in hidden {
        let kind = if *template { " (template)" } else { "" };
        println!("  {}{kind}  {}", safe_name(uri), reason.as_str());
        print_findings(findings, "    ");
    }
}

/// Prompts callers may get, each with its arguments.
pub fn print_prompts(prompts: &[Reviewed<rmcp::model::Prompt>]) {
    if prompts.is_empty() {
        println!("(no prompts)");
        return;
    }
    let width = prompts
        .iter()
        .map(|p| safe_name(&p.item.name).chars().count())
        .max()
        .unwrap_or(0)
        .min(40);
    for reviewed in prompts {
        let prompt = &reviewed.item;
        let description = prompt
            .description
            .as_deref()
            .and_then(|d| d.lines().find(|l| !l.trim().is_empty()))
            .unwrap_or("");
        println!(
            "{:width$}  {}",
            safe_name(&prompt.name),
            shown(description.trim())
        );
        let arguments: Vec<(String, String)> = prompt
            .arguments
            .iter()
            .flatten()
            .map(|argument| {
                let required = if argument.required == Some(true) {
                    " (required)"
                } else {
                    ""
                };
                let description = argument.description.as_deref().unwrap_or("");
                (
                    format!("{}{required}", safe_name(&argument.name)),
                    shown(description.trim()),
                )
            })
            .collect();
        let column = arguments
            .iter()
            .map(|(name, _)| name.chars().count())
            .max()
            .unwrap_or(0)
            .min(40);
        for (name, description) in &arguments {
            println!("    {name:column$}  {description}");
        }
        print_findings(&reviewed.findings, "  ");
    }
}

/// One line for content that is not printed: what it is and how big.
fn describe_blob(display: &gatehouse_host::content::Display, claimed: Option<&str>) -> String {
    use gatehouse_host::content::Display;
    match display {
        Display::Image { mime, base64 } => format!("{mime}, {} bytes", base64_size(base64)),
        Display::Binary { size, note, .. } => match note {
            Some(note) => format!("binary data, {size} bytes; {}", safe_line(note)),
            None => format!(
                "{}, {size} bytes",
                safe_line(claimed.unwrap_or("binary data"))
            ),
        },
        Display::Text { text } => format!("text, {} bytes", text.len()),
    }
}

/// A resource's contents: text as text (control characters escaped), images and binary data
/// as one line each, never their bytes. `saved` is the item `--out` wrote, and where.
pub fn print_contents(
    contents: &[gatehouse_host::content::ContentView],
    saved: Option<(usize, &Path)>,
) {
    use gatehouse_host::content::Display;
    if contents.is_empty() {
        println!("(no content)");
    }
    for (index, item) in contents.iter().enumerate() {
        let uri = safe_name(&item.uri);
        let saved_here = saved.filter(|(i, _)| *i == index).map(|(_, path)| path);
        match (&item.display, saved_here) {
            (Display::Text { text }, None) => {
                if contents.len() > 1 {
                    println!(
                        "--- {uri} ({}) ---",
                        safe_line(item.mime.as_deref().unwrap_or("text"))
                    );
                }
                let text = safe(text);
                if text.ends_with('\n') {
                    print!("{text}");
                } else {
                    println!("{text}");
                }
            }
            (display, None) => println!(
                "{uri}: {} (use --out FILE to save)",
                describe_blob(display, item.mime.as_deref())
            ),
            (display, Some(path)) => println!(
                "{uri}: {} (saved to {})",
                describe_blob(display, item.mime.as_deref()),
                path.display()
            ),
        }
    }
}

/// A prompt's messages as `role: text`; images and binary data as a one-line description.
pub fn print_messages(messages: &[gatehouse_host::content::MessageView]) {
    use gatehouse_host::content::Display;
    if messages.is_empty() {
        println!("(no messages)");
    }
    for message in messages {
        let role = safe_line(&message.role);
        let resource = message
            .uri
            .as_deref()
            .map(|uri| format!("[resource {}] ", safe_name(uri)))
            .unwrap_or_default();
        match &message.display {
            Display::Text { text } => {
                let text = safe(text);
                let text = text.strip_suffix('\n').unwrap_or(&text);
                println!("{role}: {resource}{text}");
            }
            other => println!(
                "{role}: {resource}[{}, not shown]",
                describe_blob(other, None)
            ),
        }
    }
}

/// An item with its definition review's findings. In JSON only the item, exactly as listed
/// (a pin is computed from it); the findings go in the listing's own `findings`.
pub struct Reviewed<T> {
    pub item: T,
    pub findings: Vec<gatehouse_review::Finding>,
}

impl<T: serde::Serialize> serde::Serialize for Reviewed<T> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.item.serialize(serializer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_from_servers_are_escaped() {
        assert_eq!(safe("ok\x1b[31mred\x07"), "ok\\u{1b}[31mred\\u{7}");
        assert_eq!(safe("line1\nline2\tx"), "line1\nline2\tx");
        assert_eq!(safe_line("a\nb"), "a\\nb");
    }
}
