//! What `bundle add-server --from-registry` and `--from-client` share: proposals listed, and
//! the ones named with `--keep` written, each through `add_server::run` with exactly one kind
//! set (so an entry is written by one code path per kind). Secrets are only ever named.

use std::path::PathBuf;

use gatehouse_host::ErrorCode;
use serde_json::{Value, json};

use crate::cli::AddServerArgs;
use crate::commands::{Context, report};
use crate::failure::Failure;

/// What one proposal binds, as `add-server` takes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// `NAME@VERSION`.
    Npm(String),
    /// `NAME==VERSION`.
    Pypi(String),
    /// A `.mcpb` on this machine.
    McpbFile(PathBuf),
    /// A `.mcpb` to download and check against `sha256` before anything else.
    McpbUrl { url: String, sha256: String },
    /// `'CMD ARGS'`.
    Stdio(String),
    /// A remote endpoint, vouched for.
    Url(String),
}

impl Target {
    pub fn kind(&self) -> &'static str {
        match self {
            Target::Npm(_) => "npm",
            Target::Pypi(_) => "pypi",
            Target::McpbFile(_) | Target::McpbUrl { .. } => "mcpb",
            Target::Stdio(_) => "stdio",
            Target::Url(_) => "url",
        }
    }

    fn binds(&self) -> String {
        match self {
            Target::Npm(s) | Target::Pypi(s) | Target::Stdio(s) | Target::Url(s) => s.clone(),
            Target::McpbFile(p) => p.display().to_string(),
            Target::McpbUrl { url, sha256 } => format!("{url} (SHA-256 {sha256})"),
        }
    }
}

/// A proposal as listed: what it binds, with which arguments, and what it needs.
#[derive(Debug, Clone)]
pub struct Proposal {
    /// What `--keep` names; `[a-z0-9-]`, unique.
    pub name: String,
    pub target: Target,
    pub entry: Option<String>,
    pub args: Vec<String>,
    pub user_args: Vec<String>,
    /// Names of secrets the server needs: keychain references, never written.
    pub secrets: Vec<String>,
    /// Other settings, `NAME` or `NAME=DEFAULT`: reported, never written.
    pub settings: Vec<String>,
    pub notes: Vec<String>,
    /// Why it cannot be written: the stable code and the sentence.
    pub refused: Option<(ErrorCode, String)>,
}

impl Proposal {
    pub fn new(name: String, target: Target) -> Proposal {
        Proposal {
            name,
            target,
            entry: None,
            args: Vec::new(),
            user_args: Vec::new(),
            secrets: Vec::new(),
            settings: Vec::new(),
            notes: Vec::new(),
            refused: None,
        }
    }

    fn to_json(&self, prefix: &str) -> Value {
        json!({
            "name": self.name,
            "id": id(prefix, &self.name),
            "kind": self.target.kind(),
            "binds": self.target.binds(),
            "entry": self.entry,
            "args": self.args,
            "user_args": self.user_args,
            "secrets": self.secrets.iter().map(|s| json!({
                "name": s, "set_with": format!("gatehouse secret set {s}"),
            })).collect::<Vec<_>>(),
            "settings": self.settings,
            "notes": self.notes,
            "refused": self.refused.as_ref().map(|(code, message)| json!({"code": code, "message": message})),
        })
    }

    fn to_text(&self, prefix: &str) -> String {
        let mut text = format!(
            "  {} [{}] {} -> {}",
            self.name,
            self.target.kind(),
            self.target.binds(),
            id(prefix, &self.name)
        );
        if let Some(entry) = &self.entry {
            text.push_str(&format!("\n      entry: {entry}"));
        }
        if !self.args.is_empty() {
            text.push_str(&format!("\n      fixed arguments: {}", self.args.join(" ")));
        }
        for rule in &self.user_args {
            text.push_str(&format!("\n      user argument: {rule}"));
        }
        for secret in &self.secrets {
            text.push_str(&format!(
                "\n      secret {secret}: a keychain reference, never written (gatehouse secret set {secret})"
            ));
        }
        for setting in &self.settings {
            text.push_str(&format!("\n      setting {setting} (not written)"));
        }
        for note in &self.notes {
            text.push_str(&format!("\n      note: {note}"));
        }
        if let Some((code, message)) = &self.refused {
            text.push_str(&format!("\n      REFUSED ({code}): {message}"));
        }
        text
    }
}

/// A failure with its own stable code (the exit status of a usage error: the input, not the
/// machine, is what was wrong).
pub fn coded(code: ErrorCode, message: impl Into<String>) -> Failure {
    Failure {
        code,
        ..Failure::usage(message)
    }
}

/// `{prefix}:{name}`.
pub fn id(prefix: &str, name: &str) -> String {
    format!("{prefix}:{name}")
}

/// `[a-z0-9-]`, never empty.
pub fn slug(text: &str) -> String {
    gatehouse_package::registry::slug(text)
}

/// Makes names unique in order: the second `x` becomes `x-2`.
pub fn unique(proposals: &mut [Proposal]) {
    let mut seen: Vec<String> = Vec::new();
    for proposal in proposals.iter_mut() {
        let mut name = proposal.name.clone();
        let mut n = 2;
        while seen.contains(&name) {
            name = format!("{}-{n}", proposal.name);
            n += 1;
        }
        proposal.name = name.clone();
        seen.push(name);
    }
}

