"""Turn timelines for sample dialogues, with the ground truth the filters are tested against.

A plan decides who speaks when before any audio exists, so the generator knows exactly where it
put every interruption and backchannel. Shapes:

* ``balanced`` — strict alternation, floor-transfer gaps in [−0.04, 0.8] s (overlaps under the
  50 ms ``turns.min_overlap_s``, so a clean dialogue has no overlap events at all);
* ``backchannels`` — balanced, plus short listener vocalisations (0.3–0.7 s) well inside long
  host turns; the host talks on for at least 1 s, so each is a backchannel, never an
  interruption;
* ``interruption`` — balanced, plus one floor-taking interruption: the listener starts in the
  middle of the host's turn (45–60 % into it), the host stops ``interruption_hold_s`` later
  (default 0.5–0.9 s: past any terminal-overlap tolerance, so timing alone shows it) with its
  text cut short and ending in ``cut_off_mark`` (if given), and the listener talks on;
* ``imbalanced`` — speaker A takes three turns for every one of B's (B's share 0.25).

Any shape can also carry ``terminal_overlaps``: that many speaker changes (at most) where the
next speaker comes in 0.10–0.25 s before the current turn ends and the current speaker completes
it, as in most natural transitions that overlap (TurnBench: ~151 ms). They are transitions and
must be kept; ``truth.json`` lists them with their overlap.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

SHAPES = ("balanced", "backchannels", "interruption", "imbalanced")


@dataclass
class PlannedTurn:
    speaker: str
    start: float
    end: float
    text: str
    backchannel: bool = False
    labels: dict[str, str] = field(default_factory=dict)

    @property
    def duration(self) -> float:
        return self.end - self.start


@dataclass
class Plan:
    shape: str
    speakers: tuple[str, str]
    turns: list[PlannedTurn]
    interruptions: list[dict[str, Any]]
    backchannels: list[dict[str, Any]]
    terminal_overlaps: list[dict[str, Any]] = field(default_factory=list)

    @property
    def end(self) -> float:
        return max(t.end for t in self.turns)

    def utterance_share(self) -> dict[str, float]:
        """Share of non-backchannel turns per speaker (what the balance filter measures)."""
        main = [t for t in self.turns if not t.backchannel]
        return {s: round(sum(t.speaker == s for t in main) / len(main), 4) for s in self.speakers}


def _r(x: float, decimals: int) -> float:
    return round(float(x), decimals)


def cut_short(text: str, mark: str) -> str:
    """``text`` broken off about half-way, ending in the transcript's cut-off ``mark``."""
    if not mark:
        return text
    words = text.split()
    if len(words) > 1:
        head = " ".join(words[: max(1, len(words) // 2)])
    else:
        head = text[: max(1, len(text) // 2)]
    return head.rstrip(",.?!;:，。？！；：、 ") + mark


#: overlap of a planned terminal overlap (s): the next speaker's early start
TERMINAL_OVERLAP_S = (0.10, 0.25)


def plan_dialogue(
    rng: np.random.Generator,
    speakers: tuple[str, str],
    target_s: float,
    shape: str,
    texts: Sequence[str],
    backchannel_texts: Sequence[str],
    *,
    decimals: int = 3,
    start_s: float = 0.5,
    terminal_overlaps: int = 0,
    interruption_hold_s: tuple[float, float] = (0.5, 0.9),
    cut_off_mark: str = "",
) -> Plan:
    """A turn timeline of about ``target_s`` seconds in one of :data:`SHAPES`.

    ``terminal_overlaps``: up to that many speaker changes overlap by 0.10–0.25 s (see the
    module docstring); ``interruption_hold_s``: how long an interrupted host talks on over the
    interrupter; ``cut_off_mark``: appended to the interrupted host's (shortened) text.
    """
    if shape not in SHAPES:
        raise ValueError(f"unknown shape {shape!r}; known: {SHAPES}")
    a, b = speakers
    other = {a: b, b: a}
    turns: list[PlannedTurn] = []
    interruptions: list[dict[str, Any]] = []
    backchannels: list[dict[str, Any]] = []
    t = start_s
    cur = a
    k = 0
    forced_start: float | None = None
    n_bc_wanted = 3 if shape == "backchannels" else 0
    interrupt_turn = 3 if shape == "interruption" else -1
    terminal: list[dict[str, Any]] = []
    pending_terminal = False

    def text() -> str:
        return str(texts[int(rng.integers(len(texts)))])

    while True:
        host_bc = n_bc_wanted > 0 and k % 2 == 1
        long_turn = host_bc or k == interrupt_turn
        dur = float(rng.uniform(4.2, 6.0)) if long_turn else float(rng.uniform(1.8, 5.0))
        start = forced_start if forced_start is not None else t
        forced_start = None
        end = start + dur
        if end > target_s and len(turns) >= 6:
            break
        turn = PlannedTurn(cur, _r(start, decimals), _r(end, decimals), text())
        if pending_terminal:
            prev = max((x for x in turns if x.speaker != cur and not x.backchannel),
                       key=lambda x: x.end)  # fmt: skip
            terminal.append(
                {
                    "time": turn.start,
                    "speaker": cur,
                    "overlap_s": _r(prev.end - turn.start, decimals),
                }
            )
            pending_terminal = False
        turns.append(turn)
        nxt = (a if (k + 1) % 4 != 3 else b) if shape == "imbalanced" else other[cur]
        if host_bc:
            bstart = start + dur * float(rng.uniform(0.3, 0.45))
            bdur = float(rng.uniform(0.3, 0.7))
            bc_text = str(backchannel_texts[int(rng.integers(len(backchannel_texts)))])
            bc = PlannedTurn(
                other[cur], _r(bstart, decimals), _r(bstart + bdur, decimals), bc_text, True
            )
            turns.append(bc)
            backchannels.append({"time": bc.start, "speaker": bc.speaker})
            n_bc_wanted -= 1
        if k == interrupt_turn:
            onset = start + dur * float(rng.uniform(0.45, 0.6))
            turn.end = _r(onset + float(rng.uniform(*interruption_hold_s)), decimals)
            turn.text = cut_short(turn.text, cut_off_mark)
            forced_start = _r(onset, decimals)
            interruptions.append(
                {
                    "time": forced_start,
                    "interrupter": other[cur],
                    "host_talks_on_s": _r(turn.end - forced_start, decimals),
                    "cut_off_mark": cut_off_mark,
                }
            )
            nxt = other[cur]
            t = end
        elif nxt != cur and len(terminal) < terminal_overlaps and k >= 1 and rng.random() < 0.6:
            gap = -float(rng.uniform(*TERMINAL_OVERLAP_S))
            pending_terminal = True
            t = end + gap
        else:
            gap = float(rng.uniform(-0.04, 0.8)) if nxt != cur else float(rng.uniform(0.35, 0.9))
            t = end + gap
        cur = nxt
        k += 1
    turns.sort(key=lambda x: (x.start, x.end))
    return Plan(shape, speakers, turns, interruptions, backchannels, terminal)


def truth_entry(plan: Plan, corpus: str, source_id: str, **extra: Any) -> dict[str, Any]:
    """The ``truth.json`` record of one planned dialogue."""
    return {
        "corpus": corpus,
        "source_id": source_id,
        "shape": plan.shape,
        "expected": "kept",
        "speakers": list(plan.speakers),
        "turns": [
            {
                "speaker": t.speaker,
                "start": t.start,
                "end": t.end,
                "backchannel": t.backchannel,
                "text": t.text,
                **({"labels": t.labels} if t.labels else {}),
            }
            for t in plan.turns
        ],
        "interruptions": plan.interruptions,
        "backchannels": plan.backchannels,
        "terminal_overlaps": plan.terminal_overlaps,
        "imbalanced": plan.shape == "imbalanced",
        "utterance_share": plan.utterance_share(),
        **extra,
    }


ENGLISH = (
    "I am looking for a pan.",
    "No problem. What size would you like?",
    "Oh, yes, I like that one, but it's too heavy.",
    "It's Sunday today, so the shops close early.",
    "Could you tell me how to get to the station?",
    "Sure, go straight and turn left at the bank.",
    "I haven't seen you for ages. How have you been?",
    "Pretty good, thanks. I started a new job last month.",
    "That sounds great. What do you do there?",
    "I work in the accounts department, mostly reports.",
    "Would you like something to drink before dinner?",
    "Just some water, please. I'm driving tonight.",
    "Did you hear what happened at the meeting yesterday?",
    "No, I missed it. Was it anything important?",
    "They decided to move the whole team to the third floor.",
    "Excuse me, do you have your forms?",
    "I left them at home, I'm afraid.",
    "Then you'll have to come back tomorrow with them.",
    "Is there any way we could sort this out today?",
    "Let me check with my supervisor first.",
)
ENGLISH_BACKCHANNELS = ("Mm-hmm.", "Yeah.", "Right.", "Uh-huh.", "Okay.")

CHINESE = (
    "最近最近那个新海诚的啊，那个电影你看了吗？",
    "我们今天聊一下环境治理吧，这个问题挺重要的。",
    "啊也行，我觉得现在空气比以前好多了。",
    "对，特别是冬天的时候，以前雾霾很严重。",
    "我平时上班都是坐地铁，比开车方便多了。",
    "你们公司离家远吗？每天通勤要多久？",
    "大概四十分钟吧，早上有点挤。",
    "周末我一般在家做饭，偶尔出去爬山。",
    "爬山挺好的，可以锻炼身体，也能放松一下。",
    "我最近在学做菜，红烧肉做得还不错。",
    "是吗？下次有机会一定要尝尝。",
    "现在年轻人找工作压力确实挺大的。",
)
CHINESE_BACKCHANNELS = ("嗯", "对", "是的", "嗯嗯", "对对")
