//! Archives are built here with the `tar` and `zip` writers, or patched by hand for the
//! malformed ones.

use std::fs;
use std::io::{Cursor, Write as _};
use std::path::Path;

use base64::Engine as _;
use gatehouse_store::{
    ArchiveKind, Artifact, Change, EntryKind, Limits, Store, StoreError, check_tgz, check_zip,
    normalize_path, verify_artifact,
};
use sha2::{Digest as _, Sha256, Sha512};

const KEY: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

fn sri(bytes: &[u8]) -> String {
    format!(
        "sha512-{}",
        base64::engine::general_purpose::STANDARD.encode(Sha512::digest(bytes))
    )
}

fn sha256(bytes: &[u8]) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(bytes)))
}

/// A raw tar header whose name is written byte for byte (the `tar` writer refuses `..`).
fn header(name: &[u8], entry_type: tar::EntryType, size: u64, mode: u32) -> tar::Header {
    let mut h = tar::Header::new_ustar();
    h.as_old_mut().name[..name.len()].copy_from_slice(name);
    h.set_entry_type(entry_type);
    h.set_size(size);
    h.set_mode(mode);
    h.set_mtime(0);
    h
}

enum T<'a> {
    File(&'a [u8], &'a [u8], u32),
    Dir(&'a [u8]),
    Link(&'a [u8], tar::EntryType, &'a str),
    Other(&'a [u8], tar::EntryType),
}

fn tgz(entries: &[T<'_>]) -> Vec<u8> {
    let gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    let mut b = tar::Builder::new(gz);
    for e in entries {
        match e {
            T::File(name, data, mode) => {
                let mut h = header(name, tar::EntryType::Regular, data.len() as u64, *mode);
                h.set_cksum();
                b.append(&h, *data).unwrap();
            }
            T::Dir(name) => {
                let mut h = header(name, tar::EntryType::Directory, 0, 0o755);
                h.set_cksum();
                b.append(&h, &[][..]).unwrap();
            }
            T::Link(name, ty, target) => {
                let mut h = header(name, *ty, 0, 0o777);
                h.set_link_name(target).unwrap();
                h.set_cksum();
                b.append(&h, &[][..]).unwrap();
            }
            T::Other(name, ty) => {
                let mut h = header(name, *ty, 0, 0o644);
                h.set_cksum();
                b.append(&h, &[][..]).unwrap();
            }
        }
    }
    b.into_inner().unwrap().finish().unwrap()
}

fn good_tgz() -> Vec<u8> {
    tgz(&[
        T::Dir(b"package/"),
        T::File(b"package/package.json", br#"{"name":"demo"}"#, 0o644),
        T::File(b"package/./dist/index.js", b"console.log(1)\n", 0o644),
        T::File(b"package/bin/cli.js", b"#!/usr/bin/env node\n", 0o4775),
    ])
}

enum Z<'a> {
    File(&'a str, &'a [u8], u32),
    Dir(&'a str),
    Symlink(&'a str, &'a str),
}

fn zip_bytes(entries: &[Z<'_>], method: zip::CompressionMethod) -> Vec<u8> {
    let mut w = zip::ZipWriter::new(Cursor::new(Vec::new()));
    for e in entries {
        let opts = zip::write::SimpleFileOptions::default().compression_method(method);
        match e {
            Z::File(name, data, mode) => {
                w.start_file(*name, opts.unix_permissions(*mode)).unwrap();
                w.write_all(data).unwrap();
            }
            Z::Dir(name) => w.add_directory(*name, opts).unwrap(),
            Z::Symlink(name, target) => w.add_symlink(*name, *target, opts).unwrap(),
        }
    }
    w.finish().unwrap().into_inner()
}

fn good_wheel() -> Vec<u8> {
    zip_bytes(
        &[
            Z::Dir("mcp_server_time/"),
            Z::File("mcp_server_time/__init__.py", b"def main(): pass\n", 0o644),
            Z::File("mcp_server_time-1.0.dist-info/RECORD", b"x\n", 0o644),
            Z::File("bin/run", b"#!/bin/sh\n", 0o6755),
        ],
        zip::CompressionMethod::Deflated,
    )
}

fn small() -> Limits {
    Limits {
        max_entries: 10,
        max_file_bytes: 1000,
        max_total_bytes: 2000,
        max_path_bytes: 200,
    }
}

fn store(dir: &Path) -> Store {
    Store::open_with_limits(dir.join("store"), small()).unwrap()
}

fn install_one(store: &Store, kind: ArchiveKind, bytes: &[u8]) -> Result<(), StoreError> {
    store
        .install(
            KEY,
            &[Artifact {
                dest: "",
                kind,
                expected: &sha256(bytes),
                bytes,
            }],
        )
        .map(drop)
}

/// Names in the store root but its lock file: nothing of a refused install may remain.
fn root_names(store: &Store) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(store.root())
        .unwrap()
        .map(|d| d.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name != ".lock")
        .collect();
    names.sort();
    names
}

#[cfg(unix)]
fn mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt as _;
    fs::symlink_metadata(path).unwrap().permissions().mode() & 0o7777
}

#[test]
fn verify_artifact_accepts_matching_digests_and_names_both_on_mismatch() {
    let bytes = b"tarball bytes";
    verify_artifact(bytes, &sri(bytes)).unwrap();
    verify_artifact(bytes, &sha256(bytes)).unwrap();

    let e = verify_artifact(b"other bytes", &sri(bytes)).unwrap_err();
    assert_eq!(e.code(), "artifact_mismatch");
    let msg = e.to_string();
    assert!(msg.contains(&sri(bytes)), "{msg}");
    assert!(msg.contains(&sri(b"other bytes")), "{msg}");

    let e = verify_artifact(b"other bytes", &sha256(bytes)).unwrap_err();
    assert_eq!(e.code(), "artifact_mismatch");
    assert!(e.to_string().contains(&sha256(b"other bytes")));

    for bad in [
        "md5-abc",
        "sha512-not base64!",
        "sha512-AAAA",
        "sha256:ABCDEF",
        &sha256(bytes).to_uppercase().replace("SHA256", "sha256"),
    ] {
        let e = verify_artifact(bytes, bad).unwrap_err();
        assert_eq!(e.code(), "artifact_digest_invalid", "{bad}");
    }
}

#[test]
fn good_npm_tarball_installs_and_verifies() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path());
    let bytes = good_tgz();
    let manifest = store
        .install(
            KEY,
            &[Artifact {
                dest: "",
                kind: ArchiveKind::NpmTgz,
                expected: &sri(&bytes),
                bytes: &bytes,
            }],
        )
        .unwrap();
    let paths: Vec<&str> = manifest.files.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(paths, ["bin/cli.js", "dist/index.js", "package.json"]);
    assert_eq!(manifest.files[2].size, 15);
    assert_eq!(
        manifest.files[2].sha256,
        hex::encode(Sha256::digest(br#"{"name":"demo"}"#))
    );
    assert!(manifest.files[0].executable);
    assert!(!manifest.files[1].executable);

    let tree = store.tree_path(KEY).unwrap();
    assert_eq!(
        fs::read(tree.join("dist/index.js")).unwrap(),
        b"console.log(1)\n"
    );
    #[cfg(unix)]
    {
        // setuid dropped; executable kept only as 0755.
        assert_eq!(mode(&tree.join("bin/cli.js")), 0o755);
        assert_eq!(mode(&tree.join("package.json")), 0o644);
    }
    assert_eq!(store.verify(KEY).unwrap(), manifest);
    // Installing again verifies the existing entry.
    assert_eq!(
        store
            .install(
                KEY,
                &[Artifact {
                    dest: "",
                    kind: ArchiveKind::NpmTgz,
                    expected: &sri(&bytes),
                    bytes: &bytes
                }]
            )
            .unwrap(),
        manifest
    );
    assert_eq!(root_names(&store), [KEY]);
}

#[test]
fn good_wheel_installs_and_verifies() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path());
    let bytes = good_wheel();
    install_one(&store, ArchiveKind::Zip, &bytes).unwrap();
    let manifest = store.verify(KEY).unwrap();
    let paths: Vec<&str> = manifest.files.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(
        paths,
        [
            "bin/run",
            "mcp_server_time-1.0.dist-info/RECORD",
            "mcp_server_time/__init__.py"
        ]
    );
    #[cfg(unix)]
    assert_eq!(mode(&store.tree_path(KEY).unwrap().join("bin/run")), 0o755);
    assert!(
        store
            .tree_path(KEY)
            .unwrap()
            .join("mcp_server_time/__init__.py")
            .is_file()
    );
}

