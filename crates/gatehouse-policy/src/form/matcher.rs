//! The policy's sensitive terms prepared for matching (and cached per term list), and the rules
//! for when a name, title or prose names or asks for one.

use std::collections::HashMap;

use crate::policy::FormPolicy;

use super::text::{deleet, fold, skeleton, words};

/// Words after the bare word "token" that make it a count of LLM tokens, not a credential:
/// "token count", "tokenLimit", "token_budget".
const TOKEN_MEASURES: &[&str] = &[
    "count", "counts", "limit", "limits", "budget", "usage", "estimate", "length", "size",
];

/// A bare word followed by one of these is an ordinary compound, not a secret.
const ORDINARY_AFTER: &[(&str, &[&str])] = &[("token", TOKEN_MEASURES), ("secret", &["santa"])];

/// Words that ask for something: a request term within [`REQUEST_REACH`] words after one is
/// asked for ("Enter your card's PIN", "What is your 2FA?").
const REQUEST_WORDS: &[&str] = &[
    "enter", "type", "provide", "paste", "input", "give", "send", "share", "submit", "tell",
    "confirm", "verify", "what", "whats", "need", "reply", "write",
];
const REQUEST_REACH: usize = 4;
/// Words that turn a request around ("do not give us your PIN", "we don't need your 2FA";
/// "don't" splits into "don" and "t").
const NEGATIONS: &[&str] = &[
    "not", "never", "no", "dont", "don", "t", "without", "cannot",
];
/// Words after a request term that make it a place on a map ("confirm the pin location").
const PLACE_AFTER: &[&str] = &["location", "position", "map", "marker", "point"];

/// Glued terms at least this long also match inside a longer word ("userpassword",
/// "mysecretpassphrase"); shorter ones only as whole words ("pin" never matches "spinning").
const SUBSTRING_MIN: usize = 8;

/// Glued terms shorter than [`SUBSTRING_MIN`] that still count inside a longer word: no
/// ordinary word contains them ("openaiapikey", "dbpasswd"), unlike "secret" ("secretary").
const SHORT_INNER_TERMS: &[&str] = &["apikey", "passwd"];

/// Credential words and their common short forms that ask for a secret when they are the
/// whole of a field's name or title (glued, after folding and digit-for-letter reading: `PW`,
/// `p_w`, `Pa55`, `2FA`, `CVV2`), whatever the policy's term lists say: too short or too
/// common to match as a word inside a longer name (`pw_hash_algorithm`, `pass_count`,
/// `key_signature`, `enable_2fa`), but a field called nothing but `pw`, `pin` or `key` asks for
/// one. Not here, because alone they name ordinary things too: `code` (a coupon, a country),
/// `auth` (a method), `seed` (a random seed), `pan` (a camera), `sid`, `pk`, `sk`.
#[rustfmt::skip]
pub const WHOLE_NAME_TERMS: &[&str] = &[
    // Passwords.
    "pw", "pwd", "psw", "pswd", "pword", "pass", "passw", "passwd",
    // PINs, transaction numbers and one-time codes.
    "pin", "tan", "otp", "totp", "hotp",
    // Second factors.
    "2fa", "mfa", "tfa",
    // Card security codes and identity numbers.
    "cvv", "cvv2", "cvc", "cvc2", "ccv", "csc", "ssn",
    // Keys, secrets and tokens.
    "key", "secret", "token", "pat", "jwt", "bearer", "cred", "creds", "privkey",
];

/// The whole-name term `text` is nothing but, if any: see [`WHOLE_NAME_TERMS`].
/// Non-ASCII text is compared by UTS #39 skeleton on both sides, as [`Matcher::find`] does
/// (a skeleton can differ from its ASCII source: Latin `m` becomes `rn`).
fn whole_name_term(text: &str) -> Option<String> {
    static SKELETONS: std::sync::LazyLock<Vec<(String, &str)>> = std::sync::LazyLock::new(|| {
        WHOLE_NAME_TERMS
            .iter()
            .map(|term| (skeleton(term), *term))
            .collect()
    });
    let glued = words(text).concat();
    let found = if glued.is_ascii() {
        WHOLE_NAME_TERMS
            .iter()
            .find(|term| **term == glued)
            .copied()
    } else {
        let key = skeleton(&glued);
        SKELETONS
            .iter()
            .find(|(skel, _)| *skel == key)
            .map(|(_, term)| *term)
    };
    found.map(str::to_string)
}

/// The policy's terms, prepared for matching.
pub(crate) struct Matcher {
    /// Glued term (words concatenated) → the term as written in the policy.
    everywhere: HashMap<String, String>,
    names_only: HashMap<String, String>,
    /// Glued request terms and name-only terms: secrets when prose asks for them.
    requested: HashMap<String, String>,
    /// Length in bytes of the longest glued term in `requested`.
    longest_requested: usize,
    /// UTS #39 skeletons of the glued terms, for words with non-ASCII look-alike letters.
    skeletons: std::sync::OnceLock<(HashMap<String, String>, HashMap<String, String>)>,
    formats: Vec<String>,
    /// Length in bytes of the longest glued term.
    longest: usize,
    /// Glued terms of at least [`SUBSTRING_MIN`] bytes: (glued, term, name-only).
    long: Vec<(String, String, bool)>,
}

