//! What the host checks in a resource's or a prompt's content before any front end sees it:
//! a size cap over the whole result, strict base64 for blobs and images, and the bytes of an
//! image against the type it claims. Front ends show text as text, an image only when its
//! bytes are the image type they claim (from data checked here), and offer anything else for
//! saving; none of them ever renders content as HTML. Pure: values in, verdicts out.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde::Serialize;

/// The most content bytes (text as UTF-8, blobs decoded) one resource read or one prompt may
/// carry; more is refused with `content_too_large`, nothing of it shown.
pub const MAX_CONTENT_BYTES: usize = 8 * 1024 * 1024;

/// Why content was refused. Stable snake_case codes, as everywhere.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ContentFault {
    /// Over [`MAX_CONTENT_BYTES`].
    ContentTooLarge,
    /// A blob or image whose data is not standard base64.
    ContentNotBase64,
}

impl ContentFault {
    pub fn as_str(self) -> &'static str {
        match self {
            ContentFault::ContentTooLarge => "content_too_large",
            ContentFault::ContentNotBase64 => "content_not_base64",
        }
    }
}

/// How a front end may show one content item.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Display {
    /// Text, shown as text (never as HTML or markdown links).
    Text { text: String },
    /// An image whose bytes are the type claimed: `mime` is what the bytes are.
    Image { mime: &'static str, base64: String },
    /// Anything else: offered for saving, not rendered. `note` says why when the content
    /// claimed to be an image.
    Binary {
        size: usize,
        base64: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        note: Option<String>,
    },
}

/// Decodes base64 strictly (standard alphabet, padding required, no whitespace).
pub fn decode(data: &str) -> Result<Vec<u8>, ContentFault> {
    STANDARD
        .decode(data)
        .map_err(|_| ContentFault::ContentNotBase64)
}

/// The image type the bytes are, from their signature; only types a webview can show safely.
pub fn sniff_image(bytes: &[u8]) -> Option<&'static str> {
    if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if bytes.starts_with(&[0xFF, 0xD8, 0xFF]) {
        Some("image/jpeg")
    } else if bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a") {
        Some("image/gif")
    } else if bytes.len() >= 12 && &bytes[..4] == b"RIFF" && &bytes[8..12] == b"WEBP" {
        Some("image/webp")
    } else {
        None
    }
}

/// How to show base64 data that claims `claimed` as its MIME type (already size-checked).
pub fn display_blob(data: &str, claimed: Option<&str>) -> Result<Display, ContentFault> {
    let bytes = decode(data)?;
    let claims_image = claimed.is_some_and(|m| m.to_ascii_lowercase().starts_with("image/"));
    match sniff_image(&bytes) {
        Some(mime) if claims_image && claimed.is_some_and(|c| c.eq_ignore_ascii_case(mime)) => {
            Ok(Display::Image {
                mime,
                base64: data.to_string(),
            })
        }
        sniffed => {
            let note = claims_image.then(|| match sniffed {
                Some(actual) => format!(
                    "claims {} but the bytes are {actual}; not shown",
                    claimed.unwrap_or_default()
                ),
                None => format!(
                    "claims {} but the bytes are not an image Gatehouse shows; offered for saving instead",
                    claimed.unwrap_or_default()
                ),
            });
            Ok(Display::Binary {
                size: bytes.len(),
                base64: data.to_string(),
                note,
            })
        }
    }
}

/// Adds an item's size to a running total; refuses past the cap. Base64 counts as the bytes
/// it decodes to (three per four characters).
pub fn count(
    total: &mut usize,
    text_bytes: usize,
    base64_chars: usize,
) -> Result<(), ContentFault> {
    *total = total
        .saturating_add(text_bytes)
        .saturating_add(base64_chars / 4 * 3);
    if *total > MAX_CONTENT_BYTES {
        Err(ContentFault::ContentTooLarge)
    } else {
        Ok(())
    }
}

/// One item of a `resources/read` result as a front end may show it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ContentView {
    /// The URI the server gave this item (shown as text, never as a link).
    pub uri: String,
    /// The MIME type the server claimed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mime: Option<String>,
    pub display: Display,
}

