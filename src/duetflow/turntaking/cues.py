"""Transcript cues the turn-taking analysis takes as evidence: cut-off marks and backchannel words.

Timing alone cannot separate every class (``docs/turn-taking.md``). A listener who comes in
200 ms before the current speaker stops may be a well-timed next speaker (a terminal overlap) or
may have cut the speaker off; a listener vocalisation inside the speaker's talk may be a
continuer ("yeah, right, I see") or a failed bid for the floor. Where the transcript says which,
it decides:

* :func:`is_cut_off`: the turn is marked as broken off: the label ``cut_off`` (an adapter's or a
  studio transcript's own mark), or text that *ends* in a break mark: ``--``, a dash (``—``,
  ``–``, Chinese ``——``), an ellipsis (``…``, ``...``, ``……``) or a word cut with a hyphen
  (``I thi-``). Only the end counts: DailyDialog-style text uses ``--`` mid-sentence as a dash
  ("it's our biggest -- sixteen'"), and bracketed tags are ignored (MagicData-RAMC's ``[+]`` marks
  overlapping speech, not a cut-off; ``[LAUGHTER]`` after the break does not hide it).
* :func:`stops_mid_clause`: the text stops on a conjunction or connective that opens a clause
  it never reaches ("... and", "... but", "... so", "……然后", "但是", "所以", "那个时候"; RAMC's
  ``[+]`` and other tags after it ignored): the speaker was going on, so a host turn that ends
  this way under the next speaker's onset was cut off, however short the overlap. One list per
  language (:data:`ENGLISH_TRAILING_CONNECTIVES`, :data:`MANDARIN_TRAILING_CONNECTIVES`); words
  that also close a clause ("I think so", "see you then", "I'd love to") are left out or
  guarded (:data:`ENGLISH_SO_CLOSERS`), and a turn ending in a question mark asked something
  ("and?", "or?") and yielded.
* :func:`lexical_class`: whether the words are all backchannel tokens (English and Mandarin
  lists below), carry other content, or cannot be judged (no words, tags only, another script).

Both are pure functions of one :class:`~duetflow.records.dialogue.Turn`.
"""

from __future__ import annotations

import functools
import re
from enum import StrEnum

from duetflow.records.dialogue import Turn

__all__ = [
    "CUT_OFF_LABEL",
    "ENGLISH_BACKCHANNEL_WORDS",
    "ENGLISH_SO_CLOSERS",
    "ENGLISH_TRAILING_CONNECTIVES",
    "MANDARIN_BACKCHANNEL_UNITS",
    "MANDARIN_TRAILING_CONNECTIVES",
    "Lexical",
    "is_cut_off",
    "lexical_class",
    "stops_mid_clause",
]

#: Turn label an adapter (or a studio transcript) sets on a turn the speaker broke off.
CUT_OFF_LABEL = "cut_off"
_TRUE = {"1", "true", "yes", "y"}

_TAG = re.compile(r"\[[^\]]*\]|<[^>]*>")  # [LAUGHTER], [+], [*], <noise>
_CLOSERS = " \t\r\n\"'”’」』)）]"
_CUT_OFF_END = re.compile(r"(?:--|[—–]|…|\.\.\.|(?<=\w)-)$")

#: English words that open a clause and cannot end one: a turn whose last word is one of these
#: stopped mid-clause. Left out on purpose: "then", "too", "though", "that", "to", "like" (each
#: ends complete clauses: "see you then", "it's fine though", "I'd love to").
ENGLISH_TRAILING_CONNECTIVES = frozenset(
    (
        "and",
        "but",
        "so",
        "or",
        "because",
        "cause",
        "'cause",
        "although",
        "whereas",
        "unless",
        "if",
        "nor",
        "plus",
    )
)
#: Words before a final "so" that make it a complete pro-form ("I think so", "I told you so",
#: "or so", "even so"): with one of these the turn is not read as stopping mid-clause.
ENGLISH_SO_CLOSERS = frozenset(
    (
        "think",
        "thought",
        "guess",
        "hope",
        "believe",
        "suppose",
        "expect",
        "imagine",
        "fear",
        "say",
        "said",
        "says",
        "told",
        "afraid",
        "seems",
        "seem",
        "appears",
        "do",
        "did",
        "not",
        "even",
        "more",
        "or",
        "so",
        "just",
        "why",
        "is",
        "very",
        "you",
        "me",
        "him",
        "her",
        "them",
        "us",
    )
)
#: Mandarin connectives a clause goes on after (然后 "and then", 但是 "but", 所以 "so",
#: 那个时候 "at that time", 因为 "because" ...): a turn ending on one stopped mid-clause.
#: Left out: 就是 (also "exactly", a backchannel) and 然后呢 (a question, it ends in 呢).
MANDARIN_TRAILING_CONNECTIVES = (
    "那个时候",
    "的时候",
    "然后",
    "但是",
    "可是",
    "所以",
    "因为",
    "而且",
    "并且",
    "不过",
    "如果",
    "要是",
    "虽然",
    "或者",
    "还是说",
    "就是说",
    "比如说",
    "比如",
    "于是",
    "那么",
    "还有",
    "然而",
    "以及",
    "的话",
)

