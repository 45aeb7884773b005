//! The stdio framer and line classification (gatehouse-host's src/stdio/frame.rs, compiled
//! here on its own so the fuzz build does not bring the whole host). Input: one byte for the
//! line limit (255: none), one for the size of the pieces the bytes arrive in, then the
//! server's stdout. Properties: the frames are exactly those of splitting at `\n` with the
//! limit applied (whatever the pieces); every line is blank, a message, or a fault that says
//! where; a message read from a line is valid JSON that writes out and reads back as a message.
#![no_main]

#[path = "../../crates/gatehouse-host/src/stdio/frame.rs"]
mod frame;

use frame::{Frame, Framer, LineFault, classify_line};
use libfuzzer_sys::fuzz_target;

/// What the framer must produce: split at `\n`; a line over `max` bytes becomes `TooLong`; a
/// last line without a newline counts unless it is empty.
fn expected(stream: &[u8], max: usize) -> Vec<Frame> {
    let mut lines: Vec<&[u8]> = stream.split(|&b| b == b'\n').collect();
    if lines.last().is_some_and(|last| last.is_empty()) {
        lines.pop();
    }
    lines
        .into_iter()
        .map(|line| if line.len() > max { Frame::TooLong } else { Frame::Line(line.to_vec()) })
        .collect()
}

fuzz_target!(|data: &[u8]| {
    let [limit, piece, stream @ ..] = data else {
        return;
    };
    let max = if *limit == u8::MAX { usize::MAX } else { usize::from(*limit) };
    let piece = usize::from(*piece).max(1);

    let mut framer = Framer::new(max);
    let mut frames = Vec::new();
    let mut rest = stream;
    while !rest.is_empty() {
        let offered = &rest[..piece.min(rest.len())];
        let (used, frame) = framer.feed(offered);
        assert!(used <= offered.len() && (used > 0 || frame.is_some()), "no progress");
        rest = &rest[used..];
        frames.extend(frame);
    }
    frames.extend(framer.finish());
    assert_eq!(frames, expected(stream, max));

    for frame in frames {
        let Frame::Line(line) = frame else {
            continue;
        };
        match classify_line(&line) {
            Ok(None) => assert!(line.iter().all(u8::is_ascii_whitespace)),
            Ok(Some(message)) => {
                let text = std::str::from_utf8(&line).expect("a message is UTF-8");
                serde_json::from_str::<serde_json::Value>(text).expect("a message is JSON");
                let written = serde_json::to_vec(&message).expect("a message serializes");
                let again = classify_line(&written);
                assert!(matches!(again, Ok(Some(_))), "a message written out is not one: {again:?}");
            }
            Err(LineFault::NotUtf8 { valid_up_to }) => assert!(valid_up_to < line.len()),
            Err(fault @ (LineFault::NotJsonRpc { .. } | LineFault::NotJson { .. })) => {
                assert!(std::str::from_utf8(&line).is_ok());
                assert!(fault.describe(1).contains("line 1"));
            }
        }
    }
});
