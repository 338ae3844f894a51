"""The pipeline's stages, declared once: order, inputs, outputs, config sections, code.

Each :class:`StageSpec` says what a stage reads and writes, which config sections it reads
(and the only ones its work receives, :meth:`StageSpec.scoped`) and the modules its work is
(:attr:`StageSpec.entries`: their import closure inside ``duetflow`` is its code). Its cache key
(:meth:`StageSpec.key`) hashes exactly those sections, that code and the fingerprints of its
inputs, so editing a module a stage imports, or a section it reads, invalidates that stage and
no other; where a run happens (work directory, runner, shard size, store) is in no key.

:mod:`duetflow.pipeline` runs the stages in this order in-process; :mod:`duetflow.flows` runs
the same step functions as Prefect tasks. Neither this module nor the plain executor imports
Prefect.
"""

from __future__ import annotations

from dataclasses import dataclass

from duetflow.config import RUN_ONLY_FIELDS, RunConfig
from duetflow.hashing import code_hash
from duetflow.pipeline.keys import scoped_config, stage_key

#: every section that can change what a release holds (all but where a run happens)
CONTENT_SECTIONS: tuple[str, ...] = tuple(
    name for name in RunConfig.model_fields if name not in RUN_ONLY_FIELDS
)


@dataclass(frozen=True)
class StageSpec:
    """One stage of the pipeline (see the module docstring)."""

    name: str
    #: config sections the stage reads; its work receives a config with only these readable
    sections: tuple[str, ...]
    #: modules whose import closure (inside duetflow) is the stage's code
    entries: tuple[str, ...]
    inputs: str
    outputs: str

    def code(self, *plugins: str) -> str:
        """Hash of the stage's code, plus plugin modules named by the config (an adapter)."""
        return code_hash(tuple(sorted({*self.entries, *plugins})))

    def key(self, config: RunConfig, *fingerprints: str, plugins: tuple[str, ...] = ()) -> str:
        """Cache key of one step: the stage's sections, its code and its inputs' fingerprints."""
        return stage_key(self.name, config, self.sections, self.code(*plugins), *fingerprints)

    def scoped(self, config: RunConfig) -> RunConfig:
        """``config`` as the stage's work sees it: undeclared sections raise on access."""
        return scoped_config(config, self.name, self.sections)


INGEST = StageSpec(
    "ingest",
    ("seed", "sample_rate", "segment", "studio", "topics", "design", "asr"),
    ("duetflow.pipeline.ingest",),
    inputs="a corpus root (adapter, options, licence)",
    outputs="intake tables (dialogues, turns, rejections) of one corpus",
)
PROCESS = StageSpec(
    "process",
    ("seed", "sample_rate", "segment", "turns", "window", "filters", "render", "studio"),
    ("duetflow.pipeline.process",),
    inputs="a shard of intake dialogues and their audio",
    outputs="rendered tables + audio of the shard; merged per corpus into rendered/<corpus>",
)
MATCH = StageSpec(
    "match",
    ("seed", "match"),
    ("duetflow.turntaking.matching",),
    inputs="the rendered work directories of every corpus",
    outputs="matched/<corpus> for corpora that lose HH windows; matched/match.json",
)
SCRIPTS = StageSpec(
    "scripts",
    ("seed", "llm", "scripts", "filters", "topics"),
    ("duetflow.scriptgen",),
    inputs="topics, kept HH transcripts, an LLM endpoint",
    outputs="scripts/{generated,rewritten} (one file per script) + rejections",
)
SYNTH = StageSpec(
    "synth",
    ("seed", "sample_rate", "synth", "render", "turns", "window", "topics"),
    ("duetflow.tts.synthesize", "duetflow.tts.script", "duetflow.tts.voices"),
    inputs="a shard of scripts, the voice pool of the rendered work directories",
    outputs="PH tables + audio of the shard; merged into rendered/ph",
)
REPORT = StageSpec(
    "report",
    CONTENT_SECTIONS,  # the report records the whole content config (content_json)
    ("duetflow.report",),
    inputs="the staged release: its work directories, splits and id",
    outputs="report/ (HTML, card, plots, report.json) uploaded with the release",
)
PUBLISH = StageSpec(
    "publish",
    CONTENT_SECTIONS,  # the default release id hashes the whole content config
    ("duetflow.release.publish",),
    inputs="the rendered (and matched) work directories + PH",
    outputs="releases/<id>/ in the store (manifests, audio, splits, stats, report, RELEASE.json)",
)

#: every stage, in the order a run executes them
STAGES: tuple[StageSpec, ...] = (INGEST, PROCESS, MATCH, SCRIPTS, SYNTH, REPORT, PUBLISH)
BY_NAME = {s.name: s for s in STAGES}
