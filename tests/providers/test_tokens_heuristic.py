"""How far ``len(text) // 4`` is from real cl100k token counts, on real Japanese and English chat.

The figures in ``docs/tokens.md`` come from this module; print them with::

    .venv/bin/python tests/providers/test_tokens_heuristic.py

Japanese: the utterances of the RealPersonaChat sample (``../shared/data/ja``);
English: the turns of the LoCoMo dev split (``../shared/data/locomo``).
"""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass
from pathlib import Path

import pytest

from omoide.providers.tokens import get_token_counter

DATA = Path(__file__).resolve().parents[3] / "shared" / "data"
JA_FILE = DATA / "ja" / "realpersonachat_sample_dialogues.json"
EN_FILE = DATA / "locomo" / "locomo_dev.json"


@dataclass(frozen=True)
class HeuristicError:
    corpus: str
    texts: int
    chars: int
    tokens: int
    estimate: int  # sum of len(text) // 4
    median_ratio: float  # median over texts of tokens / max(1, len // 4)
    p90_ratio: float

    @property
    def ratio(self) -> float:
        """Real tokens per estimated token over the whole corpus (1.0 = the rule is exact)."""
        return self.tokens / self.estimate

    @property
    def tokens_per_char(self) -> float:
        return self.tokens / self.chars


def japanese_texts() -> list[str]:
    dialogues = json.loads(JA_FILE.read_text(encoding="utf-8"))
    return [u["text"] for d in dialogues for u in d["utterances"] if u["text"].strip()]


def english_texts() -> list[str]:
    conversations = json.loads(EN_FILE.read_text(encoding="utf-8"))
    out: list[str] = []
    for conv in conversations:
        for key, turns in conv["conversation"].items():
            if key.startswith("session_") and isinstance(turns, list):
                out.extend(t["text"] for t in turns if t["text"].strip())
    return out


def measure(corpus: str, texts: list[str]) -> HeuristicError:
    counter = get_token_counter()
    tokens = [counter.count(t) for t in texts]
    estimates = [len(t) // 4 for t in texts]
    ratios = sorted(tok / max(1, est) for tok, est in zip(tokens, estimates, strict=True))
    return HeuristicError(
        corpus=corpus,
        texts=len(texts),
        chars=sum(len(t) for t in texts),
        tokens=sum(tokens),
        estimate=sum(estimates),
        median_ratio=statistics.median(ratios),
        p90_ratio=ratios[int(0.9 * (len(ratios) - 1))],
    )


def report() -> str:
    rows = [measure("Japanese (RealPersonaChat)", japanese_texts()), measure("English (LoCoMo dev)", english_texts())]
    lines = [
        "| corpus | texts | chars | cl100k tokens | len//4 | tokens ÷ estimate | median per text | p90 per text | tokens/char |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r.corpus} | {r.texts:,} | {r.chars:,} | {r.tokens:,} | {r.estimate:,} | {r.ratio:.2f} | "
            f"{r.median_ratio:.2f} | {r.p90_ratio:.2f} | {r.tokens_per_char:.2f} |"
        )
    return "\n".join(lines)


needs_data = pytest.mark.skipif(not (JA_FILE.exists() and EN_FILE.exists()), reason=f"sample data not found in {DATA}")


@needs_data
def test_len_div_4_underestimates_japanese_by_far() -> None:
    sample = japanese_texts()[:2000]
    r = measure("ja", sample)
    # Japanese chat is about one token per character: len//4 undercounts ~4x
    assert r.ratio > 3.0
    assert r.tokens_per_char > 0.8


@needs_data
def test_len_div_4_is_roughly_right_for_english() -> None:
    sample = english_texts()[:2000]
    r = measure("en", sample)
    assert 0.8 < r.ratio < 1.3


if __name__ == "__main__":
    print(report())