/// One message of a `prompts/get` result as a front end may show it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MessageView {
    pub role: String,
    /// For embedded resources and resource links: the URI, as text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub uri: Option<String>,
    pub display: Display,
}

/// A refusal with what was refused, for the error people read.
pub type Refusal = (ContentFault, String);

fn text_of(value: &serde_json::Value, key: &str) -> Option<String> {
    value
        .get(key)
        .and_then(serde_json::Value::as_str)
        .map(str::to_string)
}

/// A resource content object (`{uri, mimeType, text | blob}`) as a view, counted in `total`.
fn resource_view(item: &serde_json::Value, total: &mut usize) -> Result<ContentView, Refusal> {
    let uri = text_of(item, "uri").unwrap_or_default();
    let mime = text_of(item, "mimeType");
    let at = |fault: ContentFault| (fault, format!("the content {uri:?}"));
    let display = if let Some(text) = item.get("text").and_then(serde_json::Value::as_str) {
        count(total, text.len(), 0).map_err(at)?;
        Display::Text {
            text: text.to_string(),
        }
    } else if let Some(blob) = item.get("blob").and_then(serde_json::Value::as_str) {
        count(total, 0, blob.len()).map_err(at)?;
        display_blob(blob, mime.as_deref()).map_err(at)?
    } else {
        Display::Text {
            text: String::new(),
        }
    };
    Ok(ContentView { uri, mime, display })
}

/// The contents of a `resources/read` result (as JSON), checked: at most
/// [`MAX_CONTENT_BYTES`] in all, every blob strict base64, images sniffed.
pub fn view_contents(contents: &[serde_json::Value]) -> Result<Vec<ContentView>, Refusal> {
    let mut total = 0;
    contents
        .iter()
        .map(|item| resource_view(item, &mut total))
        .collect()
}

