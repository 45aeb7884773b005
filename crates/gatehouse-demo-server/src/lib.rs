//! Gatehouse's embedded demo MCP server and shared test fixture (the rmcp server side).
//!
//! It serves four deterministic tools (`echo`, `add`, `slow`, `fail`) over stdio or Streamable
//! HTTP, in the 2025-11-25 era (`initialize`), the 2026-07-28 era (`server/discover`,
//! per-request `_meta`) or both, so the host, the CLI and their tests can exercise every
//! connection path against a server whose answers are known in advance. The `gatehouse-demo-server`
//! binary is a thin command line over this library.
//!
//! It also serves elicitation tools ([`server::elicitation`]), each in both eras: a form using
//! every field type (`book_table`), a form asking for a secret (`ask_password`), URL
//! elicitations to a page it serves itself on 127.0.0.1 (`connect_account`,
//! `connect_account_required`, see [`pages`]), a URL elicitation to any URL given
//! (`open_link`), and completion notifications for ids it never issued (`spoof_completion`).
//! The form and URL tools report exactly the answer they received, so tests can check what a
//! host sent.
//!
//! It serves resources and prompts too ([`server::resources`], [`server::prompts`]): text,
//! Markdown, a PNG and bytes, a `demo://counter` that ticks every `--tick-ms` while subscribed
//! (`resources/subscribe` in 2025-11-25, `subscriptions/listen` in 2026-07-28), notes behind
//! the template `demo://notes/{name}`, prompts with arguments and completions, and a prompt
//! (`plan_trip`) and a resource (`demo://private/diary`) that ask a form first, in both eras.
//! `--hostile-content` adds resources and a prompt built to trip up hosts (huge, mislabelled,
//! markup); without it the demo stays clean. `--poisoned-definitions` ([`server::poisoned`])
//! adds tools whose definitions carry each kind of finding a host's definition review looks
//! for (hidden characters, instructions aimed at the model or about other tools, another
//! server's tool, a field asking for a secret); without it no definition has any.
//!
//! `--careless-files ROOT` ([`server::careless`]) adds `file://` resources read the careless way
//! many servers read them (decoded repeatedly, NFKC- and path-normalized, then read wherever
//! that leads), with `--request-log FILE` recording every URI asked for: the fixture that
//! proves a host's resource gate never lets a read leave an allowed prefix.
//!
//! `--escape-attempts` ([`server::escape`]) adds a hostile server's tools: `escape` tries to
//! read keys and other servers' files, write outside its grants, reach ungranted hosts, the
//! session bus, a shell and a fork bomb, and reports each attempt; `egress_flood` floods the
//! proxy with connections. The fixture of the host's confinement tests; it really tries.
//!
//! What it never does, unless `--careless-files` or `--escape-attempts` asks it to: it never
//! reads files, runs commands or reaches out to the network on a client's behalf (`open_link`
//! never fetches its URL); the only files it writes are the page-hits log an operator names
//! with `--page-hits` and the request log of `--request-log`. It never listens on a non-loopback address unless
//! explicitly allowed (the connect pages are always on 127.0.0.1); in stdio mode it never writes
//! anything but JSON-RPC to stdout. It is a demo: it is never trusted by default, only admitted
//! under the demo trust root.
//!
//! `--conformance` serves something else entirely: [`conformance`], a fixture implementing the
//! official MCP conformance suite's server test surface in both eras, over HTTP only.
//!
//! Over HTTP it also serves an ATSA Server Attestation Document at
//! `/.well-known/mcp-attestation` ([`attestation`]): identity [`attestation::DEMO_SERVER_ID`],
//! clearance `internal`, bound to the origin it listens on, and signed with the DEMO-ONLY signer
//! key from `trust-roots/demo/`, which is embedded in the binary. That key's private half is
//! public, so the signature means something only under the demo trust root: never install that
//! key anywhere else. `--attestation tampered` serves a document altered after signing and
//! `--attestation none` serves none, so hosts can be tested against refusals too.
//!
//! `--http ADDR --require-auth ISSUER` makes it an OAuth 2.1 protected resource ([`auth`]): at
//! startup it discovers ISSUER's metadata and keys, then every request to `/mcp` needs a bearer
//! JWT from ISSUER whose audience is the server's own `http://IP:PORT/mcp` and whose scope has
//! `mcp:tools` (401 with an RFC 9728 `resource_metadata` challenge otherwise). Each
//! `--tool-scope NAME=SCOPE` makes calling tool NAME also need SCOPE (403 `insufficient_scope`
//! otherwise), and the protected resource metadata is served at
//! `/.well-known/oauth-protected-resource/mcp`.

pub mod attestation;
pub mod auth;
pub mod conformance;
pub mod endpoint;
pub mod era;
pub mod http;
pub mod pages;
pub mod server;
pub mod stdio;
pub mod wire;

pub use attestation::AttestationMode;
pub use era::Era;
pub use pages::PageConfig;
pub use server::DemoServer;
