//! Launch settings that change what a server runs, and credentials in command lines and URLs:
//! the rules import and admission apply, and the redaction audit records and displays use.

use std::fmt;

use serde::Serialize;

/// Environment variables that change what code a process runs or loads: preloaded libraries,
/// interpreter module paths and option variables that load code, start-up files, the `PATH`
/// its subprocesses are found on, and what a launcher (`npx`, `uvx`, `docker run`, `go run`)
/// fetches: package registries and indexes, their configuration files and the home directory
/// they are read from, caches, and the TLS trust those fetches rely on. A closed list; the
/// families in [`CODE_LOADING_ENV_PREFIXES`] count by prefix.
pub const CODE_LOADING_ENV: &[&str] = &[
    // Executables and shells.
    "PATH",
    "SHELL",
    "BASH_ENV",
    "ENV",
    "ZDOTDIR",
    "SHELLOPTS",
    "BASHOPTS",
    "PS4",
    "IFS",
    "BROWSER",
    // The C library.
    "GCONV_PATH",
    "GLIBC_TUNABLES",
    "LOCPATH",
    "NLSPATH",
    "HOSTALIASES",
    // Configuration read from the home directory (~/.npmrc, pip.conf, uv.toml, .gitconfig,
    // docker's config) and caches a launcher runs packages from.
    "HOME",
    "XDG_CONFIG_HOME",
    "XDG_DATA_HOME",
    "XDG_CACHE_HOME",
    // Node.js and its package runners.
    "NODE_OPTIONS",
    "NODE_PATH",
    "NODE_REPL_EXTERNAL_MODULE",
    "ELECTRON_RUN_AS_NODE",
    "NODE_EXTRA_CA_CERTS",
    "NODE_TLS_REJECT_UNAUTHORIZED",
    "COREPACK_NPM_REGISTRY",
    "DENO_DIR",
    // Python.
    "PYTHONPATH",
    "PYTHONHOME",
    "PYTHONSTARTUP",
    "PYTHONUSERBASE",
    "PYTHONINSPECT",
    "PYTHONWARNINGS",
    "PYTHONBREAKPOINT",
    "PYTHONPYCACHEPREFIX",
    "PYTHONPLATLIBDIR",
    "PYTHONEXECUTABLE",
    "REQUESTS_CA_BUNDLE",
    // Perl, Ruby, PHP, Lua, Tcl, R.
    "PERL5LIB",
    "PERLLIB",
    "PERL5OPT",
    "PERL5DB",
    "RUBYOPT",
    "RUBYLIB",
    "GEM_HOME",
    "GEM_PATH",
    "BUNDLE_GEMFILE",
    "PHPRC",
    "PHP_INI_SCAN_DIR",
    "TCLLIBPATH",
    "R_PROFILE",
    "R_PROFILE_USER",
    "R_ENVIRON",
    "R_ENVIRON_USER",
    "R_LIBS",
    "R_LIBS_USER",
    // Java and .NET.
    "JAVA_TOOL_OPTIONS",
    "_JAVA_OPTIONS",
    "JDK_JAVA_OPTIONS",
    "JAVA_HOME",
    "CLASSPATH",
    "MAVEN_OPTS",
    "GRADLE_OPTS",
    "DOTNET_STARTUP_HOOKS",
    "DOTNET_ADDITIONAL_DEPS",
    "DOTNET_SHARED_STORE",
    "DOTNET_ROOT",
    "CORECLR_ENABLE_PROFILING",
    "CORECLR_PROFILER",
    "CORECLR_PROFILER_PATH",
    "COR_ENABLE_PROFILING",
    "COR_PROFILER",
    "COR_PROFILER_PATH",
    // Go.
    "GOFLAGS",
    "GOPROXY",
    "GOSUMDB",
    "GONOSUMDB",
    "GONOSUMCHECK",
    "GOPRIVATE",
    "GOINSECURE",
    "GOTOOLCHAIN",
    "GOPATH",
    "GOROOT",
    // Git runs these commands and hooks.
    "GIT_EXEC_PATH",
    "GIT_SSH",
    "GIT_SSH_COMMAND",
    "GIT_ASKPASS",
    "SSH_ASKPASS",
    "GIT_PROXY_COMMAND",
    "GIT_EXTERNAL_DIFF",
    "GIT_TEMPLATE_DIR",
    "GIT_EDITOR",
    "GIT_PAGER",
    "GIT_SEQUENCE_EDITOR",
    // Containers: which daemon runs the image, with which credentials and configuration.
    "DOCKER_HOST",
    "DOCKER_CONTEXT",
    "DOCKER_CONFIG",
    "CONTAINER_HOST",
    // TLS trust for whatever a launcher downloads, and OpenSSL's loadable engines.
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "CURL_CA_BUNDLE",
    "OPENSSL_CONF",
    "OPENSSL_ENGINES",
    "OPENSSL_MODULES",
];

