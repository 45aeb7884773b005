#!/usr/bin/env python3
"""Writes the seeds of the store_tgz and store_zip fuzz targets (fuzz/seeds/store_tgz/*.tgz,
fuzz/seeds/store_zip/*.zip), byte for byte the same on every run (fixed times, owners and
modes), so they can be committed. Run from anywhere: python3 fuzz/seeds/make_store_seeds.py

The valid ones are small enough for the targets' small limits; the others each reach one
refusal (traversal, absolute path, link, case-only duplicate) so mutations start near it.
"""
import gzip
import io
import os
import tarfile
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))


def tgz(members):
    """members: (name, kind, data_or_target, mode); kind is 'file', 'dir' or 'symlink'."""
    raw = io.BytesIO()
    # USTAR: no pax headers with times, so the bytes do not depend on the machine.
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        for name, kind, data, mode in members:
            info = tarfile.TarInfo(name)
            info.mtime = 499162500  # npm's fixed tarball time (1985-10-26)
            info.mode = mode
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            if kind == "dir":
                info.type = tarfile.DIRTYPE
                tar.addfile(info)
            elif kind == "symlink":
                info.type = tarfile.SYMTYPE
                info.linkname = data
                tar.addfile(info)
            else:
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
    out = io.BytesIO()
    with gzip.GzipFile(fileobj=out, mode="wb", mtime=0, filename="") as gz:
        gz.write(raw.getvalue())
    return out.getvalue()


def zipped(members):
    """members: (name, data, unix_mode or None); a name ending in / is a directory."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        for name, data, mode in members:
            # ZipInfo keeps the name as given (ZipFile.write would strip a leading /).
            info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED if data else zipfile.ZIP_STORED
            info.create_system = 3  # Unix, so the mode below is read
            if mode is not None:
                info.external_attr = mode << 16
            z.writestr(info, data)
    return out.getvalue()


PKG = b'{"name":"@demo/server","version":"1.0.0","bin":{"demo":"bin/cli.js"}}\n'
TGZ = {
    "npm-package.tgz": tgz([
        ("package/package.json", "file", PKG, 0o644),
        ("package/bin/cli.js", "file", b"#!/usr/bin/env node\nrequire('../index.js');\n", 0o755),
        ("package/index.js", "file", b"module.exports = 1;\n", 0o644),
    ]),
    "npm-with-dirs.tgz": tgz([
        ("package", "dir", b"", 0o755),
        ("package/lib", "dir", b"", 0o755),
        ("package/lib/a.js", "file", b"exports.a = 1;\n", 0o644),
        ("package/package.json", "file", PKG, 0o644),
    ]),
    "dotdot.tgz": tgz([
        ("package/package.json", "file", PKG, 0o644),
        ("../x", "file", b"escaped\n", 0o644),
    ]),
    "symlink.tgz": tgz([
        ("package/package.json", "file", PKG, 0o644),
        ("package/link", "symlink", "../../etc/passwd", 0o777),
    ]),
    "case-duplicate.tgz": tgz([
        ("package/README.md", "file", b"a\n", 0o644),
        ("package/readme.md", "file", b"b\n", 0o644),
    ]),
}
ZIP = {
    "wheel.zip": zipped([
        ("demo_server/__init__.py", b"def main():\n    pass\n", 0o100644),
        ("demo_server/__main__.py", b"from . import main\nmain()\n", 0o100644),
        ("demo_server-1.0.0.dist-info/", b"", 0o40755),
        ("demo_server-1.0.0.dist-info/METADATA", b"Metadata-Version: 2.1\nName: demo-server\nVersion: 1.0.0\n", 0o100644),
        ("demo_server-1.0.0.dist-info/RECORD", b"", 0o100644),
        ("bin/run", b"#!/bin/sh\n", 0o100755),
    ]),
    "absolute.zip": zipped([
        ("manifest.json", b"{}\n", None),
        ("/etc/cron.d/x", b"* * * * * root true\n", None),
    ]),
    "dotdot.zip": zipped([
        ("server/index.js", b"1\n", None),
        ("server/../../x", b"escaped\n", None),
    ]),
    "symlink.zip": zipped([
        ("manifest.json", b"{}\n", None),
        ("link", b"/etc/passwd", 0o120777),
    ]),
}

for target, seeds in (("store_tgz", TGZ), ("store_zip", ZIP)):
    d = os.path.join(HERE, target)
    os.makedirs(d, exist_ok=True)
    for name, data in seeds.items():
        with open(os.path.join(d, name), "wb") as f:
            f.write(data)
