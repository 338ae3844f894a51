"""Re-timing: where each (trimmed) turn lands on the rendered timeline.

Listeners must not tell human from machine by pause length, so every change of speaker gets a
silence drawn uniformly from ``[gap_ms_min, gap_ms_max]`` (one draw per change, in timeline
order, from the dialogue's own generator); a pause inside one speaker's talk is kept as it was,
up to ``same_speaker_pause_cap_s``.

Two layouts, because what can be moved depends on the source:

* **separable** (a channel, file or clip per speaker): turns are laid end to end; a backchannel
  rides inside its host turn at its original offset (``render.backchannels: keep``) or is
  dropped (``drop``). A backchannel that overlaps no turn of the other speaker is an ordinary
  turn.
* **mixed mono**: overlapping turns cannot be pulled apart, so they form *blocks* (runs of
  continuous talk); only the silences between blocks are re-timed. A change of speaker that
  overlaps by no more than ``turns.min_overlap_s`` is latching, not overlap (the turn-taking
  analysis calls it an ordinary transition), so it starts a new block and is re-timed too.
  Backchannels stay embedded; with ``drop`` only the stand-alone ones (their own block) go.

Input times are acoustic extents (already trimmed) on the source timeline; output times are
seconds on the rendered audio, where the acoustic start of the first item is ``lead_s``.

Pure arithmetic over turns and the render section, in ``turntaking`` rather than ``rendering``:
the length model (:mod:`duetflow.turntaking.rendered_length`) predicts a window's rendered
length with these very layouts; the renderer imports it from here. The blocks of a mix
(:func:`~duetflow.acoustics.blocks.merge_blocks`) are one layer down, in
:mod:`duetflow.acoustics.blocks`, since acoustic timing measures mono blocks with them.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from duetflow.acoustics.blocks import Block
from duetflow.config import RenderConfig
from duetflow.records.dialogue import Turn, TurnKind


def edge_silence_s(cfg: RenderConfig) -> float:
    """Silence before the first and after the last speech of a rendered dialogue (seconds).

    Whatever slack the source has before its first and after its last turn is trimmed away;
    this much is laid back: ``render.edge_silence_ms``, by default the shortest speaker-change
    gap, so no pause is shorter. One rule for every category: the renderer (HH, HM) and PH
    assembly (:mod:`duetflow.tts.assemble`) both lay this value (docs/equalisation.md).
    """
    ms = cfg.gap_ms_min if cfg.edge_silence_ms is None else cfg.edge_silence_ms
    return ms / 1000.0


def gap_between(
    prev_speaker: str,
    next_speaker: str,
    pause_s: float,
    cfg: RenderConfig,
    rng: np.random.Generator,
) -> float:
    """Silence (s) between two items: a uniform draw at a speaker change, else the capped pause."""
    if prev_speaker != next_speaker:
        return float(rng.uniform(cfg.gap_ms_min, cfg.gap_ms_max)) / 1000.0
    return float(min(max(pause_s, 0.0), cfg.same_speaker_pause_cap_s))


def plan_gaps(turns: Sequence[Turn], cfg: RenderConfig, rng: np.random.Generator) -> list[float]:
    """Silence after each turn but the last (``len(turns) - 1`` values, seconds), in order."""
    return [
        gap_between(a.speaker, b.speaker, b.start - a.end, cfg, rng)
        for a, b in itertools.pairwise(turns)
    ]


@dataclass(frozen=True)
class Placement:
    """One turn on the rendered timeline.

    ``src_start``/``src_end``: its acoustic extent on the source timeline; ``out_start``: where
    that extent starts in the output; ``host``: the turn index a kept backchannel rides in.
    """

    index: int
    speaker: str
    kind: TurnKind
    src_start: float
    src_end: float
    out_start: float
    host: int | None = None

    @property
    def out_end(self) -> float:
        return self.out_start + (self.src_end - self.src_start)

    @property
    def shift(self) -> float:
        """Output time minus source time for every sample of this turn."""
        return self.out_start - self.src_start


@dataclass(frozen=True)
class Timeline:
    """The layout of one rendered dialogue."""

    placements: tuple[Placement, ...]  # in output order (backchannels after their host)
    gaps_s: tuple[float, ...]  # speaker-change gaps that were drawn, in order
    duration_s: float
    dropped: tuple[int, ...] = ()  # turn indices left out (dropped backchannels, non-speech)
    change_after: tuple[int, ...] = ()  # per drawn gap: position (in main order) of the turn before

    @property
    def mains(self) -> tuple[Placement, ...]:
        """The main (non-hosted) placements, in timeline order."""
        return tuple(p for p in self.placements if p.host is None)


def _host_of(i: int, turns: Sequence[Turn], mains: Sequence[int]) -> int | None:
    bc = turns[i]
    best, best_ov = None, 0.0
    for j in mains:
        t = turns[j]
        if t.speaker == bc.speaker:
            continue
        ov = min(t.end, bc.end) - max(t.start, bc.start)
        if ov > best_ov:
            best, best_ov = j, ov
    return best


def layout_turns(
    turns: Sequence[Turn],
    cfg: RenderConfig,
    rng: np.random.Generator,
    *,
    lead_s: float,
    tail_s: float,
) -> Timeline:
    """Separable layout: turns end to end with planned gaps, backchannels inside their hosts."""
    speech = [i for i, t in enumerate(turns) if t.kind != TurnKind.NONSPEECH]
    dropped = [i for i, t in enumerate(turns) if t.kind == TurnKind.NONSPEECH]
    backs = [i for i in speech if turns[i].kind == TurnKind.BACKCHANNEL]
    mains = [i for i in speech if turns[i].kind != TurnKind.BACKCHANNEL]
    hosts: dict[int, int] = {}
    if cfg.backchannels == "drop":
        dropped.extend(backs)
    else:
        for i in backs:
            h = _host_of(i, turns, mains)
            if h is None:
                mains.append(i)  # stands alone: an ordinary turn
            else:
                hosts[i] = h
    mains.sort(key=lambda i: (turns[i].start, i))
    ordered = [turns[i] for i in mains]
    gaps = plan_gaps(ordered, cfg, rng)
    placed: dict[int, Placement] = {}
    pos = lead_s
    for k, i in enumerate(mains):
        t = turns[i]
        placed[i] = Placement(i, t.speaker, t.kind, t.start, t.end, pos)
        pos += t.end - t.start
        if k < len(gaps):
            pos += gaps[k]
    out: list[Placement] = []
    end = pos
    for i in mains:
        out.append(placed[i])
        for b in sorted((b for b, h in hosts.items() if h == i), key=lambda b: turns[b].start):
            t, host = turns[b], placed[i]
            start = max(0.0, host.out_start + (t.start - host.src_start))
            p = Placement(b, t.speaker, TurnKind.BACKCHANNEL, t.start, t.end, start, host=i)
            end = max(end, p.out_end)
            out.append(p)
    after = tuple(
        k for k, (a, b) in enumerate(itertools.pairwise(ordered)) if a.speaker != b.speaker
    )
    changes = tuple(gaps[k] for k in after)
    return Timeline(tuple(out), changes, end + tail_s, tuple(sorted(dropped)), after)


def mixed_speech_indices(turns: Sequence[Turn], cfg: RenderConfig) -> tuple[list[int], list[int]]:
    """(turns rendered, turns dropped) for a mixed source: see the module docstring."""
    keep = [i for i, t in enumerate(turns) if t.kind != TurnKind.NONSPEECH]
    dropped = [i for i, t in enumerate(turns) if t.kind == TurnKind.NONSPEECH]
    if cfg.backchannels == "drop":
        alone = []
        for i in keep:
            t = turns[i]
            if t.kind != TurnKind.BACKCHANNEL:
                continue
            if not any(
                j != i and min(turns[j].end, t.end) > max(turns[j].start, t.start) for j in keep
            ):
                alone.append(i)
        keep = [i for i in keep if i not in alone]
        dropped.extend(alone)
    return keep, sorted(dropped)


def layout_blocks(
    blocks: Sequence[Block],
    cfg: RenderConfig,
    rng: np.random.Generator,
    *,
    lead_s: float,
    tail_s: float,
) -> tuple[list[float], list[float], list[int], float]:
    """Mixed layout: output start of each block (``blocks`` carry acoustic extents).

    Returns ``(out_starts, speaker_change_gaps, change_after, duration_s)``, where
    ``change_after[k]`` is the index of the block before the ``k``-th drawn gap.
    """
    starts: list[float] = []
    changes: list[float] = []
    after: list[int] = []
    pos = lead_s
    for k, b in enumerate(blocks):
        if k > 0:
            prev = blocks[k - 1]
            g = gap_between(prev.last_speaker, b.first_speaker, b.start - prev.end, cfg, rng)
            if prev.last_speaker != b.first_speaker:
                changes.append(g)
                after.append(k - 1)
            pos += g
        starts.append(pos)
        pos += b.end - b.start
    return starts, changes, after, pos + tail_s