#: Continuers, acknowledgements and reactive tokens (Yngve 1970; Schegloff 1982); lower case,
#: compared after repeated letters are collapsed ("mmm" = "mm" = "m", "yeahhh" = "yeah").
ENGLISH_BACKCHANNEL_WORDS = frozenset(
    (
        "yeah",
        "yea",
        "yes",
        "yep",
        "yup",
        "ya",
        "yah",
        "aye",
        "mm",
        "mhm",
        "mm-hm",
        "mm-hmm",
        "m-hm",
        "uh-huh",
        "uh",
        "huh",
        "um",
        "hm",
        "hmm",
        "oh",
        "ah",
        "aha",
        "ooh",
        "wow",
        "whoa",
        "gee",
        "right",
        "ok",
        "okay",
        "alright",
        "sure",
        "true",
        "exactly",
        "really",
        "indeed",
        "i",
        "see",
        "got",
        "it",
        "gotcha",
        "cool",
        "nice",
        "great",
        "good",
        "fine",
        "totally",
        "absolutely",
        "definitely",
        "of",
        "course",
        "that's",
        "thats",
        "so",
        "well",
        "no",
        "nope",
        "my",
        "god",
        "gosh",
        "man",
        "interesting",
        "wonderful",
        "lovely",
    )
)
#: Mandarin backchannel units (嗯, 对, 是的, 好的, 没错, 真的, 这样啊 ...); a text is a backchannel
#: when it is a sequence of these and sentence particles.
MANDARIN_BACKCHANNEL_UNITS = (
    "没错",
    "真的",
    "可以",
    "明白",
    "知道",
    "这样",
    "那样",
    "就是",
    "确实",
    "当然",
    "厉害",
    "天哪",
    "我的天",
    "是吗",
    "对吧",
    "好吧",
    "嗯",
    "恩",
    "哦",
    "噢",
    "喔",
    "啊",
    "呀",
    "哎",
    "诶",
    "欸",
    "唉",
    "对",
    "是",
    "好",
    "行",
    "嘛",
    "呢",
    "吧",
    "了",
    "的",
    "啦",
    "哈",
    "呵",
)
_ZH_BACKCHANNEL = re.compile("(?:" + "|".join(MANDARIN_BACKCHANNEL_UNITS) + ")+")
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_LATIN_WORD = re.compile(r"[a-z]+(?:['’-][a-z]+)*")
_OTHER_LETTER = re.compile(r"[^\W\d_a-z\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")


def _collapse(word: str) -> str:
    return re.sub(r"(.)\1+", r"\1", word.replace("’", "'"))


_EN_COLLAPSED = frozenset(_collapse(w) for w in ENGLISH_BACKCHANNEL_WORDS)


class Lexical(StrEnum):
    """What a vocalisation's words say about it."""

    BACKCHANNEL = "backchannel"  # every word is a continuer / acknowledgement token
    CONTENT = "content"  # at least one word that is not
    UNKNOWN = "unknown"  # no words (empty, tags only) or a script the lists do not cover


def _flag(value: object) -> bool:
    return str(value).strip().lower() in _TRUE


def is_cut_off(turn: Turn) -> bool:
    """The transcript marks ``turn`` as broken off (see the module docstring)."""
    if _flag(turn.labels.get(CUT_OFF_LABEL, "")):
        return True
    return _ends_broken_off(turn.text)


@functools.lru_cache(maxsize=8192)
def _ends_broken_off(text: str) -> bool:
    return bool(_CUT_OFF_END.search(_TAG.sub(" ", text).rstrip(_CLOSERS)))


_TRAILING_PUNCT = " \t\r\n\"'”’」』)）],，、。.!！;；:："
_ZH_TRAILING = re.compile("(?:" + "|".join(MANDARIN_TRAILING_CONNECTIVES) + ")$")


def stops_mid_clause(turn: Turn) -> bool:
    """``turn``'s text stops on a connective that opens a clause (see the module docstring)."""
    return _stops_mid_clause(turn.text)


@functools.lru_cache(maxsize=8192)
def _stops_mid_clause(raw: str) -> bool:
    text = _TAG.sub(" ", raw).lower().replace("’", "'").rstrip(_TRAILING_PUNCT)
    if not text or text.endswith(("?", "？")):
        return False
    if _CJK.search(text[-1]):
        return bool(_ZH_TRAILING.search(text))
    words = _LATIN_WORD.findall(text)
    if not words or not text.endswith(words[-1]):
        return False
    last = words[-1]
    if last not in ENGLISH_TRAILING_CONNECTIVES:
        return False
    return not (last == "so" and len(words) > 1 and words[-2] in ENGLISH_SO_CLOSERS)


def lexical_class(turn: Turn) -> Lexical:
    """Whether ``turn``'s words are all backchannel tokens (English and Mandarin lists)."""
    return _lexical(turn.text)


@functools.lru_cache(maxsize=8192)
def _lexical(raw: str) -> Lexical:
    text = _TAG.sub(" ", raw).lower()
    if _OTHER_LETTER.search(text):
        return Lexical.UNKNOWN  # a script without a list: timing decides
    words = _LATIN_WORD.findall(text)
    cjk = "".join(_CJK.findall(text))
    if not words and not cjk:
        return Lexical.UNKNOWN
    if any(_collapse(w) not in _EN_COLLAPSED for w in words):
        return Lexical.CONTENT
    if cjk and not _ZH_BACKCHANNEL.fullmatch(cjk):
        return Lexical.CONTENT
    return Lexical.BACKCHANNEL
