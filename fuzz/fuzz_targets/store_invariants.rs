//! What `check_tgz` and `check_zip` promise for every archive they accept
//! (crates/gatehouse-store/src/lib.rs, "Invariants"), shared by the store_tgz and store_zip
//! targets.

use std::collections::{BTreeSet, HashMap};

use gatehouse_store::{Entry, EntryKind, Limits, StoreError};

/// Small, so short inputs reach every limit: a few entries, a few KiB. The entry limit sits
/// above the valid seeds' counts (six entries at most) so mutations of them stay accepted.
pub const SMALL: Limits = Limits {
    max_entries: 8,
    max_file_bytes: 2048,
    max_total_bytes: 4096,
    max_path_bytes: 64,
};

/// Asserts the invariants on an accepted archive's entries. `limits` are the ones it was
/// checked with.
pub fn assert_entries(entries: &[Entry], limits: &Limits) {
    let mut seen = BTreeSet::new();
    let mut folded: HashMap<String, &str> = HashMap::new();
    let mut files = 0usize;
    let mut total = 0u64;
    for entry in entries {
        let path = entry.path.as_str();
        assert!(!path.is_empty(), "an entry with an empty path");
        assert!(!path.starts_with('/'), "absolute path {path:?}");
        assert!(!path.contains('\\'), "backslash in {path:?}");
        assert!(!path.contains('\0'), "NUL in {path:?}");
        assert!(
            !path.chars().any(char::is_control),
            "control character in {path:?}"
        );
        assert!(
            path.len() <= limits.max_path_bytes,
            "path {path:?} over the limit"
        );
        for segment in path.split('/') {
            assert!(
                !matches!(segment, "" | "." | ".."),
                "segment {segment:?} in {path:?}"
            );
        }
        let first = path.split('/').next().unwrap_or_default();
        assert!(
            !(first.len() == 2 && first.ends_with(':')),
            "drive prefix in {path:?}"
        );
        assert!(seen.insert(path), "{path:?} occurs twice");
        // The same folding the store uses: what it calls "differs only in case".
        if let Some(other) = folded.insert(path.to_lowercase(), path) {
            panic!("{path:?} and {other:?} differ only in case");
        }
        if let EntryKind::File { data, .. } = &entry.kind {
            files += 1;
            assert!(
                data.len() as u64 <= limits.max_file_bytes,
                "{path:?} holds {} bytes, over the limit",
                data.len()
            );
            total += data.len() as u64;
        }
    }
    assert!(
        total <= limits.max_total_bytes,
        "{total} bytes in all, over the limit"
    );
    assert!(
        files <= limits.max_entries,
        "{files} files, over the entry limit"
    );
    // Sorted by path, and every parent of an entry is a directory entry (no file/directory
    // clash, nothing written under a file).
    assert!(
        entries.windows(2).all(|w| w[0].path < w[1].path),
        "entries not sorted by path"
    );
    for entry in entries {
        let mut end = 0;
        while let Some(i) = entry.path[end..].find('/') {
            let parent = &entry.path[..end + i];
            let kind = entries.iter().find(|e| e.path == parent).map(|e| &e.kind);
            assert!(
                matches!(kind, Some(EntryKind::Dir)),
                "parent {parent:?} of {:?} is {kind:?}, not a directory",
                entry.path
            );
            end += i + 1;
        }
    }
}

/// Checks `data` with the small limits, asserts the invariants on what is accepted, and that
/// the real (larger) limits accept the same entries: raising a limit never turns an
/// acceptance into a refusal or changes what is unpacked.
pub fn exercise(data: &[u8], check: fn(&[u8], &Limits) -> Result<Vec<Entry>, StoreError>) {
    let Ok(entries) = check(data, &SMALL) else {
        return;
    };
    assert_entries(&entries, &SMALL);
    match check(data, &Limits::default()) {
        Ok(again) => assert!(again == entries, "the real limits unpack other entries"),
        Err(e) => panic!("accepted under the small limits, refused under the real ones: {e}"),
    }
}