#[test]
fn a_closure_unpacks_each_artifact_at_its_destination() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path());
    let top = good_tgz();
    let dep = tgz(&[T::File(b"package/index.js", b"module.exports=1\n", 0o644)]);
    let manifest = store
        .install(
            KEY,
            &[
                Artifact {
                    dest: "",
                    kind: ArchiveKind::NpmTgz,
                    expected: &sri(&top),
                    bytes: &top,
                },
                Artifact {
                    dest: "node_modules/left-pad",
                    kind: ArchiveKind::NpmTgz,
                    expected: &sri(&dep),
                    bytes: &dep,
                },
            ],
        )
        .unwrap();
    assert!(
        manifest
            .files
            .iter()
            .any(|f| f.path == "node_modules/left-pad/index.js")
    );
    store.verify(KEY).unwrap();

    // A destination outside the tree is refused like an archive path.
    let e = store
        .install(
            &KEY.replace('0', "1"),
            &[Artifact {
                dest: "../escape",
                kind: ArchiveKind::NpmTgz,
                expected: &sri(&dep),
                bytes: &dep,
            }],
        )
        .unwrap_err();
    assert_eq!(e.code(), "archive_unsafe_path");
}

#[test]
fn hash_mismatch_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path());
    let bytes = good_tgz();
    let e = store
        .install(
            KEY,
            &[Artifact {
                dest: "",
                kind: ArchiveKind::NpmTgz,
                expected: &sri(b"what the admin pinned"),
                bytes: &bytes,
            }],
        )
        .unwrap_err();
    assert_eq!(e.code(), "artifact_mismatch");
    assert!(root_names(&store).is_empty());
    assert_eq!(store.verify(KEY).unwrap_err().code(), "store_entry_missing");
}

