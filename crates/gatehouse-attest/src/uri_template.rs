//! URI templates (RFC 6570) as MCP resource templates use them: every operator of levels 1–3
//! (`{var}`, `{+var}`, `{#var}`, `{.var}`, `{/var}`, `{;var}`, `{?var}`, `{&var}`) with
//! string values, plus the level-4 prefix modifier `{var:3}`; `{var*}` is accepted (an explode
//! changes nothing for a string). Values come from people and are percent-encoded as the
//! operator says, so a value can add characters but never template syntax.
//!
//! Expansion is not authorization: the expanded URI goes through
//! [`crate::resources::ResourceGate::check`] like any other, so `{+target}` filled with another
//! server's URI is refused there. Pure and bounded.

use std::collections::BTreeMap;
use std::fmt;

use crate::resources::entries::MAX_URI_BYTES;

/// Most variables one template may name.
pub const MAX_VARIABLES: usize = 64;

/// Why a template cannot be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TemplateError(pub String);

impl fmt::Display for TemplateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for TemplateError {}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Operator {
    Simple,
    Reserved,
    Fragment,
    Label,
    Path,
    PathParam,
    Query,
    QueryContinuation,
}

impl Operator {
    fn parse(c: char) -> Option<Operator> {
        Some(match c {
            '+' => Operator::Reserved,
            '#' => Operator::Fragment,
            '.' => Operator::Label,
            '/' => Operator::Path,
            ';' => Operator::PathParam,
            '?' => Operator::Query,
            '&' => Operator::QueryContinuation,
            _ => return None,
        })
    }

    fn symbol(self) -> Option<char> {
        Some(match self {
            Operator::Simple => return None,
            Operator::Reserved => '+',
            Operator::Fragment => '#',
            Operator::Label => '.',
            Operator::Path => '/',
            Operator::PathParam => ';',
            Operator::Query => '?',
            Operator::QueryContinuation => '&',
        })
    }

