//! A config's request against the signed binding: the same package (in its ecosystem's normal
//! form), the bound version or none, the bound console script, and the binding's fixed
//! arguments first. What follows the fixed arguments is the user's, checked by
//! [`crate::user_args`].

use gatehouse_attest::package::{Ecosystem, EntryPoint, PackageBinding};

use crate::launcher::PackageRequest;
use crate::names::normalize_pypi_name;

/// Why a request is not the binding. Stable snake_case codes ([`Mismatch::code`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mismatch {
    OtherName {
        bound: String,
        asked: String,
    },
    OtherEcosystem {
        bound: Ecosystem,
        asked: Ecosystem,
    },
    OtherVersion {
        bound: String,
        asked: String,
    },
    /// `uvx --from NAME CMD` names another console script than the binding's entry.
    OtherScript {
        bound: String,
        asked: String,
    },
    /// The request's arguments do not start with the binding's fixed ones (`asked`: the
    /// request's first arguments, as many as the binding fixes).
    FixedArgs {
        bound: Vec<String>,
        asked: Vec<String>,
    },
}

fn launcher_of(ecosystem: Ecosystem) -> &'static str {
    match ecosystem {
        Ecosystem::Npm => "npx",
        Ecosystem::Pypi => "uvx",
        Ecosystem::Mcpb => "the path to the .mcpb file",
    }
}

impl Mismatch {
    pub fn code(&self) -> &'static str {
        match self {
            Mismatch::OtherName { .. } => "other_name",
            Mismatch::OtherEcosystem { .. } => "other_ecosystem",
            Mismatch::OtherVersion { .. } => "other_version",
            Mismatch::OtherScript { .. } => "other_script",
            Mismatch::FixedArgs { .. } => "fixed_args",
        }
    }

    /// What is wrong and what to change in the config. `name` is the package as the config
    /// names it ([`PackageRequest::name`]); both npx and uvx accept the `NAME@VERSION` form the
    /// advice writes.
    pub fn message(&self, name: &str) -> String {
        match self {
            Mismatch::OtherName { bound, asked } => format!(
                "the config runs the package {asked}, but this server is bound to {bound}; another or look-alike package is never run in its place: change the config to {bound}, or ask the admin to bind {asked}"
            ),
            Mismatch::OtherEcosystem { bound, asked } => format!(
                "the config launches {name} as a {} package, but the binding is a {} package; launch it with {}",
                asked.as_str(),
                bound.as_str(),
                launcher_of(*bound)
            ),
            Mismatch::OtherVersion { bound, asked } => format!(
                "{name} is bound at version {bound}, but the config asks for {asked}; change the config to {name}@{bound} (or name no version to run the bound one), or ask the admin to bind {asked}"
            ),
            Mismatch::OtherScript { bound, asked } => format!(
                "{name} is bound to run its command {bound}, but the config runs {asked}; change the command after --from to {bound}"
            ),
            Mismatch::FixedArgs { bound, asked } => format!(
                "{name} is bound with the fixed arguments {bound:?} first, but the config starts with {asked:?}; start the arguments with exactly {}, then your own",
                bound.join(" ")
            ),
        }
    }
}

impl std::fmt::Display for Mismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.code())
    }
}

/// A name in the form its ecosystem compares it in (PyPI names PEP 503-normalised by the
/// bundle parser's own rule; npm and MCPB names as written).
pub fn normal_form(ecosystem: Ecosystem, name: &str) -> String {
    match ecosystem {
        // A name the normaliser refuses is kept as written; it then equals no bound name,
        // since bound PyPI names are always normalised.
        Ecosystem::Pypi => normalize_pypi_name(name).unwrap_or_else(|| name.to_string()),
        Ecosystem::Npm | Ecosystem::Mcpb => name.to_string(),
    }
}