#[test]
fn unsafe_tar_paths_are_refused_and_nothing_is_written() {
    // (A NUL ends a ustar name, so it is tested on zips and on `normalize_path`.)
    let cases: [&[u8]; 6] = [
        b"package/../x",
        b"../x",
        b"/etc/x",
        b"package/a\\b",
        b"C:/x",
        b"package/\x1b[31m",
    ];
    for name in cases {
        let bytes = tgz(&[
            T::File(b"package/ok.js", b"ok", 0o644),
            T::File(name, b"evil", 0o644),
        ]);
        let e = check_tgz(&bytes, &small()).unwrap_err();
        assert_eq!(e.code(), "archive_unsafe_path", "{name:?}: {e}");

        let dir = tempfile::tempdir().unwrap();
        let store = store(dir.path());
        let e = install_one(&store, ArchiveKind::NpmTgz, &bytes).unwrap_err();
        assert_eq!(e.code(), "archive_unsafe_path");
        assert!(root_names(&store).is_empty(), "{name:?}");
    }
    // A file beside the package directory, not in it.
    let bytes = tgz(&[T::File(b"top.js", b"x", 0o644)]);
    assert_eq!(
        check_tgz(&bytes, &small()).unwrap_err().code(),
        "archive_unsafe_path"
    );
}

#[test]
fn normalize_path_drops_dots_and_refuses_escapes() {
    let l = Limits::default();
    assert_eq!(normalize_path(b"./a//b/./c/", &l).unwrap(), "a/b/c");
    assert_eq!(normalize_path(b"a.b/..c/c..", &l).unwrap(), "a.b/..c/c..");
    for bad in [
        &b""[..],
        b".",
        b"./",
        b"a/../b",
        b"..",
        b"/a",
        b"a\\b",
        b"a\0b",
        b"D:/a",
        b"\xff",
    ] {
        let e = normalize_path(bad, &l).unwrap_err();
        assert_eq!(e.code(), "archive_unsafe_path", "{bad:?}");
    }
    let long = vec![b'a'; l.max_path_bytes + 1];
    assert_eq!(
        normalize_path(&long, &l).unwrap_err().code(),
        "archive_unsafe_path"
    );
}

