"""What carries the cue audit's classifier: its accuracy without, and with only, each group of cues.

    python bench/cue_attribution.py CUES_PARQUET

``CUES_PARQUET`` is the ``cues.parquet`` of ``duetflow audit SOURCE --out DIR``. Per language
and judged category pair, the audit's leave-one-out nearest-centroid classifier
(:func:`duetflow.fairness.compare.loo_scores` on the pair's gated cues, each scaled by its
spread or its floor, :func:`duetflow.fairness.compare.standardise`) is run on all gated cues,
then without each group below, then on that group alone. No bootstrap and no permutations:
accuracy only (the audit's own table gives the intervals). A group whose removal brings the
accuracy near chance carries the signal; a group that classifies well alone but whose removal
changes nothing adds nothing the others do not. docs/fairness.md quotes the figures.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from duetflow.config.release import CueThresholds
from duetflow.fairness.compare import gated_cues, loo_scores, standardise
from duetflow.fairness.cues import CUE_BY_NAME, DialogueCues
from duetflow.fairness.table import read_cues

GROUPS: dict[str, tuple[str, ...]] = {
    "pause colour": ("pause_tilt_db_oct", "pause_rolloff_hz", "bandwidth_pause_hz"),
    "level": ("loudness_lufs", "loudness_ab_lu", "speech_level_lu", "ceiling_margin_db"),
    "floor": ("floor_dbfs", "snr_db"),
    "dc": ("dc",),
    "timing": ("gap_mean_ms", "gap_sd_ms", "gap_min_ms", "tail_s", "lead_in_s"),
    "band edge": ("band_edge_hz",),
    "duration": ("duration_s",),
    "pace": ("n_turns", "turns_per_min", "speech_rate_cps"),
}


def accuracy(rows: list[DialogueCues], a: str, cues: list[str]) -> float:
    """Leave-one-out accuracy of the audit's classifier on ``cues`` (NaN: none varies)."""
    if not cues:
        return float("nan")
    x = np.array([[r.value(c) for c in cues] for r in rows], dtype=np.float64)
    y = np.array([r.category == a for r in rows])
    z, keep = standardise(x, [CUE_BY_NAME[c].floor for c in cues])
    if not keep.any():
        return 0.5
    return float(((loo_scores(z, y) > 0) == y).mean())


def main(argv: list[str]) -> int:
    rows = list(read_cues(Path(argv[0])))
    min_n = CueThresholds().min_per_side
    sides: dict[tuple[str, str], list[DialogueCues]] = {}
    for r in rows:
        sides.setdefault((r.language, r.category), []).append(r)
    print("| language | pair | all | " + " | ".join(f"−{g} / only" for g in GROUPS) + " |")
    print("| --- | --- | --- | " + " | ".join("---" for _ in GROUPS) + " |")
    order = {"HH": 0, "HM": 1, "PH": 2}
    for lang in sorted({k[0] for k in sides}):
        cats = sorted((c for lg, c in sides if lg == lang), key=lambda c: (order.get(c, 9), c))
        for i, a in enumerate(cats):
            for b in cats[i + 1 :]:
                pair = sides[(lang, a)] + sides[(lang, b)]
                if min(len(sides[(lang, a)]), len(sides[(lang, b)])) < min_n:
                    continue
                gated = list(gated_cues(a, b))
                cells = []
                for members in GROUPS.values():
                    without = accuracy(pair, a, [c for c in gated if c not in members])
                    only = accuracy(pair, a, [c for c in gated if c in members])
                    cells.append(f"{without:.2f} / {only:.2f}")
                print(
                    f"| {lang} | {a}-{b} | {accuracy(pair, a, gated):.2f} | "
                    + " | ".join(cells)
                    + " |"
                )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
