"""onnxruntime sessions from a pre-optimised copy of the model, made once per model and version.

Building a session optimises the graph every time: for the packaged int8 MiniLM that is
folding the dequantised weights into float32 and fusing each layer's operators, about 0.15 s
of CPU in every process that embeds (the first ``ltm`` command of a session pays it). Here
the optimised graph is saved once, in the user's cache folder, and later sessions load it
with optimisations off: the same graph and the same kernels, so the same vectors, bit for bit
(``tests/unit_tests/test_model_cache.py`` checks it).

The copy lives in ``<cache>/onnx-<key>/`` (``model.onnx`` and its weights,
``model.onnx.data``, ~90 MB for MiniLM), where the key is a digest of the model's sha256,
onnxruntime's version, the machine type and this format: a changed model or onnxruntime
makes a new key, so a stale copy is never loaded. A folder is published whole by one
rename, so a process sees either no copy or a complete one, and two processes that race to
make it both succeed (one rename wins, the other drops its own). A cache folder that cannot
be written, a copy that fails to load, a folder of another user, a cache folder that another
user may write to (group or world writable without the sticky bit: they could swap a copy in
between the check and the load): the session is built from the model as before, nothing is
raised.

Copies do not pile up: loading a copy marks it used (its folder's time, at most once a day),
and making one deletes this user's other copies unused for :data:`UNUSED_DAYS` days (those of
an onnxruntime or model since upgraded away) and work folders left by crashed processes.

``LTM_MODEL_CACHE``: a folder to use instead of the default, or ``off``. Default:
``$XDG_CACHE_HOME/langchain-ltm`` (else ``~/.cache/langchain-ltm``), ``~/Library/Caches/
langchain-ltm`` on macOS, ``%LOCALAPPDATA%\\langchain-ltm\\cache`` on Windows.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
import sys
from pathlib import Path
from typing import Any, NamedTuple

__all__ = ["CACHE_ENV", "Built", "cache_folder", "copy_folder", "session", "stamp"]

CACHE_ENV = "LTM_MODEL_CACHE"
"""A folder for the optimised model copies, or ``off``; unset or empty: the default folder."""

FORMAT = 2  # bump when what is saved, or how it is loaded, changes (2: the probe file)
UNUSED_DAYS = 30
"""A copy no process has loaded for this many days is deleted when another copy is made."""
_DAY = 86_400.0
_LEFTOVER_SECONDS = 3_600.0  # a work folder this old belongs to no live process
_COPY_NAME = re.compile(r"onnx-[0-9a-f]{32}")  # copy_folder's names
_WORK_NAME = re.compile(r"\.making-[a-z0-9_]{8}|\.old-onnx-[0-9a-f]{32}-[0-9]+")  # _make, _publish
_GRAPH, _WEIGHTS, _PROBE = "model.onnx", "model.onnx.data", "probe.bin"
_PROBE_TOKENS = (101, 7592, 2088, 102)  # [CLS] hello world [SEP] in BERT's vocabulary
_PROVIDERS = ["CPUExecutionProvider"]
_FATAL = 4  # onnxruntime's log severities: 0 verbose, 1 info, 2 warning, 3 error, 4 fatal


def cache_folder(setting: str | os.PathLike[str] | bool = True) -> Path | None:
    """Where optimised copies go: ``setting`` (a folder, or False for none) or the default.

    ``True`` reads :data:`CACHE_ENV`, then the platform's user cache folder; ``None`` is
    returned when caching is off or no home folder is known.

    Raises:
        ValueError: ``setting`` is an empty path, or :data:`CACHE_ENV` is not ``off`` and not
            an absolute path.
    """
    if setting is False:
        return None
    if setting is not True:
        folder = os.fspath(setting) if isinstance(setting, (str, os.PathLike)) else None
        if not isinstance(folder, str) or not folder:
            raise ValueError(
                f"cache_dir must be a folder, True (the default) or False (none), got {setting!r}"
            )
        return _expand(folder, "cache_dir")
    value = os.environ.get(CACHE_ENV, "").strip()
    if value.lower() == "off":
        return None
    if value:
        path = _expand(value, CACHE_ENV)
        if not path.is_absolute():
            raise ValueError(f"{CACHE_ENV} must be an absolute folder or off, got {value!r}")
        return path
    try:
        home = Path.home()
    except (RuntimeError, KeyError):  # no HOME and no passwd entry: nowhere to keep it
        return None
    if os.name == "nt":
        base = os.environ.get("LOCALAPPDATA")
        return Path(base) / "langchain-ltm" / "cache" if base else None
    if sys.platform == "darwin":
        return home / "Library" / "Caches" / "langchain-ltm"
    xdg = os.environ.get("XDG_CACHE_HOME")
    return Path(xdg if xdg and os.path.isabs(xdg) else home / ".cache") / "langchain-ltm"


def _expand(folder: str, what: str) -> Path:
    """``folder`` with ``~`` expanded; ValueError naming ``what`` for an unknown ``~user``."""
    try:
        return Path(folder).expanduser()
    except RuntimeError as exc:  # "~someone" with no such user, or no home to expand
        raise ValueError(f"{what} {folder!r}: {exc}; give an absolute folder.") from exc


def copy_folder(root: Path, model_sha256: str, ort_version: str) -> Path:
    """The folder of the optimised copy of the model with ``model_sha256`` under ``root``."""
    machine = (
        os.uname().machine if hasattr(os, "uname") else os.environ.get("PROCESSOR_ARCHITECTURE")
    )
    key = f"{FORMAT}\n{model_sha256}\n{ort_version}\n{sys.platform}\n{machine}"
    return root / f"onnx-{hashlib.sha256(key.encode()).hexdigest()[:32]}"


class Built(NamedTuple):
    """A session, and the copy it was loaded from (``None``: built from the model's bytes).

    A session loaded from a copy maps the copy's weights file: a change to that file
    changes what it computes (or crashes it, for a truncated one). ``stamp`` is
    :func:`stamp` of the copy as it was loaded; a long-lived process compares it.
    """

    session: Any
    copy: Path | None = None
    stamp: tuple[int, ...] | None = None


def stamp(folder: Path) -> tuple[int, ...] | None:
    """What changes when a copy's files are written, truncated or replaced (two ``stat``)."""
    try:
        infos = [os.stat(folder / name) for name in (_GRAPH, _WEIGHTS)]
    except OSError:
        return None
    return tuple(v for i in infos for v in (i.st_ino, i.st_size, i.st_mtime_ns, i.st_ctime_ns))


def session(
    ort: Any,
    model: bytes,
    model_sha256: str,
    threads: int | None,
    root: Path | None,
    make: bool = True,
    arena: bool = True,
) -> Built:
    """An ``InferenceSession`` of ``model``: from its optimised copy under ``root`` if any.

    Args:
        ort: The imported ``onnxruntime`` module.
        model: The model's bytes (already checked by the caller).
        model_sha256: Their sha256 (part of the copy's key).
        threads: ``intra_op_num_threads`` (``None``: onnxruntime's default).
        root: The cache folder, or ``None`` not to use one.
        make: Make the copy when there is none (saving it costs 0.3-1 s more than the
            usual build); ``False``: the usual build, another process makes it.
        arena: onnxruntime's CPU memory arena (its default). ``False``: each run's memory
            is freed when it ends, as a long-lived process needs (the arena keeps the
            largest batch's memory for good); the same vectors.

    Raises:
        Whatever ``onnxruntime`` raises for a model it cannot load (never for the cache).
    """
    build = _options(ort, threads, arena)
    if root is None or not _safe_root(root):
        return Built(ort.InferenceSession(model, build, providers=_PROVIDERS))
    folder = copy_folder(root, model_sha256, ort.__version__)
    damaged = os.path.lexists(folder)
    if damaged:
        if not _owned(folder):  # not loaded, and not replaced either: the usual build
            return Built(ort.InferenceSession(model, build, providers=_PROVIDERS))
        graph = folder / _GRAPH
        loading = _options(ort, threads, arena)
        loading.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        before = stamp(folder)  # before loading: a change while it loads is seen too
        try:
            loaded = ort.InferenceSession(str(graph), loading, providers=_PROVIDERS)
            intact = (folder / _PROBE).read_bytes() == _probe(loaded)
        except Exception:  # damaged after it was published (or emptied): make it again
            pass
        else:
            if intact:  # weights that load but compute other numbers are damaged too
                _mark_used(folder)
                return Built(loaded, folder, before)
    made = _make(ort, model, threads, arena, root, folder, replace=damaged) if make else None
    if made is not None:
        return Built(made)  # built from the model's bytes: the files are not mapped
    return Built(ort.InferenceSession(model, build, providers=_PROVIDERS))


def _make(
    ort: Any,
    model: bytes,
    threads: int | None,
    arena: bool,
    root: Path,
    folder: Path,
    replace: bool,
) -> Any:
    """Build a session that saves its optimised graph, publish the copy; ``None`` if unwritable."""
    import shutil  # here: a process that finds its copy never makes one
    import tempfile

    try:
        root.mkdir(mode=0o700, parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(prefix=".making-", dir=root))
    except OSError:
        return None  # a read-only or missing cache folder: no copy, the usual build
    try:
        saving = _options(ort, threads, arena)
        # EXTENDED, not ALL: what ALL adds is layout changes for convolutions (none here)
        # that onnxruntime calls specific to the machine it ran on
        saving.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
        saving.optimized_model_filepath = str(work / _GRAPH)
        saving.add_session_config_entry(
            "session.optimized_model_external_initializers_file_name", _WEIGHTS
        )
        saving.add_session_config_entry(
            "session.optimized_model_external_initializers_min_size_in_bytes", "1024"
        )
        try:
            built = ort.InferenceSession(model, saving, providers=_PROVIDERS)
        except Exception:  # the save failed (disk full...) or the model is bad: the caller
            return None  # builds it the usual way (and reports a bad model as before)
        if (work / _GRAPH).is_file() and (work / _WEIGHTS).is_file():
            (work / _PROBE).write_bytes(_probe(built))  # what the copy must compute
            for name in (_GRAPH, _WEIGHTS, _PROBE):  # loading maps the weights: a write
                os.chmod(work / name, 0o444)  # to them would change a running encoder's
            _flush(work / _GRAPH, work / _WEIGHTS, work / _PROBE, work)
            _publish(work, folder, replace)
            _flush(root)
            _prune(root, keep=folder)
        return built
    finally:
        shutil.rmtree(work, ignore_errors=True)  # whatever was not published


def _flush(*paths: Path) -> None:
    """fsync files and folders, so a crash never leaves a published copy with torn data.

    The copy is trusted once it loads (hashing its 90 MB on every start would cost what
    it saves), so its bytes must be on disk before the rename that publishes it.
    """
    for path in paths:
        try:
            fd = os.open(path, os.O_RDONLY)
        except OSError:
            continue
        try:
            os.fsync(fd)
        except OSError:
            pass  # a file system without fsync for folders: as good as it gets
        finally:
            os.close(fd)


def _publish(work: Path, folder: Path, replace: bool) -> None:
    """Rename ``work`` to ``folder`` (one step); keep a copy already there unless ``replace``."""
    try:
        os.rename(work, folder)
        return
    except OSError:
        if not replace:
            return  # another process published the same copy first: keep theirs
    import shutil

    trash = folder.with_name(f".old-{folder.name}-{os.getpid()}")
    try:
        os.rename(folder, trash)
        os.rename(work, folder)
    except OSError:
        return
    finally:
        shutil.rmtree(trash, ignore_errors=True)


def _safe_root(root: Path) -> bool:
    """Whether copies under ``root`` can be trusted: a missing folder (made ``0o700``) or a
    folder of this user that no other user can write to (or that has the sticky bit, which
    stops others renaming what is not theirs)."""
    try:
        info = root.stat()
    except FileNotFoundError:
        return True
    except OSError:
        return False
    if not stat.S_ISDIR(info.st_mode):
        return False
    if not hasattr(os, "getuid"):  # Windows: the user's profile folder, by ACL
        return True
    if info.st_uid != os.getuid():
        return False
    shared = info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
    return not shared or bool(info.st_mode & stat.S_ISVTX)


def _mark_used(folder: Path) -> None:
    """Set the copy's folder time to now, at most once a day (what :func:`_prune` reads)."""
    import time

    try:
        if time.time() - folder.stat().st_mtime > _DAY:
            os.utime(folder)
    except OSError:
        pass  # a read-only cache: the copy is still used, only never pruned as unused


def _prune(root: Path, keep: Path) -> None:
    """Delete this user's copies unused for :data:`UNUSED_DAYS` and stale work folders.

    Only what this module makes is deleted: a folder named as :func:`copy_folder`,
    ``_make`` (``mkdtemp``) or ``_publish`` name theirs, holding nothing but the copy's two
    files. ``cache_dir`` may be a folder the user keeps other things in.
    """
    import shutil
    import time

    now = time.time()
    try:
        entries = list(os.scandir(root))
    except OSError:
        return
    for entry in entries:
        if entry.name == keep.name:
            continue
        if _COPY_NAME.fullmatch(entry.name):
            age = UNUSED_DAYS * _DAY
        elif _WORK_NAME.fullmatch(entry.name):
            age = _LEFTOVER_SECONDS
        else:
            continue  # not ours: never touched
        path = Path(entry.path)
        try:
            if not _owned(path) or now - path.lstat().st_mtime < age:
                continue
            if not {child.name for child in os.scandir(path)} <= {_GRAPH, _WEIGHTS, _PROBE}:
                continue  # something else lives in it: not a copy of ours
        except OSError:
            continue
        shutil.rmtree(path, ignore_errors=True)


def _owned(folder: Path) -> bool:
    """Whether ``folder`` is a folder of this user (a copy someone else put there is not used)."""
    try:
        info = folder.lstat()
    except OSError:
        return False
    if not stat.S_ISDIR(info.st_mode):  # a symlink or a file in its place
        return False
    return not hasattr(os, "getuid") or info.st_uid == os.getuid()


def _probe(session: Any) -> bytes:
    """The session's output for one fixed input, as bytes: a copy must compute the same.

    Loading a copy checks it against the bytes the session that made it computed (one
    inference of four tokens, ~2 ms): weights damaged on disk that still load would give
    other vectors, which would be stored for good. Every layer's weights take part (the
    token embeddings only for these four tokens).
    """
    import numpy as np

    ids = np.array([_PROBE_TOKENS], dtype=np.int64)
    given = {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": 0 * ids}
    feeds = {}
    for node in session.get_inputs():
        value = given.get(node.name, ids)
        feeds[node.name] = value.astype(np.int32) if "int32" in node.type else value
    output = session.run([session.get_outputs()[0].name], feeds)[0]
    return bytes(np.ascontiguousarray(output, dtype=np.float32).tobytes())


def _options(ort: Any, threads: int | None, arena: bool = True) -> Any:
    options = ort.SessionOptions()
    options.enable_cpu_mem_arena = arena  # math and kernels unchanged: the same vectors
    # onnxruntime's own log lines (colored, on stderr) never reach the user: a damaged copy
    # printed a kernel's ERROR while it was quietly made again. Its errors are still raised
    # as exceptions, which say what to do; only FATAL lines are left.
    options.log_severity_level = _FATAL
    # Idle worker threads wait instead of spinning: a spinning thread takes the core the
    # next operator (or another process) needs; the same threads and the same vectors.
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    if threads is not None:
        options.intra_op_num_threads = threads
    return options