#[test]
fn duplicate_and_clashing_paths_are_refused() {
    let cases: [&[T<'_>]; 4] = [
        &[
            T::File(b"package/a.js", b"1", 0o644),
            T::File(b"package/./a.js", b"2", 0o644),
        ],
        &[
            T::File(b"package/a.js", b"1", 0o644),
            T::File(b"package//a.js", b"2", 0o644),
        ],
        &[
            T::File(b"package/README", b"1", 0o644),
            T::File(b"package/readme", b"2", 0o644),
        ],
        &[
            T::File(b"package/lib", b"1", 0o644),
            T::File(b"package/lib/x.js", b"2", 0o644),
        ],
    ];
    for entries in cases {
        let e = check_tgz(&tgz(entries), &small()).unwrap_err();
        assert_eq!(e.code(), "archive_unsafe_path", "{e}");
    }
    // The same directory twice is harmless.
    let ok = tgz(&[
        T::Dir(b"package/lib/"),
        T::Dir(b"package/./lib"),
        T::File(b"package/lib/x.js", b"2", 0o644),
    ]);
    let entries = check_tgz(&ok, &small()).unwrap();
    assert_eq!(entries.len(), 2);
    assert_eq!(entries[0].kind, EntryKind::Dir);
}

#[test]
fn tar_links_and_special_files_are_refused() {
    for (ty, code) in [
        (tar::EntryType::Symlink, "archive_link"),
        (tar::EntryType::Link, "archive_link"),
    ] {
        let bytes = tgz(&[T::Link(b"package/evil", ty, "/etc/passwd")]);
        let e = check_tgz(&bytes, &small()).unwrap_err();
        assert_eq!(e.code(), code);
        assert!(e.to_string().contains("package/evil"), "{e}");
    }
    for ty in [
        tar::EntryType::Char,
        tar::EntryType::Block,
        tar::EntryType::Fifo,
    ] {
        let bytes = tgz(&[T::Other(b"package/dev", ty)]);
        assert_eq!(
            check_tgz(&bytes, &small()).unwrap_err().code(),
            "archive_entry_type"
        );
    }
}

#[test]
fn unsafe_zip_entries_are_refused() {
    let stored = zip::CompressionMethod::Stored;
    for name in ["../x", "/etc/x", "a\\b", "pkg/../../x", "a\0b", "./"] {
        let bytes = zip_bytes(&[Z::File(name, b"evil", 0o644)], stored);
        let e = check_zip(&bytes, &small()).unwrap_err();
        assert_eq!(e.code(), "archive_unsafe_path", "{name}: {e}");
    }
    let bytes = zip_bytes(&[Z::Symlink("pkg/link", "/etc/passwd")], stored);
    assert_eq!(
        check_zip(&bytes, &small()).unwrap_err().code(),
        "archive_link"
    );
    let bytes = zip_bytes(
        &[
            Z::File("pkg/a.py", b"1", 0o644),
            Z::File("pkg/./a.py", b"2", 0o644),
        ],
        stored,
    );
    assert_eq!(
        check_zip(&bytes, &small()).unwrap_err().code(),
        "archive_unsafe_path"
    );
    assert_eq!(
        check_zip(b"not a zip at all", &small()).unwrap_err().code(),
        "archive_malformed"
    );
    assert_eq!(
        check_tgz(b"not a tarball", &small()).unwrap_err().code(),
        "archive_malformed"
    );
}

/// Rewrites the uncompressed size of the first entry in its local header and in the
/// central directory.
fn patch_zip_size(bytes: &mut [u8], size: u32) {
    let find = |bytes: &[u8], sig: &[u8; 4]| bytes.windows(4).position(|w| w == sig).unwrap();
    let local = find(bytes, &[0x50, 0x4b, 0x03, 0x04]);
    bytes[local + 22..local + 26].copy_from_slice(&size.to_le_bytes());
    let central = find(bytes, &[0x50, 0x4b, 0x01, 0x02]);
    bytes[central + 24..central + 28].copy_from_slice(&size.to_le_bytes());
}

#[test]
fn a_zip_whose_declared_size_lies_is_refused() {
    // 100 kB of zeros deflate to a few hundred bytes; the headers claim 10.
    let zeros = vec![0u8; 100_000];
    let mut bytes = zip_bytes(
        &[Z::File("bomb.bin", &zeros, 0o644)],
        zip::CompressionMethod::Deflated,
    );
    assert!(bytes.len() < 2000);
    let honest = check_zip(&bytes, &small()).unwrap_err();
    assert_eq!(honest.code(), "archive_too_large");
    patch_zip_size(&mut bytes, 10);
    let e = check_zip(&bytes, &small()).unwrap_err();
    assert_eq!(e.code(), "archive_malformed", "{e}");

    // The same lie within the limits is refused too.
    let mut bytes = zip_bytes(
        &[Z::File("a.bin", &[7u8; 500], 0o644)],
        zip::CompressionMethod::Deflated,
    );
    check_zip(&bytes, &small()).unwrap();
    patch_zip_size(&mut bytes, 100);
    assert_eq!(
        check_zip(&bytes, &small()).unwrap_err().code(),
        "archive_malformed"
    );
}

#[test]
fn too_many_entries_are_refused() {
    let names: Vec<String> = (0..11).map(|i| format!("package/f{i}")).collect();
    let entries: Vec<T<'_>> = names
        .iter()
        .map(|n| T::File(n.as_bytes(), b"x", 0o644))
        .collect();
    assert_eq!(
        check_tgz(&tgz(&entries), &small()).unwrap_err().code(),
        "archive_too_large"
    );
    check_tgz(&tgz(&entries[..10]), &small()).unwrap();

    let zentries: Vec<Z<'_>> = names.iter().map(|n| Z::File(n, b"x", 0o644)).collect();
    let stored = zip::CompressionMethod::Stored;
    assert_eq!(
        check_zip(&zip_bytes(&zentries, stored), &small())
            .unwrap_err()
            .code(),
        "archive_too_large"
    );
    check_zip(&zip_bytes(&zentries[..10], stored), &small()).unwrap();
}

#[test]
fn oversized_files_and_totals_are_refused() {
    let big = vec![1u8; 1001];
    let fits = vec![1u8; 1000];
    let e = check_tgz(&tgz(&[T::File(b"package/big", &big, 0o644)]), &small()).unwrap_err();
    assert_eq!(e.code(), "archive_too_large");
    check_tgz(&tgz(&[T::File(b"package/fits", &fits, 0o644)]), &small()).unwrap();

    let three = tgz(&[
        T::File(b"package/a", &fits, 0o644),
        T::File(b"package/b", &fits, 0o644),
        T::File(b"package/c", &fits, 0o644),
    ]);
    let e = check_tgz(&three, &small()).unwrap_err();
    assert_eq!(e.code(), "archive_too_large");
    assert!(e.to_string().contains("total"), "{e}");

    // The total counts across the artifacts of one install.
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path());
    let two = tgz(&[
        T::File(b"package/a", &fits, 0o644),
        T::File(b"package/b", &fits, 0o644),
    ]);
    let artifact = |dest| Artifact {
        dest,
        kind: ArchiveKind::NpmTgz,
        expected: "",
        bytes: &two,
    };
    let expected = sri(&two);
    let e = store
        .install(
            KEY,
            &[
                Artifact {
                    expected: &expected,
                    ..artifact("")
                },
                Artifact {
                    expected: &expected,
                    ..artifact("node_modules/dep")
                },
            ],
        )
        .unwrap_err();
    assert_eq!(e.code(), "archive_too_large");
    assert!(root_names(&store).is_empty());
}

