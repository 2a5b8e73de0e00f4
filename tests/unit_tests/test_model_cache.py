"""The optimised model copy (``langchain_ltm._ort_cache``): same vectors, made once, safe.

Every test runs the real packaged MiniLM through onnxruntime with its own cache folder
(``tmp_path``); the vectors of a session loaded from the copy must equal, bit for bit, those
of a session that optimises the model itself (what every process did before the copy).
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from langchain_ltm import _ort_cache
from langchain_ltm._minilm import MiniLMEncoder

REFERENCE = json.loads(
    (Path(__file__).parents[1] / "data" / "minilm_reference.json").read_text(encoding="utf-8")
)
TEXTS = [
    "which language should answers be in?",
    "prefers answers in Spanish",
    "",
    "has two kids and a dog named Biscuit, walks to work, and hates early meetings",
    "x " * 400,  # truncated to max_length
    "Je préfère les réponses courtes.",
    *REFERENCE["sentences"],
]


SHORT = TEXTS[:4]  # for the tests about where the copy comes from (not its fidelity)


def before(texts: list[str], batch_size: int = 32) -> np.ndarray:
    """The vectors of a session as every load built it before the copy existed.

    onnxruntime's defaults (every optimisation, spinning threads) on the model's bytes, run
    by the encoder's own tokenization and pooling.
    """
    import onnxruntime

    encoder = MiniLMEncoder(cache_dir=False, batch_size=batch_size)
    plain = onnxruntime.InferenceSession(
        encoder.model_path.read_bytes(),
        onnxruntime.SessionOptions(),
        providers=["CPUExecutionProvider"],
    )
    encoder._runtime = dataclasses.replace(encoder._load(), session=plain)
    return encoder.encode(texts)


@pytest.fixture(scope="module")
def today() -> np.ndarray:
    return before(TEXTS)


@pytest.fixture(scope="module")
def short() -> np.ndarray:
    """:func:`today` for :data:`SHORT`."""
    return before(SHORT)


def copies(root: Path) -> list[Path]:
    return sorted(p for p in root.iterdir() if p.name.startswith("onnx-"))


def test_the_copy_gives_the_same_vectors_bit_for_bit(tmp_path: Path, today: np.ndarray) -> None:
    making = MiniLMEncoder(cache_dir=tmp_path).encode(TEXTS)  # optimises and saves
    (folder,) = copies(tmp_path)
    assert (folder / "model.onnx").is_file()
    assert (folder / "model.onnx.data").stat().st_size > 50_000_000  # the folded weights
    modes = {p.name: p.stat().st_mode & 0o777 for p in folder.iterdir()}
    assert modes == dict.fromkeys(["model.onnx", "model.onnx.data", "probe.bin"], 0o444)
    loaded = MiniLMEncoder(cache_dir=tmp_path).encode(TEXTS)  # loads the copy
    assert np.array_equal(making, today)
    assert np.array_equal(loaded, today)
    # the warm encoder's session (no memory arena): the same bits
    assert np.array_equal(
        MiniLMEncoder(cache_dir=tmp_path, memory_arena=False).encode(TEXTS), today
    )
    assert np.array_equal(MiniLMEncoder(cache_dir=False, memory_arena=False).encode(TEXTS), today)
    assert [p.name for p in tmp_path.iterdir()] == [folder.name]  # nothing left over
    # one by one (other shapes) and in small batches, too
    one = MiniLMEncoder(cache_dir=tmp_path, batch_size=1).encode(TEXTS)
    assert np.array_equal(one, before(TEXTS, batch_size=1))
    assert np.array_equal(MiniLMEncoder(cache_dir=False).encode(TEXTS), today)  # no copy


def spy_on_make(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """The folders ``_ort_cache._make`` is asked to make from now on (it still makes them)."""
    made: list[Path] = []
    real_make = _ort_cache._make

    def spy(*args: object, **kwargs: object) -> object:
        made.append(Path(str(args[4])))
        return real_make(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(_ort_cache, "_make", spy)
    return made


def test_a_later_process_loads_the_copy_without_optimising(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, short: np.ndarray
) -> None:
    MiniLMEncoder(cache_dir=tmp_path).embed_query("warm the copy")
    made = spy_on_make(monkeypatch)
    assert np.array_equal(MiniLMEncoder(cache_dir=tmp_path).encode(SHORT), short)
    assert made == []


def test_threads_do_not_change_the_vectors(tmp_path: Path, today: np.ndarray) -> None:
    MiniLMEncoder(cache_dir=tmp_path).embed_query("warm the copy")
    one = MiniLMEncoder(cache_dir=tmp_path, intra_op_num_threads=1).encode(TEXTS)
    assert np.array_equal(one, today)


@pytest.fixture
def tweaked(tmp_path: Path) -> Path:
    """A model folder: the packaged MiniLM with some weights changed (still a valid model)."""
    packaged = MiniLMEncoder(cache_dir=False)
    model = bytearray(packaged.model_path.read_bytes())
    for tenth in range(1, 10):  # weights all over the file (most words' rows go unused)
        model[len(model) * tenth // 10] ^= 0x01
    folder = tmp_path / "tweaked"
    folder.mkdir()
    (folder / "model.onnx").write_bytes(bytes(model))
    (folder / "tokenizer.json").write_bytes(packaged.tokenizer_path.read_bytes())
    return folder


def test_another_model_gets_its_own_copy(tmp_path: Path, tweaked: Path, short: np.ndarray) -> None:
    cache = tmp_path / "cache"
    assert np.array_equal(MiniLMEncoder(cache_dir=cache).encode(SHORT), short)
    changed = MiniLMEncoder(tweaked, cache_dir=cache).encode(SHORT)
    assert len(copies(cache)) == 2  # the packaged model's copy was not taken for it
    assert np.array_equal(changed, MiniLMEncoder(tweaked, cache_dir=False).encode(SHORT))
    assert not np.array_equal(changed, short)


def test_another_onnxruntime_version_gets_its_own_copy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, short: np.ndarray
) -> None:
    import onnxruntime

    MiniLMEncoder(cache_dir=tmp_path).embed_query("warm the copy")
    monkeypatch.setattr(onnxruntime, "__version__", "0.0.0-another")
    assert np.array_equal(MiniLMEncoder(cache_dir=tmp_path).encode(SHORT), short)
    assert len(copies(tmp_path)) == 2
    key = _ort_cache.copy_folder
    assert key(tmp_path, "a" * 64, "1.32.0") != key(tmp_path, "a" * 64, "1.33.0")
    assert key(tmp_path, "a" * 64, "1.32.0") != key(tmp_path, "b" * 64, "1.32.0")
    assert key(tmp_path, "a" * 64, "1.32.0") == key(tmp_path, "a" * 64, "1.32.0")


def test_an_unwritable_cache_folder_is_not_an_error(tmp_path: Path, short: np.ndarray) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    for unwritable in (blocker / "cache", blocker):  # under a file; a file itself
        assert np.array_equal(MiniLMEncoder(cache_dir=unwritable).encode(SHORT), short)
    assert blocker.read_text() == "not a folder"


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0, reason="root writes anyway")
def test_a_read_only_cache_folder_is_not_an_error(tmp_path: Path, short: np.ndarray) -> None:
    tmp_path.chmod(0o500)
    try:
        assert np.array_equal(MiniLMEncoder(cache_dir=tmp_path).encode(SHORT), short)
        assert list(tmp_path.iterdir()) == []
    finally:
        tmp_path.chmod(0o700)


def test_a_damaged_copy_is_made_again(tmp_path: Path, short: np.ndarray) -> None:
    MiniLMEncoder(cache_dir=tmp_path).embed_query("warm the copy")
    (folder,) = copies(tmp_path)
    weights = folder / "model.onnx.data"
    size = weights.stat().st_size
    weights.chmod(0o644)  # made read-only
    with open(weights, "r+b") as handle:
        handle.truncate(size // 2)  # what a crashed disk or a careless cleaner leaves
    assert np.array_equal(MiniLMEncoder(cache_dir=tmp_path).encode(SHORT), short)
    (again,) = copies(tmp_path)
    assert again == folder and weights.stat().st_size == size
    assert [p.name for p in tmp_path.iterdir()] == [folder.name]


def test_a_copy_of_random_weights_is_made_again_without_onnxruntime_s_log(
    tmp_path: Path, short: np.ndarray, capfd: pytest.CaptureFixture[str]
) -> None:
    """bug hunt: onnxruntime printed its colored ERROR line on stderr while the copy was remade."""
    MiniLMEncoder(cache_dir=tmp_path).embed_query("warm the copy")
    (folder,) = copies(tmp_path)
    weights = folder / "model.onnx.data"
    weights.chmod(0o644)  # made read-only
    weights.write_bytes(os.urandom(weights.stat().st_size))  # loads; its Gather fails
    capfd.readouterr()
    assert np.array_equal(MiniLMEncoder(cache_dir=tmp_path).encode(SHORT), short)
    assert capfd.readouterr().err == ""  # onnxruntime writes to the process's fd 2


def test_a_half_emptied_copy_is_made_again(tmp_path: Path, short: np.ndarray) -> None:
    MiniLMEncoder(cache_dir=tmp_path).embed_query("warm the copy")
    (folder,) = copies(tmp_path)
    (folder / "model.onnx").unlink()  # a cleaner that removed some files
    assert np.array_equal(MiniLMEncoder(cache_dir=tmp_path).encode(SHORT), short)
    assert sorted(p.name for p in folder.iterdir()) == [
        "model.onnx",
        "model.onnx.data",
        "probe.bin",
    ]
    assert [p.name for p in tmp_path.iterdir()] == [folder.name]


def test_a_copy_whose_weights_were_damaged_on_disk_is_made_again(
    tmp_path: Path, short: np.ndarray
) -> None:
    MiniLMEncoder(cache_dir=tmp_path).embed_query("warm the copy")
    (folder,) = copies(tmp_path)
    weights = folder / "model.onnx.data"
    data = bytearray(weights.read_bytes())
    for at in range(1000, len(data), 1 << 20):  # a flipped byte in every megabyte
        data[at] ^= 0xFF
    weights.chmod(0o644)  # made read-only
    weights.write_bytes(bytes(data))  # still loads, computes other numbers
    assert np.array_equal(MiniLMEncoder(cache_dir=tmp_path).encode(SHORT), short)
    assert weights.read_bytes() != bytes(data)  # made again from the pinned model
    assert np.array_equal(MiniLMEncoder(cache_dir=tmp_path).encode(SHORT), short)


def test_a_symlink_in_place_of_the_copy_is_not_followed(
    tmp_path: Path, tweaked: Path, short: np.ndarray, monkeypatch: pytest.MonkeyPatch
) -> None:
    import onnxruntime

    from langchain_ltm._minilm import MINILM_INT8_SHA256

    MiniLMEncoder(tweaked, cache_dir=tmp_path / "made").embed_query("make its copy")
    (elsewhere,) = copies(tmp_path / "made")  # a loadable copy of another model
    cache = tmp_path / "cache"
    cache.mkdir()
    link = _ort_cache.copy_folder(cache, MINILM_INT8_SHA256, onnxruntime.__version__)
    link.symlink_to(elsewhere, target_is_directory=True)
    making = spy_on_make(monkeypatch)
    assert np.array_equal(MiniLMEncoder(cache_dir=cache).encode(SHORT), short)
    assert making == [] and link.is_symlink()


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs chown")
def test_a_copy_of_another_user_is_not_loaded(
    tmp_path: Path, tweaked: Path, short: np.ndarray, monkeypatch: pytest.MonkeyPatch
) -> None:
    import onnxruntime

    from langchain_ltm._minilm import MINILM_INT8_SHA256

    MiniLMEncoder(tweaked, cache_dir=tmp_path / "made").embed_query("make its copy")
    (made,) = copies(tmp_path / "made")
    cache = tmp_path / "cache"
    cache.mkdir()
    planted = _ort_cache.copy_folder(cache, MINILM_INT8_SHA256, onnxruntime.__version__)
    made.rename(planted)  # another model's copy under the packaged model's name
    os.chown(planted, 4242, 4242)
    making = spy_on_make(monkeypatch)
    assert np.array_equal(MiniLMEncoder(cache_dir=cache).encode(SHORT), short)
    assert making == []  # nor replaced: the usual build, every time
    os.chown(planted, os.getuid(), os.getgid())  # the user's own folder is trusted, like the
    assert not np.array_equal(MiniLMEncoder(cache_dir=cache).encode(SHORT), short)  # venv


@pytest.mark.parametrize("mode", [0o770, 0o707, 0o777])
def test_a_cache_folder_others_may_write_to_is_not_used(
    tmp_path: Path, mode: int, short: np.ndarray, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "cache"
    MiniLMEncoder(cache_dir=cache).embed_query("make the copy")
    (folder,) = copies(cache)
    cache.chmod(mode)  # another user could swap the copy between the check and the load
    try:
        making = spy_on_make(monkeypatch)
        loads: list[object] = []
        real = _ort_cache._mark_used
        monkeypatch.setattr(_ort_cache, "_mark_used", lambda f: (loads.append(f), real(f)))
        assert np.array_equal(MiniLMEncoder(cache_dir=cache).encode(SHORT), short)
        assert making == [] and loads == []  # neither loaded nor made: the usual build
        cache.chmod(mode | 0o1000)  # the sticky bit: others cannot rename what is ours
        assert np.array_equal(MiniLMEncoder(cache_dir=cache).encode(SHORT), short)
        assert making == [] and loads == [folder]
    finally:
        cache.chmod(0o700)


def test_loading_a_copy_marks_it_used_at_most_once_a_day(tmp_path: Path, short: np.ndarray) -> None:
    MiniLMEncoder(cache_dir=tmp_path).embed_query("make the copy")
    (folder,) = copies(tmp_path)
    import time

    three_days_ago = time.time() - 3 * 86_400
    os.utime(folder, (three_days_ago, three_days_ago))
    assert np.array_equal(MiniLMEncoder(cache_dir=tmp_path).encode(SHORT), short)
    marked = folder.stat().st_mtime
    assert time.time() - marked < 600  # used now
    an_hour_ago = time.time() - 3_600
    os.utime(folder, (an_hour_ago, an_hour_ago))
    MiniLMEncoder(cache_dir=tmp_path).embed_query("load it again")
    assert folder.stat().st_mtime == pytest.approx(an_hour_ago)  # within a day: no write


def test_making_a_copy_deletes_copies_unused_for_a_month(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, short: np.ndarray
) -> None:
    import time

    import onnxruntime

    def aged(name: str, days: float) -> Path:
        path = tmp_path / name
        path.mkdir()
        (path / "model.onnx").write_text("an old copy")
        moment = time.time() - days * 86_400
        os.utime(path, (moment, moment))
        return path

    stale = aged("onnx-0123456789abcdef0123456789abcdef", _ort_cache.UNUSED_DAYS + 1)
    recent = aged("onnx-fedcba9876543210fedcba9876543210", _ort_cache.UNUSED_DAYS - 1)
    crashed = aged(".making-abc12_yz", 1 / 12)  # two hours: no live process makes it that long
    busy = aged(".making-def456gh", 0)  # another process making its copy right now
    other = aged("notes", 365)  # not ours: never touched
    monkeypatch.setattr(onnxruntime, "__version__", "0.0.0-upgraded")
    assert np.array_equal(MiniLMEncoder(cache_dir=tmp_path).encode(SHORT), short)
    left = sorted(p.name for p in tmp_path.iterdir())
    (made,) = [p for p in copies(tmp_path) if p not in (stale, recent)]
    assert left == sorted([made.name, recent.name, busy.name, other.name])
    assert not stale.exists() and not crashed.exists()


def test_processes_racing_to_make_the_copy_all_succeed(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    script = (
        "import sys\n"
        "from langchain_ltm._minilm import MiniLMEncoder\n"
        f"v = MiniLMEncoder(cache_dir={str(cache)!r}).encode({TEXTS[:4]!r})\n"
        "sys.stdout.write(v.tobytes().hex())\n"
    )
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
        )
        for _ in range(3)
    ]
    outs = [proc.communicate(timeout=180) for proc in procs]
    assert [proc.returncode for proc in procs] == [0, 0, 0], [err for _, err in outs]
    assert len({out for out, _ in outs}) == 1  # the same vectors in every process
    expected = before(TEXTS[:4]).tobytes().hex().encode()
    assert outs[0][0] == expected
    (folder,) = copies(cache)
    assert sorted(p.name for p in cache.iterdir()) == [folder.name]  # no half-made folders
    assert sorted(p.name for p in folder.iterdir()) == [
        "model.onnx",
        "model.onnx.data",
        "probe.bin",
    ]


def test_publishing_keeps_the_first_copy_and_leaves_nothing(tmp_path: Path) -> None:
    target = tmp_path / "onnx-key"
    for n in (1, 2):
        work = tmp_path / f".making-{n}"
        work.mkdir()
        (work / "model.onnx").write_text(f"copy {n}")
        _ort_cache._publish(work, target, replace=False)
        if work.exists():  # what _make does after publishing: drop what was not used
            for child in work.iterdir():
                child.unlink()
            work.rmdir()
    assert (target / "model.onnx").read_text() == "copy 1"
    work = tmp_path / ".making-3"
    work.mkdir()
    (work / "model.onnx").write_text("copy 3")
    _ort_cache._publish(work, target, replace=True)  # a damaged copy is replaced
    assert (target / "model.onnx").read_text() == "copy 3"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["onnx-key"]


# where the copy goes, and bad settings


def test_the_default_folder_follows_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(_ort_cache.CACHE_ENV, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    if sys.platform.startswith("linux"):
        assert _ort_cache.cache_folder() == tmp_path / "home" / ".cache" / "langchain-ltm"
        monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
        assert _ort_cache.cache_folder() == tmp_path / "xdg" / "langchain-ltm"
        MiniLMEncoder().embed_query("lives in Paris")
        assert len(copies(tmp_path / "xdg" / "langchain-ltm")) == 1
    monkeypatch.setenv(_ort_cache.CACHE_ENV, str(tmp_path / "chosen"))
    assert _ort_cache.cache_folder() == tmp_path / "chosen"
    for off in ("off", "OFF", " off "):
        monkeypatch.setenv(_ort_cache.CACHE_ENV, off)
        assert _ort_cache.cache_folder() is None
    assert _ort_cache.cache_folder(False) is None
    assert _ort_cache.cache_folder(tmp_path / "given") == tmp_path / "given"
    assert _ort_cache.cache_folder(str(tmp_path)) == tmp_path


def test_off_writes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(_ort_cache.CACHE_ENV, "off")
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert len(MiniLMEncoder().embed_query("lives in Paris")) == 384
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("bad", ["", b"/tmp/cache", 3, None, 1.5])
def test_bad_cache_dir_is_a_clear_error(bad: object) -> None:
    with pytest.raises(ValueError, match=r"cache_dir must be a folder, True .* or False"):
        MiniLMEncoder(cache_dir=bad)  # type: ignore[arg-type]


def test_a_relative_cache_variable_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(_ort_cache.CACHE_ENV, "relative/folder")
    with pytest.raises(ValueError, match="LTM_MODEL_CACHE must be an absolute folder or off"):
        MiniLMEncoder()


def test_ltm_says_what_is_wrong_with_the_variable(tmp_path: Path) -> None:
    from langchain_ltm import LongTermMemoryStore
    from tests.fakes import KeywordEmbeddings

    path = tmp_path / "memories.db"
    with LongTermMemoryStore.from_sqlite(path, KeywordEmbeddings(dims=384)) as store:
        store.remember("alice", "likes green tea")
    argv = ["recall", "--user", "alice", "--store", f"sqlite:///{path}", "what does she drink?"]
    env = {**os.environ, "LTM_HOME": str(tmp_path / "home"), "LTM_ENCODER_SERVER": "off"}
    done = subprocess.run(
        [sys.executable, "-m", "langchain_ltm.cli", *argv],
        capture_output=True,
        text=True,
        timeout=120,
        env={**env, _ort_cache.CACHE_ENV: "relative/folder"},
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert "LTM_MODEL_CACHE must be an absolute folder or off, got 'relative/folder'" in (
        done.stderr
    )
    cache = tmp_path / "cache"
    for _ in range(2):  # the first command makes the copy, the second loads it
        done = subprocess.run(
            [sys.executable, "-m", "langchain_ltm.cli", *argv],
            capture_output=True,
            text=True,
            timeout=120,
            env={**env, _ort_cache.CACHE_ENV: str(cache)},
            check=False,
        )
        assert done.returncode == 0, done.stderr
        assert "likes green tea" in done.stdout and done.stderr == ""
        assert len(copies(cache)) == 1


def test_pruning_leaves_folders_that_only_look_like_ours(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, short: np.ndarray
) -> None:
    """review1: cache_dir may be a folder the user keeps other things in (``~/models``):
    only the names this module makes (``onnx-`` + 32 hex, ``.making-`` from mkdtemp,
    ``.old-onnx-<32 hex>-<pid>``) may be deleted, not every ``onnx-*`` or ``.old-*``."""
    import time

    import onnxruntime

    def aged(name: str, days: float) -> Path:
        path = tmp_path / name
        path.mkdir()
        (path / "keep.txt").write_text("the user's own files")
        moment = time.time() - days * 86_400
        os.utime(path, (moment, moment))
        return path

    mine = [aged("onnx-runtime-notes", 60), aged(".old-dotfiles", 1), aged(".old-thesis", 2)]
    monkeypatch.setattr(onnxruntime, "__version__", "0.0.0-upgraded")
    assert np.array_equal(MiniLMEncoder(cache_dir=tmp_path).encode(SHORT), short)
    assert [p.name for p in mine if not p.exists()] == []


def test_a_cache_folder_of_an_unknown_user_is_a_clear_error(monkeypatch) -> None:
    monkeypatch.setenv("LTM_MODEL_CACHE", "~no_such_user_here_x9/cache")
    with pytest.raises(ValueError, match="LTM_MODEL_CACHE '~no_such_user_here_x9/cache'"):
        _ort_cache.cache_folder()
