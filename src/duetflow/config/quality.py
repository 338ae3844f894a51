"""Config section of the speech-quality models run on rendered audio (issue 29): DNSMOS."""

from __future__ import annotations

from pydantic import Field

from duetflow.config.section import _Section


class QualityConfig(_Section):
    """Speech-quality scores of every rendered dialogue (the ``quality`` extra).

    Off by default: DNSMOS costs about 20–40x the render's own CPU per rendered hour
    (docs/quality_models.md), so the core install, CI and the demo stay as fast as without it.
    """

    dnsmos: bool = Field(
        False,
        description="score every rendered dialogue (HH, HM, PH alike) with DNSMOS (SIG, BAK, "
        "OVRL, P.808) as a whole and per speaker, into the manifests' dnsmos_* columns (null "
        "when off); needs pip install 'duetflow[quality]'. YAML on/off or true/false",
    )