fn changed(e: StoreError) -> (String, Change) {
    match e {
        StoreError::StoreEntryChanged { path, change, .. } => (path, change),
        other => panic!("expected store_entry_changed, got {other}"),
    }
}

#[test]
fn a_tree_changed_after_install_is_refused_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path());
    let bytes = good_tgz();
    install_one(&store, ArchiveKind::NpmTgz, &bytes).unwrap();
    let tree = store.tree_path(KEY).unwrap();
    store.verify(KEY).unwrap();

    // Changed bytes.
    let file = tree.join("dist/index.js");
    fs::write(&file, b"console.log(2)\n").unwrap();
    let e = store.verify(KEY).unwrap_err();
    assert_eq!(e.code(), "store_entry_changed");
    assert!(e.to_string().contains("dist/index.js"), "{e}");
    assert_eq!(changed(e), ("dist/index.js".into(), Change::Modified));
    fs::write(&file, b"console.log(1)\n").unwrap();
    store.verify(KEY).unwrap();

    // Added file, in a new directory.
    fs::create_dir(tree.join("evil")).unwrap();
    fs::write(tree.join("evil/hook.js"), b"x").unwrap();
    assert_eq!(
        changed(store.verify(KEY).unwrap_err()),
        ("evil/hook.js".into(), Change::Added)
    );
    fs::remove_dir_all(tree.join("evil")).unwrap();
    store.verify(KEY).unwrap();

    // Missing file.
    fs::remove_file(tree.join("package.json")).unwrap();
    assert_eq!(
        changed(store.verify(KEY).unwrap_err()),
        ("package.json".into(), Change::Missing)
    );
    fs::write(tree.join("package.json"), br#"{"name":"demo"}"#).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        fs::set_permissions(tree.join("package.json"), fs::Permissions::from_mode(0o644)).unwrap();
        store.verify(KEY).unwrap();

        // A mode change (setuid here) counts as a change.
        fs::set_permissions(tree.join("bin/cli.js"), fs::Permissions::from_mode(0o4755)).unwrap();
        assert_eq!(
            changed(store.verify(KEY).unwrap_err()),
            ("bin/cli.js".into(), Change::Modified)
        );
        fs::set_permissions(tree.join("bin/cli.js"), fs::Permissions::from_mode(0o755)).unwrap();
        store.verify(KEY).unwrap();

        // A file replaced by a link to identical bytes is still a change.
        let outside = dir.path().join("outside.js");
        fs::write(&outside, b"console.log(1)\n").unwrap();
        fs::remove_file(&file).unwrap();
        std::os::unix::fs::symlink(&outside, &file).unwrap();
        assert_eq!(
            changed(store.verify(KEY).unwrap_err()),
            ("dist/index.js".into(), Change::Added)
        );
    }

    // Installing over a changed entry does not repair it; removing it and installing does.
    fs::write(tree.join("package.json"), b"{}").unwrap();
    assert_eq!(
        install_one(&store, ArchiveKind::NpmTgz, &bytes)
            .unwrap_err()
            .code(),
        "store_entry_changed"
    );
    store.remove(KEY).unwrap();
    assert!(root_names(&store).is_empty());
    install_one(&store, ArchiveKind::NpmTgz, &bytes).unwrap();
    store.verify(KEY).unwrap();
}