    /// (first, separator, named, if-empty, allow reserved) from RFC 6570 appendix A.
    fn rules(self) -> (&'static str, &'static str, bool, &'static str, bool) {
        match self {
            Operator::Simple => ("", ",", false, "", false),
            Operator::Reserved => ("", ",", false, "", true),
            Operator::Fragment => ("#", ",", false, "", true),
            Operator::Label => (".", ".", false, "", false),
            Operator::Path => ("/", "/", false, "", false),
            Operator::PathParam => (";", ";", true, "", false),
            Operator::Query => ("?", "&", true, "=", false),
            Operator::QueryContinuation => ("&", "&", true, "=", false),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct VarSpec {
    name: String,
    prefix: Option<usize>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Literal(String),
    Expression(Operator, Vec<VarSpec>),
}

/// A parsed template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    parts: Vec<Part>,
}

/// The template text before its first expression: what every expansion starts with.
pub fn literal_prefix(template: &str) -> &str {
    template.split('{').next().unwrap_or("")
}

fn is_varchar(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '.' || c == '%'
}

impl Template {
    pub fn parse(template: &str) -> Result<Template, TemplateError> {
        let fail = |what: String| {
            Err(TemplateError(format!(
                "the URI template {template:?} {what}"
            )))
        };
        if template.len() > MAX_URI_BYTES {
            return fail(format!("is longer than {MAX_URI_BYTES} bytes"));
        }
        let mut parts = Vec::new();
        let mut rest = template;
        let mut names = 0usize;
        while !rest.is_empty() {
            match rest.find(['{', '}']) {
                None => {
                    parts.push(Part::Literal(rest.to_string()));
                    break;
                }
                Some(at) if rest.as_bytes()[at] == b'}' => {
                    return fail("has a \"}\" with no \"{\"".into());
                }
                Some(at) => {
                    if at > 0 {
                        parts.push(Part::Literal(rest[..at].to_string()));
                    }
                    let Some(close) = rest[at..].find('}') else {
                        return fail("has a \"{\" that is never closed".into());
                    };
                    let body = &rest[at + 1..at + close];
                    if body.contains('{') {
                        return fail("nests \"{\"".into());
                    }
                    let mut chars = body.chars();
                    let (operator, list) = match chars.next().and_then(Operator::parse) {
                        Some(operator) => (operator, chars.as_str()),
                        None => (Operator::Simple, body),
                    };
                    if list.is_empty() {
                        return fail("has an empty expression \"{}\"".into());
                    }
                    let mut vars = Vec::new();
                    for spec in list.split(',') {
                        let (name, modifier) = match spec.split_once(':') {
                            Some((name, length)) => match length.parse::<usize>() {
                                Ok(n) if (1..10_000).contains(&n) => (name, Some(n)),
                                _ => {
                                    return fail(format!(
                                        "has the prefix length {length:?}, not 1 to 9999"
                                    ));
                                }
                            },
                            None => (spec.strip_suffix('*').unwrap_or(spec), None),
                        };
                        if name.is_empty() || !name.chars().all(is_varchar) {
                            return fail(format!(
                                "has the variable name {name:?} (letters, digits, _ and . only; operators = , ! @ | are reserved)"
                            ));
                        }
                        names += 1;
                        if names > MAX_VARIABLES {
                            return fail(format!("names more than {MAX_VARIABLES} variables"));
                        }
                        vars.push(VarSpec {
                            name: name.to_string(),
                            prefix: modifier,
                        });
                    }
                    parts.push(Part::Expression(operator, vars));
                    rest = &rest[at + close + 1..];
                }
            }
        }
        Ok(Template { parts })
    }

    /// The variable names, each once, in the order they first appear.
    pub fn variables(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for part in &self.parts {
            if let Part::Expression(_, vars) = part {
                for var in vars {
                    if !out.contains(&var.name) {
                        out.push(var.name.clone());
                    }
                }
            }
        }
        out
    }

    /// The literal text between the expressions, in order.
    pub fn literals(&self) -> impl Iterator<Item = &str> {
        self.parts.iter().filter_map(|part| match part {
            Part::Literal(text) => Some(text.as_str()),
            Part::Expression(..) => None,
        })
    }

    /// The operator of each expression (`+`, `#`, `.`, `/`, `;`, `?`, `&`), in order; simple
    /// expansions (`{var}`) have none.
    pub fn operators(&self) -> impl Iterator<Item = char> {
        self.parts.iter().filter_map(|part| match part {
            Part::Expression(operator, _) => operator.symbol(),
            Part::Literal(_) => None,
        })
    }

    /// Expands with `values`; a variable without a value is left out, as RFC 6570 says.
    pub fn expand(&self, values: &BTreeMap<String, String>) -> Result<String, TemplateError> {
        let mut out = String::new();
        for part in &self.parts {
            match part {
                Part::Literal(text) => out.push_str(text),
                Part::Expression(operator, vars) => {
                    let (first, separator, named, if_empty, reserved) = operator.rules();
                    let mut any = false;
                    for var in vars {
                        let Some(value) = values.get(&var.name) else {
                            continue;
                        };
                        out.push_str(if any { separator } else { first });
                        any = true;
                        let value: String = match var.prefix {
                            Some(n) => value.chars().take(n).collect(),
                            None => value.clone(),
                        };
                        if named {
                            out.push_str(&var.name);
                            if value.is_empty() {
                                out.push_str(if_empty);
                                continue;
                            }
                            out.push('=');
                        }
                        encode(&value, reserved, &mut out);
                    }
                }
            }
            if out.len() > MAX_URI_BYTES {
                return Err(TemplateError(format!(
                    "the expanded URI is longer than {MAX_URI_BYTES} bytes"
                )));
            }
        }
        Ok(out)
    }
}

fn encode(value: &str, reserved: bool, out: &mut String) {
    let bytes = value.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        let unreserved = b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~');
        let keep_reserved = reserved
            && (b":/?#[]@!$&'()*+,;=".contains(&b)
                || (b == b'%'
                    && bytes.get(i + 1).is_some_and(u8::is_ascii_hexdigit)
                    && bytes.get(i + 2).is_some_and(u8::is_ascii_hexdigit)));
        if unreserved || keep_reserved {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
        i += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn expand(template: &str, pairs: &[(&str, &str)]) -> String {
        Template::parse(template)
            .unwrap()
            .expand(&vars(pairs))
            .unwrap()
    }

    #[test]
    fn the_rfc_examples_expand_as_written() {
        // RFC 6570 section 3.2, with var = "value", hello = "Hello World!", path = "/foo/bar",
        // x = "1024", y = "768", empty = "".
        let v = [
            ("var", "value"),
            ("hello", "Hello World!"),
            ("path", "/foo/bar"),
            ("x", "1024"),
            ("y", "768"),
            ("empty", ""),
        ];
        for (template, expected) in [
            ("{var}", "value"),
            ("{hello}", "Hello%20World%21"),
            ("{+hello}", "Hello%20World!"),
            ("{+path}/here", "/foo/bar/here"),
            ("here?ref={+path}", "here?ref=/foo/bar"),
            ("map?{x,y}", "map?1024,768"),
            ("{+x,hello,y}", "1024,Hello%20World!,768"),
            ("{#x,hello,y}", "#1024,Hello%20World!,768"),
            ("X{.var}", "X.value"),
            ("X{.x,y}", "X.1024.768"),
            ("{/var}", "/value"),
            ("{/var,x}/here", "/value/1024/here"),
            ("{;x,y}", ";x=1024;y=768"),
            ("{;x,y,empty}", ";x=1024;y=768;empty"),
            ("{?x,y}", "?x=1024&y=768"),
            ("{?x,y,empty}", "?x=1024&y=768&empty="),
            ("?fixed=yes{&x}", "?fixed=yes&x=1024"),
            ("{var:3}", "val"),
            ("{var*}", "value"),
            ("{?undef}", ""),
            ("x{undef}y", "xy"),
        ] {
            assert_eq!(expand(template, &v), expected, "{template}");
        }
    }

    #[test]
    fn values_cannot_add_syntax_in_simple_expansion() {
        assert_eq!(
            expand("demo://notes/{name}", &[("name", "../../etc/passwd")]),
            "demo://notes/..%2F..%2Fetc%2Fpasswd"
        );
        assert_eq!(
            expand("demo://notes/{name}", &[("name", "a{b}c")]),
            "demo://notes/a%7Bb%7Dc"
        );
        assert_eq!(
            expand("demo://n/{name}", &[("name", "é")]),
            "demo://n/%C3%A9"
        );
        // Reserved expansion passes separators: the gate, not the template, must refuse.
        assert_eq!(
            expand("{+target}", &[("target", "https://evil.example/x")]),
            "https://evil.example/x"
        );
    }

    #[test]
    fn literals_and_operators_are_listed_in_order() {
        let t = Template::parse("demo://n/{a}x{+b}{?c}y{#d}").unwrap();
        assert_eq!(t.literals().collect::<Vec<_>>(), ["demo://n/", "x", "y"]);
        assert_eq!(t.operators().collect::<String>(), "+?#");
        for operator in ['+', '#', '.', '/', ';', '?', '&'] {
            let t = Template::parse(&format!("{{{operator}v}}")).unwrap();
            assert_eq!(t.operators().collect::<Vec<_>>(), [operator]);
        }
    }

    #[test]
    fn variables_are_listed_once_in_order() {
        let t = Template::parse("demo://{a}/{+b}{?c,a}").unwrap();
        assert_eq!(t.variables(), ["a", "b", "c"]);
        assert_eq!(literal_prefix("demo://notes/{name}"), "demo://notes/");
        assert_eq!(literal_prefix("{+x}"), "");
        assert_eq!(literal_prefix("demo://plain"), "demo://plain");
    }

    #[test]
    fn malformed_templates_are_refused_by_name() {
        for bad in [
            "demo://{name",
            "demo://name}",
            "demo://{}",
            "demo://{+}",
            "demo://{a{b}}",
            "demo://{=a}",
            "demo://{a b}",
            "demo://{a:0}",
            "demo://{a:x}",
            "demo://{a,}",
        ] {
            let error = Template::parse(bad).unwrap_err();
            assert!(error.0.contains(bad), "{bad}: {error}");
        }
        let many = (0..=MAX_VARIABLES)
            .map(|i| format!("{{v{i}}}"))
            .collect::<String>();
        assert!(Template::parse(&many).is_err());
        let t = Template::parse("demo://{a}").unwrap();
        let long = "x".repeat(MAX_URI_BYTES);
        assert!(t.expand(&vars(&[("a", &long)])).is_err());
    }
}
