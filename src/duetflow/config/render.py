"""Config section of rendering: re-timing, room tone, loudness, output format."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from duetflow.config.section import _Section, language_keys

#: Longest re-timed gap between turns (ms); beyond it the "dialogue" is mostly silence.
MAX_GAP_MS = 10_000.0


class RenderConfig(_Section):
    """Re-timing, room tone, loudness and output format."""

    gap_ms_min: float = Field(180.0, ge=0, le=MAX_GAP_MS)
    gap_ms_max: float = Field(230.0, ge=0, le=MAX_GAP_MS)
    same_speaker_pause_cap_s: float = Field(1.0, ge=0, le=60)
    edge_silence_ms: float | None = Field(
        None,
        ge=0,
        le=MAX_GAP_MS,
        description="silence before the first and after the last speech of every dialogue, "
        "HH, HM and PH alike (docs/equalisation.md); None: gap_ms_min",
    )
    backchannels: Literal["keep", "drop"] = "keep"
    trim_pad_ms: float = Field(
        20.0, ge=0, le=1000, description="pad kept around a turn's acoustic extent"
    )
    fade_ms: float = Field(
        5.0, ge=0, le=1000, description="fade at every cut, so joins do not click"
    )
    room_tone: bool = True
    loudness_target_lufs: float = Field(
        -23.0, ge=-70, le=-5, description="integrated loudness of every output (EBU R128: -23)"
    )
    loudness_tolerance_lu: float = Field(0.5, gt=0, le=10)
    floor_db: float | None = Field(
        None,
        ge=-90,
        le=-10,
        description="pause floor relative to loudness_target_lufs (dB), every category alike: "
        "room tone raised to it where a source's background is quieter (never lowered: a "
        "clip's own background stays), PH ambience laid at it; None: each source's own "
        "(PH: the reference's SNR) (docs/equalisation.md)",
    )
    tone_tilt_db_oct: float | dict[str, float] | None = Field(
        None,
        description="colour of the room tone, HH, HM and PH alike: every laid bed (the "
        "renderer's room tone, the PH ambience) shaped before it is laid so its spectral "
        "envelope is a line of this tilt (dB/octave, 100 Hz to 8 kHz or the language's "
        "bandwidth_hz less the low-pass's transition), flat under 100 Hz down to 20 Hz; a "
        "mapping sets it per language ('*': any other); "
        "None: each recording keeps its own. The bed stays the recording's own (texture, level "
        "rule); only its colour is matched. Turing-test builds set it per language to the tilt "
        "most of its sources share (the default run config does for en and zh; "
        "docs/equalisation.md)",
    )
    true_peak_ceiling_dbtp: float = Field(-1.0, ge=-30, le=0)
    bandwidth_hz: float | dict[str, float] | None = Field(
        None,
        description="effective bandwidth of every output, HH, HM and PH alike: a zero-phase "
        "low-pass of speech and room tone at this frequency (Hz); a mapping sets it per "
        "language ('*': any other); None: each source keeps its own. Turing-test builds set "
        "it to the narrowest category's bandwidth per language (the default run config "
        "does; docs/equalisation.md)",
    )
    stems: bool = False
    channels: Literal["mono", "stereo", "both"] = Field(
        "mono",
        description="mono: the mix only; stereo / both: also a two-channel file (speaker A "
        "left, B right, sample-aligned with the mix), published beside the mix, which stays "
        "the audio of record. A mixed mono source (MagicData-RAMC, a mono studio session) "
        "cannot be separated and stays mono (its row's stereo_path is null)",
    )
    audio_format: Literal["flac", "wav"] = "flac"

    @model_validator(mode="after")
    def _order(self) -> RenderConfig:
        if self.gap_ms_min > self.gap_ms_max:
            raise ValueError("render.gap_ms_min must be <= render.gap_ms_max")
        limits = self.bandwidth_hz
        values = limits.values() if isinstance(limits, dict) else [] if limits is None else [limits]
        if any(not 500.0 <= v <= 96_000.0 for v in values):
            raise ValueError("render.bandwidth_hz: every value must lie in [500, 96000] Hz")
        tilts = self.tone_tilt_db_oct
        values = tilts.values() if isinstance(tilts, dict) else [] if tilts is None else [tilts]
        if any(not -24.0 <= v <= 12.0 for v in values):
            raise ValueError("render.tone_tilt_db_oct: every value must lie in [-24, 12] dB/oct")
        return self

    @property
    def floor_target_dbfs(self) -> float | None:
        """The file floor every category is brought up to (dBFS), or None."""
        return None if self.floor_db is None else self.loudness_target_lufs + self.floor_db

    def tone_tilt_for(self, language: str) -> float | None:
        """The room tone's target tilt (dB/oct) for ``language``, or None where it is kept."""
        return _per_language(self.tone_tilt_db_oct, language)

    def bandwidth_for(self, language: str) -> float | None:
        """The low-pass cutoff (Hz) of dialogues in ``language`` (``zh-CN`` → ``zh``'s), or
        None where nothing is band-limited."""
        limits = self.bandwidth_hz
        if not isinstance(limits, dict):
            return limits
        for key in (*language_keys(language), "*"):
            if key in limits:
                return limits[key]
        return None


def _per_language(value: float | dict[str, float] | None, language: str) -> float | None:
    if not isinstance(value, dict):
        return value
    for key in (*language_keys(language), "*"):
        if key in value:
            return value[key]
    return None
