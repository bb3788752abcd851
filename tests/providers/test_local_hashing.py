"""The deterministic hashing embedder."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from omoide.errors import ConfigError, InvalidInput
from omoide.providers.base import Embedder
from omoide.providers.local.hashing import HashingEmbedder, text_features


def test_is_an_embedder_with_a_versioned_model_id() -> None:
    e = HashingEmbedder()
    assert isinstance(e, Embedder)
    assert e.dimensions == 384
    assert e.model_id == "hashing:v1@384"
    assert HashingEmbedder(64).model_id == "hashing:v1@64"


@settings(deadline=None)
@given(st.text(max_size=400), st.sampled_from([16, 64, 384, 1024]))
def test_vectors_are_normalised_float32_and_deterministic(text: str, dims: int) -> None:
    e = HashingEmbedder(dims)
    a, b = e.embed_sync(text), HashingEmbedder(dims).embed_sync(text)
    assert a.dtype == np.float32
    assert a.shape == (dims,)
    assert abs(float(np.linalg.norm(a)) - 1.0) < 1e-5
    assert np.array_equal(a, b)


def test_vectors_are_the_same_in_another_process() -> None:
    code = (
        "from omoide.providers.local.hashing import HashingEmbedder;"
        "print(HashingEmbedder().embed_sync('今日は天気がいい and the sun shines').tobytes().hex())"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    here = HashingEmbedder().embed_sync("今日は天気がいい and the sun shines").tobytes().hex()
    assert out.stdout.strip() == here


async def test_documents_and_queries_embed_alike() -> None:
    e = HashingEmbedder()
    docs = await e.embed_documents(["hello world", "今日は天気"])
    assert len(docs) == 2
    assert np.array_equal(docs[0], await e.embed_query("hello world"))
    assert await e.embed_documents([]) == []


async def test_large_batches_match_small_ones() -> None:
    e = HashingEmbedder()
    texts = [f"message number {i} about topic {i % 7}" for i in range(100)]
    big = await e.embed_documents(texts)
    small = [v for i in range(0, 100, 10) for v in await e.embed_documents(texts[i : i + 10])]
    assert all(np.array_equal(a, b) for a, b in zip(big, small, strict=True))


async def test_similarity_follows_shared_words() -> None:
    e = HashingEmbedder()
    q = await e.embed_query("When did Caroline go to the LGBTQ support group?")
    docs = await e.embed_documents(
        [
            "I went to a LGBTQ support group yesterday and it was so powerful.",
            "I painted a sunrise with my kids last weekend.",
            "The stock market fell sharply on Monday.",
        ]
    )
    scores = [float(d @ q) for d in docs]
    assert scores[0] == max(scores)
    assert scores[0] > 0.3
    assert scores[2] < 0.15


async def test_japanese_similarity() -> None:
    e = HashingEmbedder()
    q = await e.embed_query("天気")
    docs = await e.embed_documents(["今日はいい天気ですね", "株価が下がった", "明日の天気予報は雨"])
    scores = [float(d @ q) for d in docs]
    assert min(scores[0], scores[2]) > scores[1] + 0.2


def test_features_damp_repetition_and_downweight_stopwords() -> None:
    once, thrice = text_features("apple"), text_features("apple apple apple")
    assert thrice["w:apple"] < 3 * once["w:apple"]
    assert text_features("the apple")["w:the"] < once["w:apple"]
    # inflections overlap through character trigrams
    assert set(text_features("painting")) & set(text_features("painted"))


def test_empty_text_gets_a_fixed_unit_vector() -> None:
    v = HashingEmbedder().embed_sync("")
    assert abs(float(np.linalg.norm(v)) - 1.0) < 1e-6
    assert np.array_equal(v, HashingEmbedder().embed_sync("   "))


@pytest.mark.parametrize("dims", [0, 8, 100_000, 3.5, True])
def test_bad_dimensions(dims: object) -> None:
    with pytest.raises(ConfigError, match="dimensions"):
        HashingEmbedder(dims)  # type: ignore[arg-type]


async def test_bad_input_is_a_typed_error() -> None:
    e = HashingEmbedder()
    with pytest.raises(InvalidInput, match="not a single string"):
        await e.embed_documents("hello")
    with pytest.raises(InvalidInput, match=r"texts\[1\] must be a string"):
        await e.embed_documents(["ok", 3])  # type: ignore[list-item]
    with pytest.raises(InvalidInput, match="must be a string"):
        await e.embed_query(None)  # type: ignore[arg-type]