/// Families of [`CODE_LOADING_ENV`] that count by prefix: the dynamic linkers', and the
/// settings of package installers and runners (registries, indexes, config files, caches).
pub const CODE_LOADING_ENV_PREFIXES: &[&str] = &[
    "LD_",
    "DYLD_",
    "NPM_CONFIG_",
    "YARN_",
    "BUN_CONFIG_",
    "PIP_",
    "PIPX_",
    "UV_",
    "GIT_CONFIG",
    "LUA_",
];

/// Whether the environment variable `key` can change what code runs. Compared without case:
/// npm reads its settings in any case, and a look-alike costs only a confirmation.
pub fn is_code_loading_env(key: &str) -> bool {
    let upper = key.to_ascii_uppercase();
    CODE_LOADING_ENV_PREFIXES
        .iter()
        .any(|prefix| upper.starts_with(prefix))
        || CODE_LOADING_ENV.contains(&upper.as_str())
}

/// One setting that changes what a stdio server runs, shown to the user exactly.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum LaunchSetting {
    /// An environment variable from [`CODE_LOADING_ENV`] (or `LD_*`/`DYLD_*`).
    Env { name: String, value: String },
    /// A working directory: relative paths in the command line, and modules an interpreter
    /// finds next to them, resolve there.
    Cwd { path: String },
}

impl fmt::Display for LaunchSetting {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LaunchSetting::Env { name, value } => write!(f, "env {name}={value}"),
            LaunchSetting::Cwd { path } => write!(f, "cwd {path}"),
        }
    }
}

/// The settings in `env` and `cwd` that change what runs, in a stable order.
pub fn risky_settings<'a>(
    env: impl IntoIterator<Item = (&'a String, &'a String)>,
    cwd: Option<&str>,
) -> Vec<LaunchSetting> {
    let mut found: Vec<LaunchSetting> = env
        .into_iter()
        .filter(|(k, _)| is_code_loading_env(k))
        .map(|(k, v)| LaunchSetting::Env {
            name: k.clone(),
            value: v.clone(),
        })
        .collect();
    found.sort_by_key(ToString::to_string);
    if let Some(path) = cwd {
        found.push(LaunchSetting::Cwd {
            path: path.to_string(),
        });
    }
    found
}

/// Whether a command-line flag or URL query parameter name carries a credential.
pub fn is_credential_name(name: &str) -> bool {
    let bare: String = name
        .trim_start_matches('-')
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .collect::<String>()
        .to_ascii_lowercase();
    const EXACT: &[&str] = &[
        "token",
        "key",
        "apikey",
        "secret",
        "password",
        "passwd",
        "pwd",
        "pass",
        "auth",
        "authorization",
        "credential",
        "credentials",
        "sig",
        "signature",
        "code",
    ];
    const PARTS: &[&str] = &[
        "token",
        "apikey",
        "secret",
        "password",
        "passwd",
        "accesskey",
        "privatekey",
        "clientsecret",
        "credential",
        "bearer",
        "sessionid",
    ];
    EXACT.contains(&bare.as_str()) || PARTS.iter().any(|p| bare.contains(p))
}

/// Where a credential sits in a command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArgCredential {
    /// The index of the argument holding the value.
    pub index: usize,
    /// The flag it belongs to, without dashes.
    pub flag: String,
    /// For `--flag=value`, the byte offset of the value in the argument; 0 for `--flag value`.
    pub offset: usize,
}

/// Credentials in `args`: the value of `--token=VALUE` or `--token VALUE` (any flag whose name
/// is a credential's), never a `${secret:...}` reference.
pub fn arg_credentials(args: &[String]) -> Vec<ArgCredential> {
    let mut found = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let arg = &args[i];
        if arg.starts_with('-') {
            if let Some((flag, value)) = arg.split_once('=') {
                if is_credential_name(flag) && !value.is_empty() && !value.contains("${") {
                    found.push(ArgCredential {
                        index: i,
                        flag: flag.trim_start_matches('-').to_string(),
                        offset: flag.len() + 1,
                    });
                }
            } else if is_credential_name(arg)
                && let Some(next) = args.get(i + 1)
                && !next.starts_with('-')
                && !next.contains("${")
            {
                found.push(ArgCredential {
                    index: i + 1,
                    flag: arg.trim_start_matches('-').to_string(),
                    offset: 0,
                });
                i += 1;
            }
        }
        i += 1;
    }
    found
}