/// The user's own arguments (those after the binding's fixed ones) when `req` is `binding`.
pub fn match_request(
    req: &PackageRequest,
    binding: &PackageBinding,
) -> Result<Vec<String>, Mismatch> {
    if req.ecosystem != binding.ecosystem {
        return Err(Mismatch::OtherEcosystem {
            bound: binding.ecosystem,
            asked: req.ecosystem,
        });
    }
    let ecosystem = binding.ecosystem;
    if normal_form(ecosystem, &req.name) != normal_form(ecosystem, &binding.package.name) {
        return Err(Mismatch::OtherName {
            bound: binding.package.name.clone(),
            asked: req.name.clone(),
        });
    }
    if let Some(asked) = &req.version
        && *asked != binding.package.version
    {
        return Err(Mismatch::OtherVersion {
            bound: binding.package.version.clone(),
            asked: asked.clone(),
        });
    }
    if let Some(asked) = &req.script {
        let bound = match &binding.entry {
            EntryPoint::ConsoleScript(script) => script.clone(),
            EntryPoint::Callable { module, function } => format!("{module}:{function}"),
            EntryPoint::Path(path) => path.clone(),
        };
        if *asked != bound {
            return Err(Mismatch::OtherScript {
                bound,
                asked: asked.clone(),
            });
        }
    }
    match req.args.strip_prefix(binding.args.as_slice()) {
        Some(user) => Ok(user.to_vec()),
        None => Err(Mismatch::FixedArgs {
            bound: binding.args.clone(),
            asked: req.args.iter().take(binding.args.len()).cloned().collect(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::{binding, mcpb_json, npm_json, pypi_json, with};
    use crate::launcher::{Parsed, parse_launcher};
    use serde_json::json;

    fn req(command: &str, args: &[&str]) -> PackageRequest {
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        match parse_launcher(command, &args) {
            Parsed::Request(r) => r,
            other => panic!("{other:?}"),
        }
    }

    const FS: &str = "@modelcontextprotocol/server-filesystem";

    #[test]
    fn the_bound_package_matches_with_or_without_its_version() {
        let npm = binding(&npm_json());
        let at = format!("{FS}@2026.8.31");
        assert_eq!(
            match_request(&req("npx", &["-y", &at, "/home/u/a", "/home/u/b"]), &npm),
            Ok(vec!["/home/u/a".to_string(), "/home/u/b".to_string()])
        );
        assert_eq!(match_request(&req("npx", &[FS]), &npm), Ok(vec![]));

        let pypi = binding(&pypi_json());
        for args in [
            &["mcp-server-time", "--local-timezone", "UTC"][..],
            &["MCP_Server.Time==2026.10.19", "--local-timezone", "UTC"],
            &[
                "--from",
                "mcp-server-time@2026.10.19",
                "mcp-server-time",
                "--local-timezone",
                "UTC",
            ],
        ] {
            assert_eq!(
                match_request(&req("uvx", args), &pypi),
                Ok(vec![]),
                "{args:?}"
            );
        }
        assert_eq!(
            match_request(
                &req(
                    "uvx",
                    &["mcp-server-time", "--local-timezone", "UTC", "extra"]
                ),
                &pypi
            ),
            Ok(vec!["extra".to_string()])
        );

        let mcpb = binding(&mcpb_json());
        assert_eq!(
            match_request(&req("/home/u/hello-world.mcpb", &["--quiet"]), &mcpb),
            Ok(vec!["--quiet".to_string()])
        );
    }

    #[test]
    fn look_alike_and_other_names_are_refused() {
        let npm = binding(&npm_json());
        for asked in [
            "@modelcontextprotocol/server-filesytem",
            "server-filesystem",
            "@modelcontextprotocol-x/server-filesystem",
            "@evil/server-filesystem",
        ] {
            let m = match_request(&req("npx", &["-y", asked]), &npm).unwrap_err();
            assert_eq!(
                m,
                Mismatch::OtherName {
                    bound: FS.into(),
                    asked: asked.into()
                }
            );
            assert_eq!(m.code(), "other_name");
            assert!(
                m.message(asked)
                    .contains(&format!("change the config to {FS}"))
            );
        }
        let pypi = binding(&pypi_json());
        let m = match_request(&req("uvx", &["mcp-server-tine"]), &pypi).unwrap_err();
        assert_eq!(m.code(), "other_name");
        let m =
            match_request(&req("/b/hello-world2.mcpb", &[]), &binding(&mcpb_json())).unwrap_err();
        assert_eq!(m.code(), "other_name");
    }

    #[test]
    fn another_ecosystem_version_or_script_is_refused_with_what_to_write() {
        let npm = binding(&npm_json());
        let m = match_request(&req("uvx", &["mcp-server-time"]), &npm).unwrap_err();
        assert_eq!(
            m,
            Mismatch::OtherEcosystem {
                bound: Ecosystem::Npm,
                asked: Ecosystem::Pypi
            }
        );
        assert!(m.message("mcp-server-time").contains("launch it with npx"));

        let m = match_request(&req("npx", &["-y", &format!("{FS}@2026.9.1")]), &npm).unwrap_err();
        assert_eq!(
            m,
            Mismatch::OtherVersion {
                bound: "2026.8.31".into(),
                asked: "2026.9.1".into()
            }
        );
        assert_eq!(m.code(), "other_version");
        let text = m.message(FS);
        assert!(text.contains("is bound at version 2026.8.31"), "{text}");
        assert!(
            text.contains(&format!(
                "change the config to {FS}@2026.8.31 (or name no version"
            )),
            "{text}"
        );
        // Build metadata is part of the exact version.
        let m = match_request(&req("npx", &[&format!("{FS}@2026.8.31+b1")]), &npm).unwrap_err();
        assert_eq!(m.code(), "other_version");

        let pypi = binding(&pypi_json());
        let m = match_request(
            &req(
                "uvx",
                &[
                    "--from",
                    "mcp-server-time",
                    "mcp-server-tz",
                    "--local-timezone",
                    "UTC",
                ],
            ),
            &pypi,
        )
        .unwrap_err();
        assert_eq!(
            m,
            Mismatch::OtherScript {
                bound: "mcp-server-time".into(),
                asked: "mcp-server-tz".into()
            }
        );
        assert!(
            m.message("mcp-server-time")
                .contains("change the command after --from to mcp-server-time")
        );
        let callable = binding(&with(pypi_json(), "/entry", json!("mcp_server_time:main")));
        let m = match_request(
            &req(
                "uvx",
                &[
                    "--from",
                    "mcp-server-time",
                    "main",
                    "--local-timezone",
                    "UTC",
                ],
            ),
            &callable,
        )
        .unwrap_err();
        assert_eq!(m.code(), "other_script");
        // Without --from the binding's entry decides what runs.
        assert_eq!(
            match_request(
                &req("uvx", &["mcp-server-time", "--local-timezone", "UTC"]),
                &callable
            ),
            Ok(vec![])
        );
    }

    #[test]
    fn the_fixed_arguments_must_come_first_exactly() {
        let pypi = binding(&pypi_json());
        for args in [
            &["mcp-server-time"][..],
            &["mcp-server-time", "--local-timezone"],
            &["mcp-server-time", "--local-timezone", "utc"],
            &["mcp-server-time", "--local-timezone=UTC"],
            &["mcp-server-time", "x", "--local-timezone", "UTC"],
        ] {
            let m = match_request(&req("uvx", args), &pypi).unwrap_err();
            assert_eq!(m.code(), "fixed_args", "{args:?}");
            let Mismatch::FixedArgs { bound, asked } = &m else {
                unreachable!()
            };
            assert_eq!(bound, &["--local-timezone", "UTC"]);
            assert_eq!(
                asked.as_slice(),
                &args[1..]
                    .iter()
                    .take(2)
                    .map(|s| s.to_string())
                    .collect::<Vec<_>>()[..]
            );
            assert!(
                m.message("mcp-server-time")
                    .contains("start the arguments with exactly --local-timezone UTC")
            );
        }
    }
}
