//! Installing a trust-root bundle into an admin directory (`gatehouse bundle install`): the
//! decision (threshold, expiry, rotation from the installed bundle, rollback against the
//! highest-version record), its audit record, and the atomic write.
//!
//! An associated function, not a method of an open host: an admin installs into the
//! system's directory, often as another user, and opening a whole host would read that
//! user's servers, policy and approvals, and refuse to open over the very problem (a bad
//! policy, a broken admin bundle) the install may be meant to fix. It needs only the
//! directory and the audit log.

use std::path::{Path, PathBuf};

use gatehouse_attest::bundle::{Bundle, BundleError, VerifiedBundle};
use time::OffsetDateTime;

use super::{ApiError, Host};
use crate::ErrorCode;
use crate::admission::{check_record, read_versions, record_version};
use crate::audit_event::bundle::{BundleAccepted, BundleRefused};
use crate::gatekeeper::Auditor;
use crate::tap::Clock;

/// What an install decision looked at, for its audit record whether it succeeds or not.
#[derive(Default)]
struct Seen {
    /// What the file claims to be, when it parses at all.
    bundle_id: Option<String>,
    version: Option<u64>,
    /// The installed bundle of that id, when there is one that verifies.
    installed: Option<String>,
    /// The highest version recorded for that id.
    highest_seen: Option<u64>,
    target: Option<PathBuf>,
}

impl Host {
    /// Verifies the bundle against what is installed (rotation) and the highest version ever
    /// installed (rollback), records the decision (`bundle_accepted` or `bundle_refused`),
    /// then writes the bundle and the new highest-version record. The audit log is opened
    /// first and every refusal is recorded; an install that cannot be recorded does not
    /// happen. The bytes written are the bytes that were verified: the file is read once.
    ///
    /// `file` is the bundle, `dir` the admin trust-roots directory, `audit` the log the
    /// decision goes into; the decision is made as of `now` and as of the real time, so a
    /// bundle already expired is never installed.
    pub fn install_bundle(
        file: &Path,
        dir: &Path,
        audit: &Path,
        now: OffsetDateTime,
        clock: Clock,
    ) -> Result<BundleAccepted, ApiError> {
        let (audit, _) = Auditor::open(audit, clock)?;
        let mut seen = Seen::default();
        let (verified, bytes) = match decide(file, dir, now, &mut seen) {
            Ok(decided) => decided,
            Err(refusal) => {
                audit.write(
                    None,
                    &BundleRefused {
                        bundle_id: seen.bundle_id,
                        version: seen.version,
                        installed: seen.installed,
                        highest_seen: seen.highest_seen,
                        file: file.to_path_buf(),
                        into: dir.to_path_buf(),
                        reason: refusal.code,
                        detail: refusal.message.clone(),
                    },
                )?;
                return Err(refusal);
            }
        };
        let target = seen.target.expect("set before verifying");
        let accepted = BundleAccepted {
            bundle: verified.label(),
            signers: verified.signers().to_vec(),
            sha256: verified.signed_sha256_hex(),
            replaces: seen.installed,
            into: target.clone(),
        };
        audit.write(None, &accepted)?;
        std::fs::create_dir_all(dir)
            .map_err(|e| usage(format!("cannot create {}: {e}", dir.display())))?;
        crate::files::write_atomically(&target, &bytes, 0o644)
            .map_err(|e| usage(format!("cannot write {}: {e}", target.display())))?;
        record_version(dir, &verified).map_err(usage)?;
        Ok(accepted)
    }
}

/// A refusal by the bundle's own rules: the CLI exits 1.
fn refused(code: ErrorCode, message: String) -> ApiError {
    ApiError {
        refusal: true,
        ..ApiError::new(code, message)
    }
}

/// A file that cannot be read or written: not a refusal, the CLI exits 2.
fn usage(message: String) -> ApiError {
    ApiError::new(ErrorCode::Usage, message)
}

fn bundle_refused(path: &Path, error: BundleError) -> ApiError {
    refused((&error).into(), format!("{}: {error}", path.display()))
}

/// The install decision: the bundle verified as of `now` (and as of the real time: a past
/// `now` cannot install a bundle that is already expired), against the installed bundle of
/// its id and the highest-version record. Returns the verified bundle and the exact bytes
/// verified.
fn decide(
    path: &Path,
    dir: &Path,
    now: OffsetDateTime,
    seen: &mut Seen,
) -> Result<(VerifiedBundle, Vec<u8>), ApiError> {
    let bytes =
        std::fs::read(path).map_err(|e| usage(format!("cannot read {}: {e}", path.display())))?;
    let bundle = Bundle::parse(&bytes).map_err(|e| bundle_refused(path, e))?;
    let bundle_id = bundle.content().bundle_id.clone();
    seen.bundle_id = Some(bundle_id.clone());
    seen.version = Some(bundle.content().version);
    let target = dir.join(format!("{bundle_id}.json"));
    seen.target = Some(target.clone());
    let installed = match std::fs::read(&target) {
        Ok(old) => Some(
            Bundle::parse(&old)
                .and_then(|b| b.verify_as_installed())
                .map_err(|e| {
                    refused(
                        (&e).into(),
                        format!(
                            "the installed {} does not verify ({e}); it cannot authorize a rotation. Move it aside deliberately to install afresh (the highest-version record still prevents rollback)",
                            target.display()
                        ),
                    )
                })?,
        ),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(usage(format!("cannot read {}: {e}", target.display()))),
    };
    seen.installed = installed.as_ref().map(VerifiedBundle::label);
    let versions =
        read_versions(dir).map_err(|message| refused(ErrorCode::BundleUnreadable, message))?;
    let record = versions.get(&bundle_id);
    seen.highest_seen = record.map(|r| r.version);
    let verify_at = |at: OffsetDateTime| {
        bundle
            .verify(at, installed.as_ref(), record.map(|r| r.version))
            .and_then(|verified| check_record(&verified, record).map(|()| verified))
            .map_err(|e| bundle_refused(path, e))
    };
    let verified = verify_at(now)?;
    let real_now = OffsetDateTime::now_utc();
    if real_now > now {
        verify_at(real_now)?;
    }
    Ok((verified, bytes))
}