/// `args` with every credential value replaced by `[redacted]`, for audit records and display.
pub fn redact_args(args: &[String]) -> Vec<String> {
    let mut out = args.to_vec();
    for c in arg_credentials(args) {
        out[c.index].truncate(c.offset);
        out[c.index].push_str("[redacted]");
    }
    out
}

/// The names of query parameters of `url` that carry credentials (values not yet references).
pub fn url_credentials(url: &url::Url) -> Vec<String> {
    url.query_pairs()
        .filter(|(k, v)| is_credential_name(k) && !v.is_empty() && !v.contains("${"))
        .map(|(k, _)| k.into_owned())
        .collect()
}

/// `url` with every credential query value replaced by `[redacted]`.
pub fn redact_url(url: &url::Url) -> String {
    if url_credentials(url).is_empty() {
        return url.to_string();
    }
    let mut redacted = url.clone();
    let pairs: Vec<(String, String)> = url
        .query_pairs()
        .map(|(k, v)| {
            let v = if is_credential_name(&k) && !v.contains("${") {
                "[redacted]".to_string()
            } else {
                v.into_owned()
            };
            (k.into_owned(), v)
        })
        .collect();
    redacted.query_pairs_mut().clear().extend_pairs(pairs);
    redacted.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn code_loading_variables_are_named_exactly_or_by_prefix() {
        for risky in [
            "LD_PRELOAD",
            "ld_library_path",
            "DYLD_INSERT_LIBRARIES",
            "NODE_OPTIONS",
            "PATH",
            "PYTHONPATH",
            "PERL5OPT",
            "JAVA_TOOL_OPTIONS",
            "BASH_ENV",
            "Path",
            // What a launcher fetches and runs: `npx`, `uvx`, `docker run`, `go run`.
            "npm_config_registry",
            "NPM_CONFIG_USERCONFIG",
            "UV_INDEX_URL",
            "PIP_INDEX_URL",
            "DOCKER_HOST",
            "GOFLAGS",
            "HOME",
            "XDG_CONFIG_HOME",
            "NODE_EXTRA_CA_CERTS",
            // Code loaded by an interpreter's own settings.
            "PYTHONWARNINGS",
            "BROWSER",
            "DOTNET_STARTUP_HOOKS",
            "GIT_CONFIG_COUNT",
            "GIT_SSH_COMMAND",
            "LUA_INIT",
            "OPENSSL_CONF",
        ] {
            assert!(is_code_loading_env(risky), "{risky}");
        }
        for plain in [
            "API_KEY",
            "GITHUB_TOKEN",
            "PYTHONUNBUFFERED",
            "PYTHONIOENCODING",
            "NODE_ENV",
            "LOG_LEVEL",
            "LANG",
            "TZ",
            "PATHS",
            "MY_PATH",
            "OLD_PRELOAD",
            "DOTNET_CLI_TELEMETRY_OPTOUT",
            "DOCKER_BUILDKIT",
            "GITHUB_PERSONAL_ACCESS_TOKEN",
            "MCP_HOME_URL",
        ] {
            assert!(!is_code_loading_env(plain), "{plain}");
        }
    }

    #[test]
    fn credentials_in_arguments_and_queries_are_found_and_redacted() {
        let args: Vec<String> = [
            "--api-key=sk-live-123",
            "--port",
            "8080",
            "--token",
            "ghp_abc",
            "--verbose",
            "--password=${secret:x}",
            "--keyboard-layout",
            "us",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let found = arg_credentials(&args);
        assert_eq!(
            found
                .iter()
                .map(|c| (c.index, c.flag.as_str()))
                .collect::<Vec<_>>(),
            [(0, "api-key"), (4, "token")]
        );
        assert_eq!(
            redact_args(&args),
            [
                "--api-key=[redacted]",
                "--port",
                "8080",
                "--token",
                "[redacted]",
                "--verbose",
                "--password=${secret:x}",
                "--keyboard-layout",
                "us",
            ]
        );
        let url =
            url::Url::parse("https://h.example/mcp?api_key=k1&page=2&access_token=t").unwrap();
        assert_eq!(url_credentials(&url), ["api_key", "access_token"]);
        let shown = redact_url(&url);
        assert!(!shown.contains("k1") && !shown.contains("=t"), "{shown}");
        assert!(shown.contains("page=2"), "{shown}");
        let plain = url::Url::parse("https://h.example/mcp?page=2").unwrap();
        assert_eq!(redact_url(&plain), plain.to_string());
    }
}
