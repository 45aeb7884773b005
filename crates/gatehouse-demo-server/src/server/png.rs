//! A tiny PNG encoder for the demo logo. It writes deflate's "stored" (uncompressed) blocks,
//! so it needs no compression library, and the logo's bytes are computed rather than embedded
//! as an opaque constant.

/// Every PNG file starts with these eight bytes.
pub const SIGNATURE: [u8; 8] = [0x89, b'P', b'N', b'G', 0x0D, 0x0A, 0x1A, 0x0A];

/// The largest payload of one stored deflate block.
const MAX_STORED_BLOCK: usize = 0xFFFF;

/// Width and height of the demo logo, in pixels.
pub const LOGO_SIZE: u32 = 16;

const NAVY: [u8; 3] = [0x1E, 0x3A, 0x5F];
const STONE: [u8; 3] = [0xF2, 0xF2, 0xEE];
const GOLD: [u8; 3] = [0xE0, 0xA8, 0x2E];

/// The demo logo: a 16x16 gatehouse (two pillars, a lintel and a gold gate) on navy.
pub fn logo() -> Vec<u8> {
    let mut pixels = Vec::with_capacity((LOGO_SIZE * LOGO_SIZE) as usize);
    for y in 0..LOGO_SIZE {
        for x in 0..LOGO_SIZE {
            pixels.push(logo_pixel(x, y));
        }
    }
    // The pixel count matches by construction, so this always encodes.
    encode_rgb(LOGO_SIZE, LOGO_SIZE, &pixels).unwrap_or_default()
}

fn logo_pixel(x: u32, y: u32) -> [u8; 3] {
    let pillar = matches!(x, 3 | 4 | 11 | 12) && (3..=13).contains(&y);
    let lintel = (2..=3).contains(&y) && (2..=13).contains(&x);
    let gate = (5..=10).contains(&x) && (6..=13).contains(&y) && (x + y).is_multiple_of(2);
    if pillar || lintel {
        STONE
    } else if gate {
        GOLD
    } else {
        NAVY
    }
}

/// Encode an 8-bit RGB image; `pixels` holds `width * height` pixels, row by row. `None` when
/// the sizes do not match or are zero.
pub fn encode_rgb(width: u32, height: u32, pixels: &[[u8; 3]]) -> Option<Vec<u8>> {
    let (w, h) = (usize::try_from(width).ok()?, usize::try_from(height).ok()?);
    if w == 0 || h == 0 || w.checked_mul(h)? != pixels.len() {
        return None;
    }
    // Each scanline starts with its filter type; 0 is "none".
    let mut raw = Vec::with_capacity(h * (1 + 3 * w));
    for row in pixels.chunks(w) {
        raw.push(0);
        raw.extend(row.iter().flatten());
    }

    let mut header = Vec::with_capacity(13);
    header.extend(width.to_be_bytes());
    header.extend(height.to_be_bytes());
    // Bit depth 8, colour type 2 (RGB), deflate, adaptive filtering, no interlace.
    header.extend([8, 2, 0, 0, 0]);

    let mut png = SIGNATURE.to_vec();
    push_chunk(&mut png, b"IHDR", &header);
    push_chunk(&mut png, b"IDAT", &zlib_stored(&raw));
    push_chunk(&mut png, b"IEND", &[]);
    Some(png)
}

fn push_chunk(png: &mut Vec<u8>, kind: &[u8; 4], data: &[u8]) {
    // Chunks are far below 4 GiB here; saturating keeps this total anyway.
    let length = u32::try_from(data.len()).unwrap_or(u32::MAX);
    png.extend(length.to_be_bytes());
    let start = png.len();
    png.extend(kind);
    png.extend(data);
    let crc = crc32(&png[start..]);
    png.extend(crc.to_be_bytes());
}

