"""Headless matplotlib plots of :class:`~duetflow.report.data.ReportData` as PNG bytes.

Figures are built with the object API on the Agg canvas (no pyplot, no global backend switch),
so plotting is thread-safe and never needs a display. PNGs carry no software/date metadata:
the same data gives the same bytes.
"""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from duetflow.report.data import CountRow, Distribution, ReportData

_BLUE = "#3b6ea8"
_ORANGE = "#d9822b"
_GREEN = "#3a9d5d"
_BAND = "#9fd3a8"


@dataclass(frozen=True)
class Plot:
    """One figure: a stable file stem, a caption, and its PNG bytes."""

    name: str
    caption: str
    png: bytes


def _fig(width: float = 5.0, height: float = 2.8, left: float = 0.8) -> Figure:
    """A figure with fixed margins (inches): constrained layout doubles the drawing time."""
    fig = Figure(figsize=(width, height), dpi=100)
    FigureCanvasAgg(fig)
    fig.subplots_adjust(
        left=left / width, right=1 - 0.3 / width, bottom=0.55 / height, top=1 - 0.12 / height
    )
    return fig


def _png(fig: Figure) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", metadata={"Software": None})
    return buf.getvalue()


def _crop(d: Distribution) -> tuple[list[float], list[int]]:
    """Bins from the first to the last non-empty one (plus one bin of margin each side)."""
    nz = [i for i, c in enumerate(d.counts) if c]
    if not nz:
        return list(d.edges[:2]), [0]
    lo, hi = max(0, nz[0] - 1), min(len(d.counts), nz[-1] + 2)
    return list(d.edges[lo : hi + 1]), list(d.counts[lo:hi])


def hist_plot(
    name: str,
    dists: Sequence[Distribution | None],
    labels: Sequence[str] = (),
    xlabel: str | None = None,
) -> Plot | None:
    """Histogram of one or more distributions sharing bins; the configured band is shaded."""
    pairs: list[tuple[Distribution, str]] = [
        (d, labels[i] if i < len(labels) else "") for i, d in enumerate(dists) if d and d.n
    ]
    if not pairs:
        return None
    shown = [d for d, _ in pairs]
    names = [lbl for _, lbl in pairs]
    fig = _fig()
    ax = fig.add_subplot()
    # more than three series (DNSMOS per corpus): further colours, the first three unchanged
    colors = [_BLUE, _ORANGE, _GREEN, "#8e44ad", "#7f5539", "#c2185b", "#546e7a"]
    lo_edge = min(_crop(d)[0][0] for d in shown)
    hi_edge = max(_crop(d)[0][-1] for d in shown)
    for i, d in enumerate(shown):
        edges, counts = _crop(d)
        ax.stairs(
            counts,
            edges,
            fill=len(shown) == 1,
            color=colors[i % len(colors)],
            alpha=0.85 if len(shown) == 1 else 1.0,
            linewidth=1.5,
            linestyle="-" if i == 0 else "--",
            label=names[i] or None,
        )
    band = shown[0].band
    if band is not None:
        ax.axvspan(band[0], band[1], color=_BAND, alpha=0.35, zorder=0, label="configured band")
    ax.set_xlim(lo_edge, hi_edge)
    unit = shown[0].unit
    label = xlabel or (shown[0].name if len(shown) == 1 else name)
    ax.set_xlabel(f"{label} ({unit})" if unit else label)
    ax.set_ylabel("count")
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.grid(axis="y", alpha=0.3)
    if len(shown) > 1 or band is not None:
        ax.legend(fontsize=8, loc="upper right")
    cap = "; ".join(_summary(d) for d in shown)
    return Plot(name, cap, _png(fig))


def _summary(d: Distribution) -> str:
    if not d.n or d.mean is None:
        return f"{d.name}: no data"
    s = f"{d.name}: n={d.n}, mean {d.mean:.3g} {d.unit}, range {d.min:.3g}…{d.max:.3g}"
    if d.in_band_share is not None and d.band is not None:
        s += f", {100 * d.in_band_share:.1f}% in band"
    return s


def bar_plot(
    name: str, caption: str, values: Mapping[str, float], xlabel: str, horizontal: bool = False
) -> Plot | None:
    if not values:
        return None
    keys = list(values)
    vals = [values[k] for k in keys]
    longest = max(len(k) for k in keys)
    fig = (
        _fig(5.0, max(2.2, 0.32 * len(keys) + 1.0), left=min(2.6, 0.2 + 0.075 * longest))
        if horizontal
        else _fig()
    )
    ax = fig.add_subplot()
    if horizontal:
        ax.barh(keys[::-1], vals[::-1], color=_BLUE)
        ax.set_xlabel(xlabel)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.grid(axis="x", alpha=0.3)
    else:
        ax.bar(keys, vals, color=_BLUE)
        ax.set_ylabel(xlabel)
        ax.grid(axis="y", alpha=0.3)
        ax.tick_params(axis="x", labelrotation=20)
    return Plot(name, caption, _png(fig))


