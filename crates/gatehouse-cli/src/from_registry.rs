//! `gatehouse bundle add-server --from-registry server.json`: the packages and remotes of an
//! MCP Registry document as proposals (`gatehouse_package::registry`), written with `--keep`.
//! An MCPB is downloaded (https, or http to loopback; bounded) and its bytes checked against
//! the document's `fileSha256` before anything else reads them.

use std::path::Path;
use std::time::Duration;

use gatehouse_host::ErrorCode;
use gatehouse_package::registry::{ProposalKind, read_server_json};
use serde_json::json;
use sha2::{Digest, Sha256};

use crate::cli::AddServerArgs;
use crate::commands::Context;
use crate::failure::Failure;
use crate::proposals::{Prepared, Proposal, Target, coded, list_or_keep};

/// The largest `.mcpb` downloaded.
const MCPB_MAX_BYTES: usize = 256 * 1024 * 1024;
const MCPB_TIMEOUT: Duration = Duration::from_secs(120);
/// The largest server.json read.
const DOCUMENT_MAX_BYTES: u64 = 1024 * 1024;

pub async fn run(context: &Context, args: &AddServerArgs, file: &Path) -> Result<u8, Failure> {
    // The bundle and the signer are checked before anything is read or proposed, as for one
    // entry: a wrong key is said at once, not after the proposals are listed.
    crate::entry::open_bundle(args)?;
    let size = std::fs::metadata(file)
        .map_err(|e| Failure::usage(format!("cannot read {}: {e}", file.display())))?
        .len();
    if size > DOCUMENT_MAX_BYTES {
        return Err(coded(
            ErrorCode::RegistryDocumentInvalid,
            format!(
                "{}: {size} bytes is larger than a server.json (at most {DOCUMENT_MAX_BYTES})",
                file.display()
            ),
        ));
    }
    let bytes = std::fs::read(file)
        .map_err(|e| Failure::usage(format!("cannot read {}: {e}", file.display())))?;
    let document = read_server_json(&bytes)
        .map_err(|e| coded(e.code.into(), format!("{}: {}", file.display(), e.message)))?;
    let proposals: Vec<Proposal> = document.proposals.iter().map(convert).collect();
    // A document none of whose entries can be bound is refused as a whole, with the first
    // entry's reason, so a script sees the code.
    if let Some(first) = document.proposals.first()
        && document.proposals.iter().all(|p| p.refused.is_some())
        && let Some(refusal) = &first.refused
    {
        return Err(coded(
            refusal.code.into(),
            format!(
                "{}: nothing in {} can be bound: {}",
                file.display(),
                document.name,
                refusal.message
            ),
        ));
    }
    let source = json!({"server_json": file, "name": document.name, "version": document.version});
    let text = format!("{} ({})", document.name, file.display());
    list_or_keep(context, args, source, &text, proposals, prepare).await
}

fn convert(p: &gatehouse_package::registry::Proposal) -> Proposal {
    let target = match p.kind {
        ProposalKind::Npm => Target::Npm(p.target.clone()),
        ProposalKind::Pypi => Target::Pypi(p.target.clone()),
        ProposalKind::Mcpb => Target::McpbUrl {
            url: p.target.clone(),
            sha256: p.file_sha256.clone().unwrap_or_default(),
        },
        ProposalKind::Remote => Target::Url(p.target.clone()),
    };
    let mut proposal = Proposal::new(p.name.clone(), target);
    proposal.args = p.args.clone();
    proposal.user_args = p.user_args.clone();
    proposal.secrets = p.secrets.iter().map(|s| s.name.clone()).collect();
    proposal.settings = p
        .settings
        .iter()
        .map(|s| match &s.default {
            Some(d) => format!("{}={d}", s.name),
            None if s.required => format!("{} (required, no default)", s.name),
            None => s.name.clone(),
        })
        .collect();
    proposal.notes = p.notes.clone();
    if let (Some(sha256), ProposalKind::Npm | ProposalKind::Pypi) = (&p.file_sha256, p.kind) {
        // What can really be done: the binding pins every artifact by the registry's own
        // integrity hash (npm's sha512, PyPI's sha256 of the wheel pip chose), checked by the
        // store on every install; the store does not hand the fetched bytes back here.
        proposal.notes.push(format!(
            "fileSha256 {sha256} not compared: the binding pins the artifacts by the registry's own integrity hashes, which the store checks on every install"
        ));
    }
    proposal.refused = p
        .refused
        .as_ref()
        .map(|r| (r.code.into(), r.message.clone()));
    proposal
}

async fn prepare(proposal: Proposal) -> Result<Prepared, Failure> {
    match proposal.target {
        Target::McpbUrl { url, sha256 } => {
            let bytes = download(&url).await?;
            let actual = hex::encode(Sha256::digest(&bytes));
            if actual != sha256 {
                return Err(coded(
                    ErrorCode::RegistryHashMismatch,
                    format!(
                        "{url}: its SHA-256 is {actual}, not the fileSha256 {sha256} server.json gives; the file was not used"
                    ),
                ));
            }
            let dir = tempfile::tempdir()
                .map_err(|e| Failure::usage(format!("cannot make a temporary directory: {e}")))?;
            let file = dir.path().join(format!("{}.mcpb", proposal.name));
            std::fs::write(&file, &bytes)
                .map_err(|e| Failure::usage(format!("cannot write {}: {e}", file.display())))?;
            Ok((Target::McpbFile(file), Some(dir)))
        }
        other => Ok((other, None)),
    }
}

/// `url`'s bytes: https, or http to a loopback address only; no redirects (the document names
/// the file), at most [`MCPB_MAX_BYTES`].
async fn download(url: &str) -> Result<Vec<u8>, Failure> {
    let parsed = url::Url::parse(url).map_err(|e| {
        coded(
            ErrorCode::RegistryUrlInvalid,
            format!("{url}: not a URL: {e}"),
        )
    })?;
    let loopback = match parsed.host() {
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        Some(url::Host::Domain(d)) => d == "localhost",
        None => false,
    };
    match parsed.scheme() {
        "https" => {}
        "http" if loopback => {}
        _ => {
            return Err(coded(
                ErrorCode::RegistryUrlInvalid,
                format!(
                    "{url}: an MCPB is downloaded over https only (plain http to loopback for tests)"
                ),
            ));
        }
    }
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(MCPB_TIMEOUT)
        .build()
        .map_err(|e| Failure::usage(format!("cannot make an HTTP client: {e}")))?;
    let mut response = client
        .get(parsed)
        .send()
        .await
        .map_err(|e| coded(ErrorCode::Network, format!("{url}: download failed: {e}")))?;
    if !response.status().is_success() {
        return Err(coded(
            ErrorCode::HttpStatus,
            format!(
                "{url}: the server answered {} (redirects are not followed)",
                response.status()
            ),
        ));
    }
    let mut bytes = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|e| coded(ErrorCode::Network, format!("{url}: download failed: {e}")))?
    {
        if bytes.len() + chunk.len() > MCPB_MAX_BYTES {
            return Err(coded(
                ErrorCode::ArchiveTooLarge,
                format!(
                    "{url}: larger than {MCPB_MAX_BYTES} bytes; not an MCPB Gatehouse downloads"
                ),
            ));
        }
        bytes.extend_from_slice(&chunk);
    }
    Ok(bytes)
}
