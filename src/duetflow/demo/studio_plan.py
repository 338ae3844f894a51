"""What a sample studio session says and when: its lines, topics, turn timings and their truth.

Pure planning, no audio: the English and Mandarin line banks and backchannels, each session's
topic, and :func:`plan_turns` (one 20–60 s dialogue: alternating turns, gaps around 300 ms,
backchannels inside long turns, an optional floor-taking interruption) with the truth rows the
tests measure turn detection against (:func:`truth_turns`). :mod:`duetflow.demo.studio`
renders and writes the sessions.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from typing import Any

import numpy as np

_EN = {
    "human": [
        "I was thinking we could go somewhere quiet this weekend.",
        "That sounds good, what would you suggest?",
        "Hmm, I am not sure about the weather though.",
        "Could we take the train instead of driving?",
        "Okay, and how long does it take to get there?",
        "Great, let us book it then.",
    ],
    "machine": [
        "There is a small lake town about two hours away.",
        "The forecast says it will be sunny on Saturday.",
        "Yes, the train leaves every hour from the central station.",
        "It takes about ninety minutes, with one change.",
        "I can look up a few places to stay near the water.",
        "Sure, shall I pick the morning train?",
    ],
}


_ZH = [
    "我们周末去公园走走吧。",
    "好啊，你想几点出发？",
    "上午十点怎么样？",
    "可以，我带点水果。",
    "那我来订午饭的地方。",
    "太好了，就这么定了。",
]


_BACKCHANNELS = {"en": ["mm-hm", "yeah", "right", "okay"], "zh": ["嗯", "对", "好的"]}


#: sidecar topics must be taxonomy topics (duetflow.topics); sessions cycle through a few
#: everyday ones (picked from the session id, no random draw) so that HH <-> HM matching of the
#: demo finds corpus HH windows on the same topics
TOPICS = ("tourism", "ordinary_life", "work")


def session_topic(sid: str) -> str:
    """The sample session's topic: stable per session id."""
    return TOPICS[zlib.crc32(sid.encode()) % len(TOPICS)]


DISCLOSURE_TEXT = "As an AI, I don't go on trips myself, but I can help you plan one."


@dataclass(frozen=True)
class Planned:
    speaker: int
    start: float
    end: float
    kind: str
    text: str


def plan_turns(
    rng: np.random.Generator, language: str, roles: tuple[str, str], interruption: bool = False
) -> tuple[list[Planned], list[dict[str, Any]]]:
    """Turn timings of one 20–60 s dialogue and the interruptions placed in it.

    Alternating turns of 1.4–4.6 s; gaps of 0.1–1.2 s around 300 ms; listener backchannels
    (overlapping speech) inside long turns; with ``interruption`` one transition in the middle
    overlaps by 0.3–0.45 s (a floor-taking interruption). Transitions never overlap by a few
    tens of ms, which the overlap analysis could count either way.
    """
    target = float(rng.uniform(24.0, 42.0))
    t = round(float(rng.uniform(0.4, 0.9)), 3)
    spk = 0
    out: list[Planned] = []
    interruptions: list[dict[str, Any]] = []
    k = 0
    while t < target:
        dur = round(float(rng.uniform(1.4, 4.6)), 3)
        text = _line(rng, language, roles[spk], k)
        out.append(Planned(spk, t, round(t + dur, 3), "turn", text))
        earliest = t + 0.5
        if dur > 2.8 and rng.random() < 0.4:  # listener backchannel inside a long turn
            bs = round(t + float(rng.uniform(0.9, dur - 1.4)), 3)
            bd = round(float(rng.uniform(0.3, 0.55)), 3)
            bc = _BACKCHANNELS[language][int(rng.integers(len(_BACKCHANNELS[language])))]
            out.append(Planned(1 - spk, bs, round(bs + bd, 3), "backchannel", bc))
            earliest = bs + bd + 0.5
        gap = float(np.clip(rng.normal(0.3, 0.2), 0.1, 1.2))
        if interruption and not interruptions and k >= 3 and earliest <= t + dur - 0.45:
            gap = -float(rng.uniform(0.3, 0.45))
        host_end = t + dur
        t = round(max(t + dur + gap, earliest), 3)
        if t < host_end - 0.25:
            interruptions.append({"time": t, "interrupter": 1 - spk})
        spk = 1 - spk
        k += 1
    out.sort(key=lambda p: (p.start, p.speaker))
    return out, interruptions


def _line(rng: np.random.Generator, language: str, role: str, k: int) -> str:
    if language == "zh":
        return _ZH[k % len(_ZH)]
    bank = _EN["machine" if role == "machine" else "human"]
    return bank[int(rng.integers(len(bank)))]


def truth_turns(plan: list[Planned], speakers: tuple[str, str]) -> list[dict[str, Any]]:
    return [
        {
            "speaker": speakers[p.speaker],
            "start": p.start,
            "end": p.end,
            "kind": p.kind,
            "text": p.text,
        }
        for p in plan
    ]
