//! The elicitation boundary (docs: elicitation.md §3): one decision per elicitation, before any
//! UI is shown.
//!
//! Pure: a [`Policy`] (from `policies/default.toml` or an admin's file), the request and its
//! context in; an [`Assessment`] (decision + reason codes + human detail) out. No I/O, no clock:
//! the abuse tracker takes `now` from the caller. The only shared state is a cache of prepared
//! sensitive-term tables, keyed by the exact term lists they were built from.
//!
//! Reason codes and the decision each leads to are in [`codes`]; policies/README.md documents
//! them, every setting, and the exact form subset.
//!
//! Decisions combine by severity ([`Decision::severity`]): the most severe reason wins, so adding
//! a check can only make a decision stricter.

pub mod abuse;
pub mod assess;
pub mod codes;
pub mod decision;
pub mod evidence;
pub mod form;
pub mod policy;
pub mod transit;
pub mod url_check;

pub use abuse::{AbuseEvent, AbuseTracker};
pub use assess::{FormAssessment, UrlAssessment, assess_form, assess_url};
pub use decision::{Assessment, Decision, Reason};
pub use evidence::{ElicitationContext, Mode, ServerStanding, TransportKind};
pub use evidence::{check_evidence, override_allowed};
pub use form::check_fields;
pub use form::{Field, FieldCheck, FieldError, FieldKind, FormSchema, SchemaError};
pub use gatehouse_confine::ConfinementMode;
pub use policy::{AuditMode, AuditPolicy, ConfinementPolicy, Policy, PolicyError};
pub use transit::check_answers;
pub use url_check::{HostClass, UrlContext, UrlDisplay, check_url, host_class};