#[test]
fn a_damaged_manifest_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path());
    install_one(&store, ArchiveKind::Zip, &good_wheel()).unwrap();
    store.verify(KEY).unwrap();
    fs::write(store.root().join(KEY).join("manifest.json"), b"{").unwrap();
    assert_eq!(
        store.verify(KEY).unwrap_err().code(),
        "store_manifest_invalid"
    );
}

#[test]
fn keys_must_be_lower_case_sha256_hex() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path());
    for key in ["", "../x", &KEY.to_uppercase(), &KEY[1..], ".tmp-x"] {
        assert_eq!(
            store.verify(key).unwrap_err().code(),
            "store_key_invalid",
            "{key}"
        );
        assert_eq!(
            install_one_key(&store, key).unwrap_err().code(),
            "store_key_invalid"
        );
    }
}

fn install_one_key(store: &Store, key: &str) -> Result<(), StoreError> {
    let bytes = good_wheel();
    store
        .install(
            key,
            &[Artifact {
                dest: "",
                kind: ArchiveKind::Zip,
                expected: &sha256(&bytes),
                bytes: &bytes,
            }],
        )
        .map(drop)
}

#[test]
fn a_crashed_install_is_never_used_and_is_cleaned_on_open() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("store");
    {
        let store = Store::open_with_limits(&root, small()).unwrap();
        install_one(&store, ArchiveKind::Zip, &good_wheel()).unwrap();
    }
    // What a crash before the rename leaves: a complete-looking entry under a temporary name.
    let leftover = root.join(format!(".tmp-{KEY}-4242-0"));
    let other_key = KEY.replace('0', "f");
    fs::create_dir(&leftover).unwrap();
    fs::copy(
        root.join(KEY).join("manifest.json"),
        leftover.join("manifest.json"),
    )
    .unwrap();
    fs::create_dir(leftover.join("tree")).unwrap();
    // And one half-written.
    let half = root.join(format!(".tmp-{other_key}-4242-1"));
    fs::create_dir(&half).unwrap();
    fs::write(half.join("partial"), b"x").unwrap();

    let store = Store::open_with_limits(&root, small()).unwrap();
    assert!(!leftover.exists());
    assert!(!half.exists());
    assert_eq!(root_names(&store), [KEY]);
    assert!(!store.contains(&other_key).unwrap());
    assert_eq!(
        store.verify(&other_key).unwrap_err().code(),
        "store_entry_missing"
    );
    // The finished entry is untouched.
    store.verify(KEY).unwrap();

    // A leftover appearing while the store is open is not an entry either, and the next
    // install (holding the lock) removes it.
    let late = root.join(format!(".tmp-{other_key}-4242-2"));
    fs::create_dir(&late).unwrap();
    assert!(!store.contains(&other_key).unwrap());
    install_one_key(&store, &other_key).unwrap();
    store.verify(&other_key).unwrap();
    assert!(!late.exists());
    assert_eq!(root_names(&store), [KEY, other_key.as_str()]);
}