/// Turns a [`Target`] that needs preparing (a download) into what `add-server` takes; the
/// returned guard keeps any temporary file alive while it runs.
pub type Prepared = (Target, Option<tempfile::TempDir>);

/// Lists `proposals` (nothing written) or, with `--keep`, writes the named ones in order.
/// `source` says where they came from, for the report.
pub async fn list_or_keep<F, Fut>(
    context: &Context,
    args: &AddServerArgs,
    source: Value,
    source_text: &str,
    proposals: Vec<Proposal>,
    prepare: F,
) -> Result<u8, Failure>
where
    F: Fn(Proposal) -> Fut,
    Fut: std::future::Future<Output = Result<Prepared, Failure>>,
{
    if !args.id.starts_with("urn:") {
        return Err(Failure::usage(format!(
            "--id {:?}: with --from-registry or --from-client, --id is the prefix of each entry's id (urn:…); each entry is PREFIX:NAME",
            args.id
        )));
    }
    if args.keep.is_empty() {
        return list(context, args, source, source_text, &proposals);
    }
    // Every name is checked before anything is written.
    let mut kept = Vec::new();
    for name in &args.keep {
        let proposal = proposals.iter().find(|p| &p.name == name).ok_or_else(|| {
            Failure::usage(format!(
                "--keep {name:?}: no such proposal; the proposals are {}",
                proposals
                    .iter()
                    .map(|p| p.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        })?;
        if let Some((code, message)) = &proposal.refused {
            return Err(coded(
                *code,
                format!("--keep {name:?}: {message}; nothing was written"),
            ));
        }
        if !kept.iter().any(|p: &Proposal| &p.name == name) {
            kept.push(proposal.clone());
        }
    }
    let mut written: Vec<String> = Vec::new();
    for proposal in kept {
        let name = proposal.name.clone();
        let entry_id = id(&args.id, &name);
        let outcome = async {
            let (target, _guard) = prepare(proposal.clone()).await?;
            let one = proposal_args(args, &proposal, &target, &entry_id);
            // add-server calls back into this module only for --from-*, which `one` clears.
            Box::pin(crate::add_server::run(context, &one)).await
        }
        .await;
        match outcome {
            Ok(_) => written.push(entry_id),
            Err(failure) => {
                let written_text = if written.is_empty() {
                    "none".to_string()
                } else {
                    written.join(", ")
                };
                return Err(Failure {
                    message: format!(
                        "{name} ({entry_id}) was not written: {} Already written: {written_text}; the bundle holds those.",
                        failure.message
                    ),
                    ..failure
                });
            }
        }
    }
    report(
        context,
        json!({"source": source, "written": written}),
        &format!(
            "From {source_text}: wrote {}. Sign the bundle again (gatehouse bundle sign --key ROOT_KEY {}).",
            written.join(", "),
            args.bundle.display()
        ),
    );
    Ok(0)
}

fn list(
    context: &Context,
    args: &AddServerArgs,
    source: Value,
    source_text: &str,
    proposals: &[Proposal],
) -> Result<u8, Failure> {
    let mut text = format!("Proposals from {source_text} (nothing written):");
    for proposal in proposals {
        text.push('\n');
        text.push_str(&proposal.to_text(&args.id));
    }
    text.push_str(
        "\nWrite the ones you want with --keep NAME (repeat); add --tool NAME or --all-tools to pin tools. Secrets are never written: set each with `gatehouse secret set NAME`.",
    );
    report(
        context,
        json!({
            "source": source,
            "proposals": proposals.iter().map(|p| p.to_json(&args.id)).collect::<Vec<_>>(),
            "written": [],
        }),
        &text,
    );
    Ok(0)
}

/// The incoming arguments with exactly one kind set and the proposal's id; the admin's own
/// `--arg`, `--user-arg` and `--entry`, when given, replace what the proposal derived.
fn proposal_args(
    base: &AddServerArgs,
    proposal: &Proposal,
    target: &Target,
    entry_id: &str,
) -> AddServerArgs {
    let mut one = base.clone();
    one.id = entry_id.to_string();
    // Every kind cleared first, so exactly the proposal's is set.
    (one.npm, one.pypi, one.mcpb, one.stdio, one.url) = (None, None, None, None, None);
    (one.from_registry, one.from_client, one.config) = (None, None, None);
    one.keep = Vec::new();
    match target {
        Target::Npm(s) => one.npm = Some(s.clone()),
        Target::Pypi(s) => one.pypi = Some(s.clone()),
        Target::McpbFile(p) => one.mcpb = Some(p.clone()),
        // Prepared into a file before this; an URL here would be a bug upstream.
        Target::McpbUrl { url, .. } => one.mcpb = Some(PathBuf::from(url)),
        Target::Stdio(s) => one.stdio = Some(s.clone()),
        Target::Url(u) => one.url = Some(u.clone()),
    }
    if one.entry.is_none() {
        one.entry = proposal.entry.clone();
    }
    if one.args.is_empty() {
        one.args = proposal.args.clone();
    }
    if one.user_args.is_empty() {
        one.user_args = proposal.user_args.clone();
    }
    one
}