def grouped_bar_plot(
    name: str, caption: str, groups: Mapping[str, Mapping[str, int]], ylabel: str
) -> Plot | None:
    """Bars per key, one colour per group (e.g. overlap classes: all sources vs kept)."""
    keys = sorted({k for g in groups.values() for k in g})
    if not keys or not any(any(g.values()) for g in groups.values()):
        return None
    fig = _fig()
    ax = fig.add_subplot()
    width = 0.8 / max(1, len(groups))
    colors = [_BLUE, _ORANGE, _GREEN]
    for j, (gname, g) in enumerate(groups.items()):
        xs = [i + (j - (len(groups) - 1) / 2) * width for i in range(len(keys))]
        ax.bar(xs, [g.get(k, 0) for k in keys], width=width, label=gname, color=colors[j % 3])
    ax.set_xticks(range(len(keys)), [k.replace("_", " ") for k in keys])
    ax.set_ylabel(ylabel)
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=8)
    return Plot(name, caption, _png(fig))


def hours_plot(counts: Sequence[CountRow]) -> Plot | None:
    """Hours per category, stacked by split."""
    if not counts:
        return None
    cats = sorted({r.category for r in counts})
    splits = sorted(
        {r.split for r in counts},
        key=lambda s: ("train", "val", "test").index(s) if s in ("train", "val", "test") else 3,
    )
    fig = _fig()
    ax = fig.add_subplot()
    bottom = [0.0] * len(cats)
    colors = {"train": _BLUE, "val": _ORANGE, "test": _GREEN}
    for sp in splits:
        h = [sum(r.hours for r in counts if r.category == c and r.split == sp) for c in cats]
        ax.bar(
            cats, h, bottom=bottom, label=sp if sp != "-" else "all", color=colors.get(sp, "#777")
        )
        bottom = [b + x for b, x in zip(bottom, h, strict=True)]
    ax.set_ylabel("hours")
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=8)
    return Plot("hours", "hours per category and split", _png(fig))


def all_plots(data: ReportData) -> list[Plot]:
    """Every figure of the report, in page order; empty distributions give no figure."""
    d = data.distributions
    out: list[Plot | None] = [
        hours_plot(data.counts),
        bar_plot(
            "rejections",
            "rejections by stage / reason",
            {f"{r.stage} / {r.reason}": r.count for r in data.rejections},
            "items rejected",
            horizontal=True,
        ),
        hist_plot("gaps", [d["gap_ms"]]),
        hist_plot("gaps_audio", [d["gap_ms_audio"]]),
        hist_plot(
            "floor_continuity",
            [d["floor_step_db"], d["floor_dip_db"]],
            ["step across the pause", "dip below the floor"],
            "room-tone floor continuity in pauses (audio sample)",
        ),
        hist_plot(
            "loudness",
            [d["loudness_a"], d["loudness_b"]],
            ["speaker A", "speaker B"],
            "per-speaker loudness (manifest)",
        ),
        hist_plot("loudness_diff", [d["loudness_diff"]]),
        hist_plot(
            "loudness_audio",
            [d["loudness_a_audio"], d["loudness_b_audio"]],
            ["speaker A", "speaker B"],
            "per-speaker loudness, measured on the audio sample",
        ),
        hist_plot("loudness_diff_audio", [d["loudness_diff_audio"]]),
        hist_plot("durations", [d["duration_s"]]),
        hist_plot("turns", [d["turns_per_dialogue"]]),
        hist_plot("utterance_share", [d["utterance_share_a"]]),
        hist_plot("speaking_time_share", [d["speaking_time_share_a"]]),
    ]
    both = ["all sources", "kept windows"]
    for i, s in enumerate(data.source_stats):
        out.append(
            hist_plot(f"fto_{i}", [s.fto, s.kept_fto], both, f"{s.label}: floor-transfer offset")
        )
        out.append(
            grouped_bar_plot(
                f"overlaps_{i}",
                f"{s.label}: overlap events by class (all sources vs kept windows)",
                {"all sources": s.overlap_classes, "kept windows": s.kept_overlap_classes},
                "events",
            )
        )
        out.append(
            hist_plot(
                f"balance_{i}",
                [s.balance, s.kept_balance],
                both,
                f"{s.label}: speaker B utterance share per window",
            )
        )
    out.append(hist_plot("ph_similarity", [data.ph.similarity]))
    from duetflow.report.parity import cue_plot  # parity draws with this module's helpers

    out.append(cue_plot(data.cue_audit))
    from duetflow.report.quality import dnsmos_plots  # quality draws with this module's helpers

    out.extend(dnsmos_plots(data))
    return [p for p in out if p is not None]