/// The store's lock held as another process's install holds it (locks belong to one open
/// file, so this excludes a `Store` of this process as it would another process's).
fn hold_lock(root: &Path) -> fs::File {
    let file = fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(root.join(".lock"))
        .unwrap();
    file.lock().unwrap();
    file
}

#[test]
fn an_install_in_progress_elsewhere_keeps_its_temporary_directory() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("store");
    Store::open_with_limits(&root, small()).unwrap();
    // Opening alone writes nothing, not even the lock file.
    assert_eq!(fs::read_dir(&root).unwrap().count(), 0);
    let in_progress = root.join(format!(".tmp-{KEY}-4242-0"));
    fs::create_dir(&in_progress).unwrap();
    fs::write(in_progress.join("partial"), b"x").unwrap();

    let lock = hold_lock(&root);
    // Opening never waits for the lock, and does not touch what the holder is writing.
    let store = Store::open_with_limits(&root, small()).unwrap();
    assert!(in_progress.join("partial").exists());
    assert!(!store.contains(KEY).unwrap());
    assert_eq!(store.verify(KEY).unwrap_err().code(), "store_entry_missing");

    // Once the holder is gone (finished or crashed), the directory is a leftover.
    drop(lock);
    Store::open_with_limits(&root, small()).unwrap();
    assert!(!in_progress.exists());
}

