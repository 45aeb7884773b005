//! The files a PyPI project offers (name and SHA-256), for `bundle add-server --pypi`: which
//! wheel of each pinned requirement this machine's Python installs is chosen among them by
//! the requirements file's hashes (`gatehouse_package::binding::pypi_binding`).

use std::path::Path;

use gatehouse_attest::package::Ecosystem;

use super::{ApiError, Host};
use crate::packages::{FETCH_TIMEOUT, Fetcher, PackageSources};

impl Host {
    /// `name`'s files from `sources` (a package-sources file; `None` is the public index):
    /// the seed directories' wheels, then the index's PEP 691 listing when the network is on.
    /// PyPI only: an npm closure comes from its lockfile, an MCPB from its file.
    pub async fn package_files(
        sources: Option<&Path>,
        ecosystem: Ecosystem,
        name: &str,
    ) -> Result<Vec<(String, String)>, ApiError> {
        if ecosystem != Ecosystem::Pypi {
            return Err(ApiError::new(
                crate::ErrorCode::PackageResolveFailed,
                format!(
                    "listing files is for PyPI projects; a {} closure comes from its {}",
                    ecosystem.as_str(),
                    match ecosystem {
                        Ecosystem::Npm => "lockfile",
                        _ => ".mcpb file",
                    }
                ),
            ));
        }
        let sources = match sources {
            Some(path) => PackageSources::load(path)
                .map_err(|e| ApiError::new(crate::ErrorCode::ConfigInvalid, e))?,
            None => PackageSources::default(),
        };
        Fetcher::new(sources, FETCH_TIMEOUT)
            .pypi_files(name)
            .await
            .map_err(|f| ApiError::new(f.code(), f.to_string()))
    }
}