/// The lists a [`Matcher`] was built from.
type MatcherKey = (Vec<String>, Vec<String>, Vec<String>, Vec<String>);

/// Prepared matchers for the last few distinct term lists (normally just the one policy).
/// Keyed by the lists' exact contents, so a policy edited in place never sees a stale one.
static MATCHERS: std::sync::Mutex<Vec<(MatcherKey, std::sync::Arc<Matcher>)>> =
    std::sync::Mutex::new(Vec::new());

/// Where a match was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Place {
    Name,
    Title,
    Description,
    Format,
    /// The title of one of a select field's choices.
    Choice,
    /// The elicitation's own message.
    Message,
}

impl Place {
    fn as_str(self) -> &'static str {
        match self {
            Place::Name => "name",
            Place::Title => "title",
            Place::Description => "description",
            Place::Format => "format",
            Place::Choice => "choice title",
            Place::Message => "message",
        }
    }
}

/// A sensitive match: the policy term (or format) and where it was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Hit {
    pub term: String,
    pub place: Place,
}

impl Hit {
    pub fn describe(&self) -> String {
        match self.place {
            Place::Format => format!("its format is {:?}", self.term),
            place => format!("its {} matches {:?}", place.as_str(), self.term),
        }
    }
}

impl Matcher {
    /// The matcher for this policy's lists, prepared once and shared.
    pub fn new(policy: &FormPolicy) -> std::sync::Arc<Matcher> {
        let same = |key: &MatcherKey| {
            key.0 == policy.sensitive_terms
                && key.1 == policy.name_only_terms
                && key.2 == policy.sensitive_formats
                && key.3 == policy.request_terms
        };
        let mut cache = MATCHERS
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some((_, matcher)) = cache.iter().find(|(key, _)| same(key)) {
            return matcher.clone();
        }
        let matcher = std::sync::Arc::new(Matcher::build(policy));
        if cache.len() >= 4 {
            cache.remove(0);
        }
        let key = (
            policy.sensitive_terms.clone(),
            policy.name_only_terms.clone(),
            policy.sensitive_formats.clone(),
            policy.request_terms.clone(),
        );
        cache.push((key, matcher.clone()));
        matcher
    }

    fn build(policy: &FormPolicy) -> Matcher {
        let prepare = |terms: &[String]| -> HashMap<String, String> {
            terms
                .iter()
                .map(|t| (words(t).concat(), t.clone()))
                .filter(|(glued, _)| !glued.is_empty())
                .collect()
        };
        let everywhere = prepare(&policy.sensitive_terms);
        let names_only = prepare(&policy.name_only_terms);
        let mut requested = prepare(&policy.request_terms);
        requested.extend(names_only.clone());
        let longest_requested = requested.keys().map(String::len).max().unwrap_or(0);
        let longest = everywhere
            .keys()
            .chain(names_only.keys())
            .map(String::len)
            .max()
            .unwrap_or(0);
        let long = everywhere
            .iter()
            .map(|(g, t)| (g, t, false))
            .chain(names_only.iter().map(|(g, t)| (g, t, true)))
            .filter(|(glued, _, _)| {
                glued.len() >= SUBSTRING_MIN || SHORT_INNER_TERMS.contains(&glued.as_str())
            })
            .map(|(g, t, n)| (g.clone(), t.clone(), n))
            .collect();
        Matcher {
            everywhere,
            names_only,
            requested,
            longest_requested,
            long,
            skeletons: std::sync::OnceLock::new(),
            formats: policy
                .sensitive_formats
                .iter()
                .map(|f| f.to_lowercase())
                .collect(),
            longest,
        }
    }

    fn skeleton_maps(&self) -> &(HashMap<String, String>, HashMap<String, String>) {
        self.skeletons.get_or_init(|| {
            let map = |terms: &HashMap<String, String>| {
                terms
                    .iter()
                    .map(|(glued, term)| (skeleton(glued), term.clone()))
                    .collect()
            };
            (map(&self.everywhere), map(&self.names_only))
        })
    }

