"""Two-speaker scripts from an LLM: topic-conditioned generation and rewrites of HH transcripts.

The PH (pseudo-human) half of a Turing-test set needs scripts: dialogues on the same topics as
the HH and HM material (``generate``) and faithful rewrites of kept HH transcripts
(``rewrite``), so that content alone never tells a listener which is which. Any
OpenAI-compatible chat endpoint works (``llm`` config section, extra ``duetflow[llm]``).

* :func:`generate_scripts` / :func:`rewrite_scripts` — the two runs (CLI: ``duetflow scripts
  generate`` / ``duetflow scripts rewrite``; also a stage of ``build_dataset`` when an LLM is
  configured);
* :mod:`~duetflow.scriptgen.answer_checks` — what makes an answer valid;
* :mod:`~duetflow.scriptgen.llm` — the client and its transport retries;
* :mod:`~duetflow.scriptgen.prompts` — the shipped prompt templates;
* :mod:`~duetflow.scriptgen.store` — one file per script: checkpoint and resume.

The output folder is in the scripts format ``duetflow synthesize`` reads.
"""

from duetflow.scriptgen.generate import (
    ScriptGenReport,
    ScriptRequest,
    ask,
    generate_scripts,
    read_topics_file,
    resolve_topics,
    rewrite_scripts,
    run_requests,
)

__all__ = [
    "ScriptGenReport",
    "ScriptRequest",
    "ask",
    "generate_scripts",
    "read_topics_file",
    "resolve_topics",
    "rewrite_scripts",
    "run_requests",
]
