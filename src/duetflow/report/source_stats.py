"""Turn-taking statistics of the *source* dialogues, read from the process stage's stats.json."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from duetflow.report.data import Distribution, SourceStats
from duetflow.report.rows import num


def _dist_from_hist(name: str, unit: str, d: Any, scale: float = 1.0) -> Distribution | None:
    """A Distribution from a stats.json histogram (``turntaking.stats.Histogram.to_dict()``).

    ``scale`` converts units (seconds → ms). Min/max are not stored there, so they are the
    outer edges of the first and last non-empty bins.
    """
    if not isinstance(d, Mapping):
        return None
    edges, counts = d.get("edges"), d.get("counts")
    if not isinstance(edges, list) or not isinstance(counts, list):
        return None
    if len(edges) != len(counts) + 1:
        return None
    e = tuple(round(float(x) * scale, 9) for x in edges)
    c: tuple[int, ...] = tuple(int(x) for x in counts)
    below = int(d.get("underflow", d.get("below", 0)) or 0)
    above = int(d.get("overflow", d.get("above", 0)) or 0)
    total = int(sum(c))
    n = int(d.get("n") or (total + below + above))
    mean = num(d.get("mean"))
    if mean is not None:
        mean *= scale
    elif total:
        mids = [(e[i] + e[i + 1]) / 2 for i in range(len(c))]
        mean = sum(m * k for m, k in zip(mids, c, strict=True)) / total
    nz = [i for i, k in enumerate(c) if k]
    return Distribution(
        name=name,
        unit=unit,
        n=n,
        mean=mean,
        min=e[nz[0]] if nz else None,
        max=e[nz[-1] + 1] if nz else None,
        edges=e,
        counts=c,
        below=below,
        above=above,
    )


def _int_map(v: Any) -> dict[str, int]:
    if not isinstance(v, Mapping):
        return {}
    out: dict[str, int] = {}
    for k, x in v.items():
        if isinstance(x, int | float):
            out[str(k)] = int(x)
    return out


def _opt_int(v: Any) -> int | None:
    return int(v) if isinstance(v, int | float) and not isinstance(v, bool) else None


def _hours(v: Any) -> float | None:
    f = num(v)
    return None if f is None else f / 3600.0


def _one_source(label: str, d: Mapping[str, Any]) -> SourceStats:
    # CorpusStats stores FTOs in seconds under "fto"; "fto_ms" is accepted as milliseconds.
    fto_scale = 1.0 if "fto_ms" in d else 1000.0
    fto_key = "fto_ms" if "fto_ms" in d else "fto"
    by_reason = _int_map(d.get("rejected_by_reason"))
    rejected = _opt_int(d.get("rejected"))
    return SourceStats(
        label=label,
        dialogues=_opt_int(d.get("dialogues")),
        windows=_opt_int(d.get("windows")),
        kept=_opt_int(d.get("kept")),
        rejected=rejected if rejected is not None else (sum(by_reason.values()) or None),
        rejected_by_reason=by_reason,
        rejected_by_stage=_int_map(d.get("rejected_by_stage")),
        source_hours=_hours(d.get("source_duration_s")),
        kept_hours=_hours(d.get("kept_duration_s")),
        fto=_dist_from_hist(
            f"{label}: floor-transfer offset, all sources", "ms", d.get(fto_key), fto_scale
        ),
        kept_fto=_dist_from_hist(
            f"{label}: floor-transfer offset, kept windows",
            "ms",
            d.get(f"kept_{fto_key}"),
            fto_scale,
        ),
        overlap_classes=_int_map(d.get("overlaps") or d.get("overlap_classes")),
        kept_overlap_classes=_int_map(d.get("kept_overlaps")),
        balance=_dist_from_hist(
            f"{label}: speaker B utterance share, all windows",
            "share",
            d.get("balance_b_share") or d.get("balance"),
        ),
        kept_balance=_dist_from_hist(
            f"{label}: speaker B utterance share, kept windows",
            "share",
            d.get("kept_balance_b_share"),
        ),
    )


def parse_source_stats(label: str, d: Mapping[str, Any]) -> list[SourceStats]:
    """One :class:`SourceStats` per corpus of a ``stats.json``.

    The process stage writes ``{"total": {...}, "corpora": {name: {...}}}``; a bare per-corpus
    object is read as one source named ``label``.
    """
    corpora = d.get("corpora")
    if isinstance(corpora, Mapping) and corpora:
        return [
            _one_source(str(k), v) for k, v in sorted(corpora.items()) if isinstance(v, Mapping)
        ]
    return [_one_source(str(d.get("corpus") or label), d)]
