"""What the report and the dataset card call each source and model a release can draw on."""

from __future__ import annotations

#: Names and licences of the sources and models a release can draw on. Only the *names* are
#: shown for corpora: a dialogue's licence is its own ``licence`` column, so the card reports what
#: the data holds (the licences here are the fallback for TTS backends that record none).
LICENCES: dict[str, tuple[str, str]] = {
    "dailytalk": ("DailyTalk", "CC BY-SA 4.0"),
    "iemocap": ("IEMOCAP", "USC SAIL academic EULA (non-commercial, by request)"),
    "magicdata_ramc": ("MagicData-RAMC", "CC BY-NC-ND 4.0"),
    "studio": ("Studio recordings", "in-house; see the session consent forms"),
    "ph": (
        "Pseudo-human TTS dialogues",
        "derived: scripts + voice references from kept dialogues; the references' and TTS"
        " model's licences apply",
    ),
    "spark": ("Spark-TTS-0.5B weights", "CC BY-NC-SA 4.0"),
    "dia": ("Dia-1.6B weights", "Apache-2.0"),
    "default": (
        "eSpeak NG (offline default TTS, no cloning)",
        "GPL-3.0 engine; output unrestricted",
    ),
}