/// A zlib stream of stored deflate blocks.
fn zlib_stored(data: &[u8]) -> Vec<u8> {
    // CMF 0x78 (deflate, 32 KiB window) and FLG 0x01 make the header a multiple of 31.
    let mut out = vec![0x78, 0x01];
    let mut blocks = data.chunks(MAX_STORED_BLOCK).peekable();
    if blocks.peek().is_none() {
        // An empty stream still needs one final block.
        out.extend([1, 0, 0, 0xFF, 0xFF]);
    }
    while let Some(block) = blocks.next() {
        let last = blocks.peek().is_none();
        out.push(u8::from(last));
        let length = u16::try_from(block.len()).unwrap_or(u16::MAX);
        out.extend(length.to_le_bytes());
        out.extend((!length).to_le_bytes());
        out.extend(block);
    }
    out.extend(adler32(data).to_be_bytes());
    out
}

/// CRC-32 (ISO 3309, as PNG uses it), bit by bit: the inputs are tiny.
pub fn crc32(data: &[u8]) -> u32 {
    let mut crc = u32::MAX;
    for byte in data {
        crc ^= u32::from(*byte);
        for _ in 0..8 {
            let mask = (crc & 1).wrapping_neg();
            crc = (crc >> 1) ^ (0xEDB8_8320 & mask);
        }
    }
    !crc
}

/// Adler-32, the zlib checksum.
pub fn adler32(data: &[u8]) -> u32 {
    const MOD: u32 = 65_521;
    let (mut a, mut b) = (1u32, 0u32);
    for byte in data {
        a = (a + u32::from(*byte)) % MOD;
        b = (b + a) % MOD;
    }
    (b << 16) | a
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checksums_match_their_reference_values() {
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
        assert_eq!(crc32(b"IEND"), 0xAE42_6082);
        assert_eq!(adler32(b"Wikipedia"), 0x11E6_0398);
    }

    #[test]
    fn the_logo_is_a_well_formed_16x16_png() {
        let png = logo();
        assert_eq!(png[..8], SIGNATURE);
        // IHDR comes first: length 13, then width and height.
        assert_eq!(png[8..16], [0, 0, 0, 13, b'I', b'H', b'D', b'R']);
        assert_eq!(png[16..20], 16u32.to_be_bytes());
        assert_eq!(png[20..24], 16u32.to_be_bytes());
        // Walk every chunk and check its CRC; the last one is IEND.
        let mut offset = 8;
        let mut kinds = Vec::new();
        while offset < png.len() {
            let length = u32::from_be_bytes(png[offset..offset + 4].try_into().unwrap()) as usize;
            let body = &png[offset + 4..offset + 8 + length];
            let crc = u32::from_be_bytes(
                png[offset + 8 + length..offset + 12 + length]
                    .try_into()
                    .unwrap(),
            );
            assert_eq!(crc32(body), crc);
            kinds.push(String::from_utf8(body[..4].to_vec()).unwrap());
            offset += 12 + length;
        }
        assert_eq!(offset, png.len());
        assert_eq!(kinds, ["IHDR", "IDAT", "IEND"]);
    }

    #[test]
    fn stored_blocks_split_large_data_and_keep_every_byte() {
        let data: Vec<u8> = (0..70_000u32).map(|i| (i % 251) as u8).collect();
        let stream = zlib_stored(&data);
        // Two blocks: 65535 bytes, then the rest, each with a 5-byte header.
        assert_eq!(stream.len(), 2 + 5 + 65_535 + 5 + (70_000 - 65_535) + 4);
        assert_eq!(stream[2], 0, "first block is not final");
        assert_eq!(stream[2 + 5 + 65_535], 1, "second block is final");
        assert_eq!(
            zlib_stored(&[]),
            [0x78, 0x01, 1, 0, 0, 0xFF, 0xFF, 0, 0, 0, 1]
        );
    }

    #[test]
    fn mismatched_sizes_are_refused() {
        assert!(encode_rgb(2, 2, &[[0; 3]; 3]).is_none());
        assert!(encode_rgb(0, 0, &[]).is_none());
    }
}