#[test]
fn concurrent_installs_of_one_key_both_succeed_and_install_it_once() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("store");
    let bytes = good_wheel();
    let expected = sha256(&bytes);
    // Separate stores, as two processes would have.
    let stores: Vec<Store> = (0..4)
        .map(|_| Store::open_with_limits(&root, small()).unwrap())
        .collect();
    let start = std::sync::Barrier::new(stores.len());
    let manifests: Vec<_> = std::thread::scope(|scope| {
        let handles: Vec<_> = stores
            .iter()
            .map(|store| {
                let (start, bytes, expected) = (&start, &bytes, &expected);
                scope.spawn(move || {
                    start.wait();
                    store.install(
                        KEY,
                        &[Artifact {
                            dest: "",
                            kind: ArchiveKind::Zip,
                            expected,
                            bytes,
                        }],
                    )
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let manifests: Vec<_> = manifests.into_iter().map(Result::unwrap).collect();
    assert!(manifests.iter().all(|m| *m == manifests[0]));
    assert!(!manifests[0].files.is_empty());
    assert_eq!(root_names(&stores[0]), [KEY]);
    stores[0].verify(KEY).unwrap();
}

#[test]
fn an_install_waiting_for_the_lock_uses_the_entry_installed_meanwhile() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("store");
    let other = dir.path().join("other");
    let store = Store::open_with_limits(&root, small()).unwrap();
    let lock = hold_lock(&root);
    std::thread::scope(|scope| {
        let waiting = scope.spawn(|| {
            let bytes = good_wheel();
            store.install(
                KEY,
                &[Artifact {
                    dest: "",
                    kind: ArchiveKind::Zip,
                    expected: &sha256(&bytes),
                    bytes: &bytes,
                }],
            )
        });
        // The holder's install: complete elsewhere, then renamed in, as an install does.
        let elsewhere = Store::open_with_limits(&other, small()).unwrap();
        install_one(&elsewhere, ArchiveKind::Zip, &good_wheel()).unwrap();
        fs::rename(other.join(KEY), root.join(KEY)).unwrap();
        drop(lock);
        let manifest = waiting.join().unwrap().unwrap();
        assert_eq!(manifest, store.verify(KEY).unwrap());
    });
    assert_eq!(root_names(&store), [KEY]);
}

#[test]
fn an_install_waiting_for_the_lock_refuses_an_entry_changed_meanwhile() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("store");
    let other = dir.path().join("other");
    let store = Store::open_with_limits(&root, small()).unwrap();
    let lock = hold_lock(&root);
    std::thread::scope(|scope| {
        let waiting = scope.spawn(|| install_one(&store, ArchiveKind::Zip, &good_wheel()));
        let elsewhere = Store::open_with_limits(&other, small()).unwrap();
        install_one(&elsewhere, ArchiveKind::Zip, &good_wheel()).unwrap();
        // What the other installer left is not trusted: it is verified like any entry.
        fs::write(other.join(KEY).join("tree").join("extra"), b"x").unwrap();
        fs::rename(other.join(KEY), root.join(KEY)).unwrap();
        drop(lock);
        assert_eq!(
            waiting.join().unwrap().unwrap_err().code(),
            "store_entry_changed"
        );
    });
}

#[test]
fn check_functions_return_sorted_entries_without_writing() {
    let entries = check_tgz(&good_tgz(), &Limits::default()).unwrap();
    let paths: Vec<&str> = entries.iter().map(|e| e.path.as_str()).collect();
    assert_eq!(
        paths,
        ["bin", "bin/cli.js", "dist", "dist/index.js", "package.json"]
    );
    assert_eq!(
        entries[1].kind,
        EntryKind::File {
            data: b"#!/usr/bin/env node\n".to_vec(),
            executable: true
        }
    );
    let entries = check_zip(&good_wheel(), &Limits::default()).unwrap();
    assert_eq!(entries.len(), 6);
}

#[test]
fn long_names_are_read_and_checked_like_short_ones() {
    let long = format!("package/{}/index.js", "d".repeat(120));
    // The writer stores a name over 100 bytes as a GNU long-name entry.
    let gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    let mut b = tar::Builder::new(gz);
    let mut h = tar::Header::new_gnu();
    h.set_size(2);
    h.set_mode(0o644);
    b.append_data(&mut h, &long, &b"ok"[..]).unwrap();
    let bytes = b.into_inner().unwrap().finish().unwrap();
    let entries = check_tgz(&bytes, &small()).unwrap();
    assert_eq!(entries[1].path, long["package/".len()..]);

    // A pax `path` record is checked too.
    let gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    let mut b = tar::Builder::new(gz);
    b.append_pax_extensions([("path", &b"package/../../etc/x"[..])])
        .unwrap();
    let mut h = header(b"package/innocent", tar::EntryType::Regular, 2, 0o644);
    h.set_cksum();
    b.append(&h, &b"ok"[..]).unwrap();
    let bytes = b.into_inner().unwrap().finish().unwrap();
    let e = check_tgz(&bytes, &small()).unwrap_err();
    assert_eq!(e.code(), "archive_unsafe_path");
    assert!(e.to_string().contains("etc/x"), "{e}");
}

/// A tarball whose headers alone (a pax record of `pax_bytes`) decompress past the cap.
fn tgz_with_pax(pax_bytes: usize) -> Vec<u8> {
    let mut builder = tar::Builder::new(Vec::new());
    let comment = vec![b'a'; pax_bytes];
    builder
        .append_pax_extensions([("comment", comment.as_slice())])
        .unwrap();
    let body = b"ok";
    let mut head = header(
        b"package/a.js",
        tar::EntryType::Regular,
        body.len() as u64,
        0o644,
    );
    head.set_cksum();
    builder.append(&head, &body[..]).unwrap();
    let tar = builder.into_inner().unwrap();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(&tar).unwrap();
    gz.finish().unwrap()
}

#[test]
fn a_tarball_that_decompresses_past_the_cap_in_its_headers_is_refused() {
    // Small headers pass under the same limits.
    check_tgz(&tgz_with_pax(100), &small()).unwrap();
    // The cap with small(): 2000 bytes of files plus 10 entries' headers and names (19,360).
    let e = check_tgz(&tgz_with_pax(20_000), &small()).unwrap_err();
    assert_eq!(e.code(), "archive_too_large", "{e}");
    assert!(e.to_string().contains("decompressed"), "{e}");
}

#[test]
fn of_many_changed_files_the_first_in_path_order_is_named() {
    // Enough files that the parallel check splits them between threads.
    let names: Vec<Vec<u8>> = (0..64)
        .map(|i| format!("package/f{i:03}.js").into_bytes())
        .collect();
    let mut entries = vec![T::Dir(b"package/")];
    entries.extend(names.iter().map(|n| T::File(n, b"x", 0o644)));
    let bytes = tgz(&entries);
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join("store")).unwrap();
    install_one(&store, ArchiveKind::NpmTgz, &bytes).unwrap();
    let tree = store.tree_path(KEY).unwrap();
    for i in [61, 40, 7] {
        fs::write(tree.join(format!("f{i:03}.js")), b"y").unwrap();
    }
    assert_eq!(
        changed(store.verify(KEY).unwrap_err()),
        ("f007.js".into(), Change::Modified)
    );
    fs::write(tree.join("f007.js"), b"x").unwrap();
    assert_eq!(
        changed(store.verify(KEY).unwrap_err()),
        ("f040.js".into(), Change::Modified)
    );
}