    /// The first policy term found in `text`.
    fn find(&self, text: &str, with_name_only: bool) -> Option<String> {
        let words = words(text);
        let lookup = |glued: &str, ascii: bool| -> Option<String> {
            let direct = self
                .everywhere
                .get(glued)
                .or_else(|| with_name_only.then(|| self.names_only.get(glued)).flatten());
            if let Some(term) = direct {
                return Some(term.clone());
            }
            if ascii {
                return None;
            }
            let (everywhere, names_only) = self.skeleton_maps();
            let key = skeleton(glued);
            everywhere
                .get(&key)
                .or_else(|| with_name_only.then(|| names_only.get(&key)).flatten())
                .cloned()
        };
        for start in 0..words.len() {
            let mut glued = String::new();
            for end in start..words.len() {
                glued.push_str(&words[end]);
                // Nothing longer can match; skeletons of non-ASCII text can be longer or
                // shorter than the text (but not by more than a factor of four).
                let limit = if glued.is_ascii() {
                    self.longest
                } else {
                    self.longest * 4
                };
                if glued.len() > limit {
                    break;
                }
                let Some(term) = lookup(&glued, glued.is_ascii()) else {
                    continue;
                };
                if end == start
                    && ORDINARY_AFTER.iter().any(|(word, after)| {
                        glued == *word
                            && words
                                .get(end + 1)
                                .is_some_and(|next| after.contains(&next.as_str()))
                    })
                {
                    continue;
                }
                return Some(term);
            }
        }
        // Long terms glued inside a longer word: "userpassword", "myapitoken" does not
        // count ("apitoken" is short of SUBSTRING_MIN only when the term is).
        for word in &words {
            for (glued, term, name_only) in &self.long {
                if (with_name_only || !name_only)
                    && word.len() > glued.len()
                    && word.contains(glued.as_str())
                {
                    return Some(term.clone());
                }
            }
        }
        None
    }

    /// [`Matcher::find`], and again with digit-for-letter spellings read as letters
    /// ("p4ssw0rd", "s3cr3t", "t0ken"): only runs that mix letters with such digits change, so
    /// ordinary numbers and words stay as they are.
    /// Names and titles (`with_name_only`) are also judged whole against
    /// [`WHOLE_NAME_TERMS`].
    fn find_any(&self, text: &str, with_name_only: bool) -> Option<String> {
        // Folded first, so full-width digits are digits to `deleet` too.
        let text = fold(text);
        let find = |text: &str| {
            self.find(text, with_name_only)
                .or_else(|| with_name_only.then(|| whole_name_term(text)).flatten())
        };
        find(&text).or_else(|| {
            let plain = deleet(&text)?;
            find(&plain)
        })
    }

    /// A request term or name-only term that `text` asks for: after a request word within
    /// [`REQUEST_REACH`] words with no negation before it, or as the closing "your …".
    fn find_requested(&self, text: &str) -> Option<String> {
        let words = words(text);
        let asked = |start: usize, end: usize| {
            if words
                .get(end + 1)
                .is_some_and(|next| PLACE_AFTER.contains(&next.as_str()))
            {
                return false;
            }
            let from = start.saturating_sub(REQUEST_REACH);
            if let Some(verb) = (from..start)
                .rev()
                .find(|&i| REQUEST_WORDS.contains(&words[i].as_str()))
            {
                let negated =
                    (verb.saturating_sub(3)..start).any(|i| NEGATIONS.contains(&words[i].as_str()));
                if !negated {
                    return true;
                }
            }
            end + 1 == words.len() && start > 0 && words[start - 1] == "your"
        };
        for start in 0..words.len() {
            let mut glued = String::new();
            for (end, word) in words.iter().enumerate().skip(start) {
                glued.push_str(word);
                if glued.len() > self.longest_requested {
                    break;
                }
                if let Some(term) = self.requested.get(&glued)
                    && asked(start, end)
                {
                    return Some(term.clone());
                }
            }
        }
        None
    }

    /// Prose: the terms that are safe in prose anywhere, and request and name-only terms
    /// where the text asks for them.
    fn find_in_prose(&self, text: &str) -> Option<String> {
        self.find_any(text, false).or_else(|| {
            let text = fold(text);
            self.find_requested(&text)
                .or_else(|| self.find_requested(&deleet(&text)?))
        })
    }

    /// Judges prose (the elicitation's message, the schema's own title and description)
    /// against the terms that are safe in prose.
    pub fn judge_prose(&self, text: &str, place: Place) -> Option<Hit> {
        self.find_in_prose(text).map(|term| Hit { term, place })
    }

    /// Judges one field's texts: name and title against every term, description against
    /// the terms that are safe in prose, format against the sensitive formats.
    pub fn judge(
        &self,
        name: &str,
        title: Option<&str>,
        description: Option<&str>,
        format: Option<&str>,
    ) -> Option<Hit> {
        if let Some(format) = format {
            let format = format.to_lowercase();
            if let Some(term) = self.formats.iter().find(|f| **f == format) {
                return Some(Hit {
                    term: term.clone(),
                    place: Place::Format,
                });
            }
        }
        let texts = [
            (Some(name), Place::Name, true),
            (title, Place::Title, true),
            (description, Place::Description, false),
        ];
        texts.into_iter().find_map(|(text, place, with_name_only)| {
            let text = text?;
            let term = if with_name_only {
                self.find_any(text, true)
            } else {
                self.find_in_prose(text)
            };
            term.map(|term| Hit { term, place })
        })
    }

    /// Judges a select field's choice titles (a choice labelled "Password" is a request for
    /// one).
    pub fn judge_choices<'a>(&self, titles: impl IntoIterator<Item = &'a str>) -> Option<Hit> {
        titles.into_iter().find_map(|title| {
            self.find_any(title, false).map(|term| Hit {
                term,
                place: Place::Choice,
            })
        })
    }
}
