"""Reading annotation text: never blocks, never reads without bound, never invents text.

Ground truth is text we encode ourselves: a decode is right when it gives back that text, and a
legacy decode of bytes in *another* encoding must be refused, not turned into mojibake.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from duetflow.bounded_yaml import YamlBombError, load_yaml
from duetflow.corpora.text import decode_text_as, implausible_text, read_bounded, read_text_as
from duetflow.errors import InputError

ENGLISH = [
    "Café au lait, s'il vous plaît — he said.",
    "I’m naïve about the Zoë thing… really.",
    "Müller paid 20 € for the ticket.",
    "Plain ASCII only, nothing fancy here.",
]
CHINESE = [
    "你好，今天我们聊一下环境治理吧。",
    "最近那个新海诚的电影你看了吗？",
    "爱数智慧语音采集二零一九年十一月六日",
]
TRADITIONAL = ["大家好，今天我們聊什麼？這個問題很重要。", "這部電影的導演是誰？"]


@pytest.mark.parametrize("text", ENGLISH)
def test_latin1_english_is_decoded_as_written(text: str) -> None:
    d = decode_text_as(text.encode("cp1252"), "t.txt", ["cp1252"], "en")
    assert (d.text, d.encoding) == (text, "utf-8" if text.isascii() else "cp1252")


@pytest.mark.parametrize("text", CHINESE)
def test_gbk_chinese_is_never_read_as_cp1252(text: str) -> None:
    with pytest.raises(InputError) as e:
        decode_text_as(text.encode("gbk"), "t.txt", ["cp1252"], "en")
    assert e.value.reason == "bad_encoding" and "cp1252" in str(e.value)


@pytest.mark.parametrize("text", CHINESE)
def test_gb18030_mandarin_is_decoded_as_written(text: str) -> None:
    d = decode_text_as(text.encode("gb18030"), "t.txt", ["gb18030"], "zh")
    assert (d.text, d.encoding) == (text, "gb18030")


@pytest.mark.parametrize("text", TRADITIONAL)
def test_big5_is_never_read_as_gb18030(text: str) -> None:
    data = text.encode("big5")
    try:
        wrong: str | None = data.decode("gb18030")  # what the old fallback produced
    except UnicodeDecodeError:
        wrong = None  # not even decodable: refused either way
    assert wrong != text
    with pytest.raises(InputError) as e:
        decode_text_as(data, "t.txt", ["gb18030"], "zh")
    assert e.value.reason == "bad_encoding"


def test_utf8_and_boms_need_no_fallback() -> None:
    text = CHINESE[0] + " " + ENGLISH[0]
    assert decode_text_as(text.encode(), "t", language="zh").encoding == "utf-8"
    assert decode_text_as(b"\xef\xbb\xbf" + text.encode(), "t").encoding == "utf-8-sig"
    assert decode_text_as(text.encode("utf-16"), "t").text == text


def test_generic_checks_refuse_controls_and_private_use() -> None:
    assert implausible_text("fine\ttext\r\n", None) is None
    assert implausible_text("bell\x07", None) is not None
    assert implausible_text("pua\ue000", None) is not None


def test_special_files_are_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    link = tmp_path / "zero"
    link.symlink_to("/dev/zero")
    for p in (fifo, link):
        with pytest.raises(InputError) as e:
            read_bounded(p)
        assert e.value.reason == "bad_file"
    big = tmp_path / "big.txt"
    big.write_bytes(b"x" * 2000)
    with pytest.raises(InputError) as e:
        read_text_as(big, max_bytes=1000)
    assert e.value.reason == "file_too_large"
    assert read_text_as(big, max_bytes=2000).text == "x" * 2000
    with pytest.raises(InputError) as e:
        read_bounded(tmp_path)
    assert e.value.reason == "missing_file"


# --- YAML ----------------------------------------------------------------------------------------

DOCS = [
    "a: 1\nb: [1, 2, {c: d}]\n",
    "base: &b {x: 1, y: 2}\nother: *b\nmore: [*b, *b]\n",
    "- 2025-01-02\n- null\n- 'text'\n",
    "",
]


@pytest.mark.parametrize("doc", DOCS)
def test_ordinary_documents_load_like_safe_load(doc: str) -> None:
    assert load_yaml(doc) == yaml.safe_load(doc)


def test_alias_bombs_and_recursion_are_refused() -> None:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 9)]
    bomb = "\n".join(lines)
    assert len(bomb) < 800
    with pytest.raises(YamlBombError, match="expands"):
        load_yaml(bomb)
    assert load_yaml("\n".join(lines[:3])) == yaml.safe_load("\n".join(lines[:3]))  # 9^3 is fine
    with pytest.raises(YamlBombError):
        load_yaml("&a [*a]")
    with pytest.raises(YamlBombError):
        load_yaml("[" * 5000 + "]" * 5000)
