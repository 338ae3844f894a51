"""Licence per dialogue: declared by the adapter, overridden by the config, checked, combined."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from duetflow.cli import main
from duetflow.config import build_config
from duetflow.corpora import get_adapter
from duetflow.corpora.dailytalk import DailyTalkAdapter
from duetflow.errors import ConfigError
from duetflow.licences import (
    STUDIO_CONSENT,
    UNDECLARED,
    check_licence,
    combine,
    hf_licence,
    release_terms,
)
from duetflow.pipeline.driver import preflight
from duetflow.pipeline.ingest import ingest
from duetflow.records.manifest import iter_dialogues


def test_licence_ids_are_checked() -> None:
    assert check_licence("CC-BY-SA-4.0") == "CC-BY-SA-4.0"
    assert check_licence("LicenseRef-IEMOCAP-EULA") == "LicenseRef-IEMOCAP-EULA"
    assert check_licence("Apache-2.0  AND MIT") == "Apache-2.0 AND MIT"
    for bad in ("", "CC BY-SA 4.0", "MIT AND", "AND MIT", "(MIT OR Apache-2.0)", "GPL/3"):
        with pytest.raises(ConfigError, match="not a licence id"):
            check_licence(bad)


def test_combine_is_sorted_deduplicated_and_never_empty() -> None:
    assert combine("CC-BY-SA-4.0", None, "CC-BY-NC-SA-4.0 AND CC-BY-SA-4.0") == (
        "CC-BY-NC-SA-4.0 AND CC-BY-SA-4.0"
    )
    assert combine(None, "") == UNDECLARED


def test_release_terms_follow_the_licences_held() -> None:
    permissive = release_terms(["CC-BY-4.0"])
    assert permissive[0] == "Every dialogue is under CC-BY-4.0."
    assert not any("Non-commercial" in t or "forbid" in t for t in permissive)
    assert any("allow commercial use" in t for t in permissive)
    mixed = " ".join(release_terms(["CC-BY-SA-4.0", "CC-BY-NC-ND-4.0"]))
    assert "Non-commercial use only for dialogues under CC-BY-NC-ND-4.0" in mixed
    assert "CC-BY-NC-ND-4.0 forbid(s) sharing adapted material" in mixed
    assert "Share-alike: material derived from CC-BY-SA-4.0" in mixed
    assert "allow commercial use" not in mixed
    odd = " ".join(release_terms(["LicenseRef-LDC-User-Agreement"]))
    assert "Terms not known to duetflow: LicenseRef-LDC-User-Agreement" in odd
    assert hf_licence(["CC-BY-4.0"]) == "cc-by-4.0"
    assert hf_licence(["CC-BY-4.0", "MIT"]) == hf_licence(["LicenseRef-x"]) == "other"


def test_config_checks_licences() -> None:
    cfg = build_config({"corpora": [{"name": "dailytalk", "root": "/x", "licence": "CC-BY-4.0"}]})
    assert cfg.corpora[0].licence == "CC-BY-4.0"
    assert cfg.studio.licence == STUDIO_CONSENT
    with pytest.raises(ConfigError, match=r"corpora\.0\.licence.*not a licence id"):
        build_config({"corpora": [{"name": "dailytalk", "root": "/x", "licence": "CC BY 4.0"}]})
    with pytest.raises(ConfigError, match=r"studio\.licence"):
        build_config({"studio": {"licence": "in house"}})


def test_ingest_stamps_the_adapters_licence_or_the_configs(
    sample_root: Path, tmp_path: Path
) -> None:
    root = sample_root / "dailytalk"
    ingest("dailytalk", root, tmp_path / "a", build_config({}))
    assert {d.licence for d in iter_dialogues(tmp_path / "a")} == {DailyTalkAdapter.licence}
    assert DailyTalkAdapter.licence == "CC-BY-SA-4.0"
    ingest("dailytalk", root, tmp_path / "b", build_config({}), licence="LicenseRef-in-house")
    assert {d.licence for d in iter_dialogues(tmp_path / "b")} == {"LicenseRef-in-house"}


class _NoLicence(DailyTalkAdapter):
    name = "nolicence"
    licence = None


def test_a_corpus_without_licence_fails_before_anything_is_written(
    sample_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import duetflow.pipeline.ingest as ingest_mod

    monkeypatch.setattr(ingest_mod, "get_adapter", lambda name: _NoLicence)
    with pytest.raises(ConfigError, match=r"no licence declared.*corpora\[\]\.licence"):
        ingest("nolicence", sample_root / "dailytalk", tmp_path / "w", build_config({}))
    assert not (tmp_path / "w").exists()
    # the config's licence is enough
    ingest("nolicence", sample_root / "dailytalk", tmp_path / "w", build_config({}), licence="MIT")
    assert {d.licence for d in iter_dialogues(tmp_path / "w")} == {"MIT"}


def test_studio_licence_comes_from_the_config(sample_root: Path, tmp_path: Path) -> None:
    cfg = build_config({"studio": {"licence": "CC-BY-NC-4.0"}, "workdir": str(tmp_path)})
    adapter = get_adapter("studio")(sample_root / "studio", config=cfg)
    assert adapter.resolve_licence() == "CC-BY-NC-4.0"
    assert adapter.resolve_licence("CC0-1.0") == "CC0-1.0"  # corpora[].licence wins


def test_cli_ingest_licence_option(sample_root: Path, tmp_path: Path) -> None:
    args = ["ingest", "--corpus", "dailytalk", "--root", str(sample_root / "dailytalk")]
    res = CliRunner().invoke(main, [*args, "--workdir", str(tmp_path / "w"), "--licence", "x y"])
    assert res.exit_code == 2 and "not a licence id" in res.output
    res = CliRunner().invoke(main, [*args, "--workdir", str(tmp_path / "w"), "--licence", "MIT"])
    assert res.exit_code == 0, res.output
    assert {d.licence for d in iter_dialogues(tmp_path / "w")} == {"MIT"}


def test_preflight_names_every_problem(sample_root: Path, tmp_path: Path) -> None:
    cfg = build_config(
        {
            "corpora": [
                {"name": "dailytalk", "root": str(sample_root / "dailytalk")},
                {"name": "dailytalk", "root": str(tmp_path / "missing")},
                {"name": "nope", "root": str(tmp_path)},
                {"name": "iemocap", "root": str(tmp_path), "options": {"colour": 1}},
            ],
            "synth": {"scripts": str(tmp_path / "no-scripts")},
        }
    )
    with pytest.raises(ConfigError) as err:
        preflight(cfg)
    msg = str(err.value)
    assert "corpora[0]" not in msg
    assert f"corpora[1] (dailytalk): root {tmp_path / 'missing'} is not a directory" in msg
    assert "corpora[2] (nope): unknown corpus 'nope'" in msg
    assert "corpora[3] (iemocap)" in msg and "unknown option(s) ['colour']" in msg
    assert "synth.scripts" in msg
    preflight(build_config({"corpora": [{"name": "dailytalk", "root": str(sample_root)}]}))