/// The messages of a `prompts/get` result (as JSON), checked like resource contents.
pub fn view_messages(messages: &[serde_json::Value]) -> Result<Vec<MessageView>, Refusal> {
    let mut total = 0;
    let mut out = Vec::with_capacity(messages.len());
    for (index, message) in messages.iter().enumerate() {
        let role = text_of(message, "role").unwrap_or_default();
        let content = message.get("content").cloned().unwrap_or_default();
        let at = |fault: ContentFault| (fault, format!("message {}", index + 1));
        let kind = text_of(&content, "type").unwrap_or_default();
        let (uri, display) = match kind.as_str() {
            "text" => {
                let text = text_of(&content, "text").unwrap_or_default();
                count(&mut total, text.len(), 0).map_err(at)?;
                (None, Display::Text { text })
            }
            "image" | "audio" => {
                let data = text_of(&content, "data").unwrap_or_default();
                count(&mut total, 0, data.len()).map_err(at)?;
                let mime = text_of(&content, "mimeType");
                (None, display_blob(&data, mime.as_deref()).map_err(at)?)
            }
            "resource" => {
                let resource = content.get("resource").cloned().unwrap_or_default();
                let view = resource_view(&resource, &mut total).map_err(|(fault, _)| at(fault))?;
                (Some(view.uri), view.display)
            }
            "resource_link" => {
                let uri = text_of(&content, "uri").unwrap_or_default();
                count(&mut total, uri.len(), 0).map_err(at)?;
                (
                    Some(uri.clone()),
                    Display::Text {
                        text: format!("resource link: {uri}"),
                    },
                )
            }
            other => (
                None,
                Display::Text {
                    text: format!("(content of type {other:?}, not shown)"),
                },
            ),
        };
        out.push(MessageView { role, uri, display });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR";

    #[test]
    fn an_image_is_shown_only_when_its_bytes_are_what_it_claims() {
        let png = STANDARD.encode(PNG);
        assert_eq!(
            display_blob(&png, Some("image/png")).unwrap(),
            Display::Image {
                mime: "image/png",
                base64: png.clone()
            }
        );
        // HTML claiming to be a PNG: offered for saving, with why.
        let html = STANDARD.encode(b"<html><script>alert(1)</script></html>");
        match display_blob(&html, Some("image/png")).unwrap() {
            Display::Binary {
                note: Some(note),
                size,
                ..
            } => {
                assert!(note.contains("claims image/png"), "{note}");
                assert_eq!(size, 38);
            }
            other => panic!("{other:?}"),
        }
        // A PNG claiming to be a JPEG: not shown as either.
        match display_blob(&png, Some("image/jpeg")).unwrap() {
            Display::Binary {
                note: Some(note), ..
            } => assert!(note.contains("image/png")),
            other => panic!("{other:?}"),
        }
        // An SVG is never shown (it can carry script).
        let svg = STANDARD.encode(b"<svg onload=alert(1)></svg>");
        assert!(matches!(
            display_blob(&svg, Some("image/svg+xml")).unwrap(),
            Display::Binary { note: Some(_), .. }
        ));
        // Plain binary: no note.
        assert!(matches!(
            display_blob(
                &STANDARD.encode([0u8, 1, 2]),
                Some("application/octet-stream")
            )
            .unwrap(),
            Display::Binary {
                note: None,
                size: 3,
                ..
            }
        ));
    }

    #[test]
    fn base64_is_strict() {
        assert_eq!(decode("AAEC").unwrap(), [0, 1, 2]);
        for bad in [
            "%%% this is not base64 %%%",
            "AAE",
            "AA EC",
            "AAEC\n",
            "AAE=C",
        ] {
            assert_eq!(decode(bad), Err(ContentFault::ContentNotBase64), "{bad:?}");
        }
        assert_eq!(
            display_blob("!!", None),
            Err(ContentFault::ContentNotBase64)
        );
    }

    #[test]
    fn results_are_viewed_item_by_item_and_capped_as_a_whole() {
        use serde_json::json;
        let png = STANDARD.encode(PNG);
        let views = view_contents(&[
            json!({"uri": "demo://a", "mimeType": "text/html", "text": "<b>x</b>"}),
            json!({"uri": "demo://b", "mimeType": "image/png", "blob": png}),
        ])
        .unwrap();
        assert_eq!(
            views[0].display,
            Display::Text {
                text: "<b>x</b>".into()
            }
        );
        assert!(matches!(
            views[1].display,
            Display::Image {
                mime: "image/png",
                ..
            }
        ));
        let (fault, at) = view_contents(&[json!({"uri": "demo://c", "blob": "%%%"})]).unwrap_err();
        assert_eq!(
            (fault, at.as_str()),
            (ContentFault::ContentNotBase64, "the content \"demo://c\"")
        );
        let huge = "x".repeat(MAX_CONTENT_BYTES + 1);
        assert_eq!(
            view_contents(&[json!({"uri": "demo://h", "text": huge})])
                .unwrap_err()
                .0,
            ContentFault::ContentTooLarge
        );
        let messages = view_messages(&[
            json!({"role": "user", "content": {"type": "text", "text": "<script>x</script>"}}),
            json!({"role": "user", "content": {"type": "resource", "resource": {"uri": "demo://g", "text": "guide"}}}),
            json!({"role": "assistant", "content": {"type": "image", "data": png, "mimeType": "image/png"}}),
        ])
        .unwrap();
        assert_eq!(messages[1].uri.as_deref(), Some("demo://g"));
        assert!(matches!(messages[2].display, Display::Image { .. }));
        let big_image = STANDARD.encode(vec![0u8; MAX_CONTENT_BYTES + 3]);
        let (fault, at) = view_messages(&[
            json!({"role": "user", "content": {"type": "image", "data": big_image, "mimeType": "image/png"}}),
        ])
        .unwrap_err();
        assert_eq!(
            (fault, at.as_str()),
            (ContentFault::ContentTooLarge, "message 1")
        );
    }

    #[test]
    fn the_total_is_capped() {
        let mut total = 0;
        assert!(count(&mut total, MAX_CONTENT_BYTES - 3, 0).is_ok());
        assert!(count(&mut total, 0, 4).is_ok());
        assert_eq!(total, MAX_CONTENT_BYTES);
        assert_eq!(count(&mut total, 1, 0), Err(ContentFault::ContentTooLarge));
        let mut total = 0;
        assert_eq!(
            count(&mut total, usize::MAX, usize::MAX),
            Err(ContentFault::ContentTooLarge)
        );
        assert_eq!(ContentFault::ContentTooLarge.as_str(), "content_too_large");
    }
}
