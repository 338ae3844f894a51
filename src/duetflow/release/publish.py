"""Publish rendered work directories as a versioned release in a store.

Order matters, because readers trust what they see: validate everything first (a bad row →
:class:`ManifestError` with the failure table, nothing sent), assign splits, stage the manifests
locally, upload the audio (content-addressed, skipped when already there), the manifests, the
reports, then ``RELEASE.json`` and only then ``releases/LATEST``. A publish killed midway
leaves no visible release; running it again sends only what is missing.

The default release id is derived from the staged manifests' bytes, the content config hash
(:meth:`~duetflow.config.RunConfig.content_hash`: no work directory, runner or store) and the
code version, so the same inputs + config give the same id and the same bytes wherever and
however they were built, and re-publishing them uploads nothing.

With ``release.cue_parity`` on (``warn`` / ``fail``) the dialogues' pipeline-controlled cues are
audited per language and category pair before anything is sent (:mod:`duetflow.fairness`):
``fail`` refuses a release whose cues tell categories apart, ``warn`` names them; the cue table
and its summary travel as ``releases/<id>/cues/``.

A release does not know how it is drawn: the orchestrator passes a ``report`` callable
(:data:`ReportMaker`, e.g. :func:`duetflow.report.release_report`) that receives the
:class:`StagedRelease` (its id, splits and work directories) and returns the folder uploaded
as ``releases/<id>/report/``.

The steps before the upload live in :mod:`duetflow.release.staging` (validation, split items,
manifests, audio uploads, :class:`~duetflow.release.staging.StagedRelease`) and the release's
identity in :mod:`duetflow.release.release_json` (id, claim, RELEASE.json bytes); this module
orders them and uploads.
"""

from __future__ import annotations

import logging
import tempfile
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from duetflow._version import __version__
from duetflow.config import TRANSPORT_FIELDS, RunConfig
from duetflow.design import DesignReport, DesignTally, design_json, format_design_report
from duetflow.errors import ManifestError, StorageError
from duetflow.fairness.audit import AuditResult, audit_workdirs, write_audit
from duetflow.fairness.cues import Levels
from duetflow.fairness.gate import enforce
from duetflow.hashing import sha256_bytes, sha256_file
from duetflow.leftovers import remove_stale_staging, staging_prefix
from duetflow.progress import Progress
from duetflow.records.dialogue import safe_id
from duetflow.records.manifest import (
    DIALOGUES,
    iter_records,
)
from duetflow.records.rows import RenderedDialogueRow
from duetflow.release.events import EVENTS, stage_events
from duetflow.release.layout import (
    LATEST_KEY,
    MANIFEST_NAMES,
    RELEASE_FORMAT,
    check_release_id,
    manifest_key,
    release_json_key,
    release_prefix,
)
from duetflow.release.release_json import (
    claim_release,
    content_config_hash,
    default_release_id,
    json_bytes,
    release_json,
)
from duetflow.release.splits import (
    format_split_report,
    plan_splits,
    split_report,
)
from duetflow.release.staging import (
    ReportMaker,
    StagedRelease,
    Upload,
    licence_counts,
    split_items,
    stage_manifests,
    validate_workdirs,
)
from duetflow.release.table_schemas import SPLITS
from duetflow.storage import Store, open_store
from duetflow.storage.parallel import bounded_map

log = logging.getLogger(__name__)

_STAGING = "duetflow-publish"


@dataclass(frozen=True)
class ReleaseInfo:
    """Outcome of a publish: the release, its counts and what was actually sent."""

    release_id: str
    uri: str
    counts: Mapping[str, Any] = field(default_factory=dict)
    uploaded_objects: int = 0
    skipped_objects: int = 0
    #: the design contract's problems (missing, short, over-full cells; opening lines), when
    #: the config declares a design (``design.md`` / ``design.json`` of the release)
    design_problems: tuple[str, ...] = ()
    #: the cue-parity gate's lines (failing cues, pairs not judged); empty when it is off
    cue_parity: tuple[str, ...] = ()


def _iter_report_files(report_dir: Path) -> Iterator[tuple[str, Path]]:
    for p in sorted(report_dir.rglob("*")):
        if p.is_file():
            yield p.relative_to(report_dir).as_posix(), p


class _Publisher:
    """Plans every object first (for RELEASE.json), then uploads them in order."""

    def __init__(self, store: Store, workers: int) -> None:
        self.store = store
        self.workers = workers
        self.files: list[Upload] = []
        self.blobs: list[tuple[str, bytes]] = []
        self.uploaded = 0
        self.skipped = 0

    def add_file(self, key: str, path: Path, sha256: str | None = None) -> None:
        digest = sha256 or sha256_file(path)
        self.files.append(Upload(key, str(path), digest, path.stat().st_size))

    def add_uploads(self, uploads: Iterable[Upload]) -> None:
        """Plan objects already described (the audio, from staging): kept, not copied."""
        self.files.extend(uploads)

    def add_bytes(self, key: str, data: bytes) -> None:
        self.blobs.append((key, data))

    def records(self) -> list[tuple[str, str, int]]:
        """``(key, sha256, size)`` of every planned object, sorted by key (a later plan of the
        same key wins)."""
        recs = {u.key: (u.key, u.sha256, u.size) for u in self.files}
        for key, data in self.blobs:
            recs[key] = (key, sha256_bytes(data), len(data))
        return sorted(recs.values())

    def count(self, sent: bool) -> None:
        """Count one object as uploaded (True) or already present (False)."""
        if sent:
            self.uploaded += 1
        else:
            self.skipped += 1

    def upload(self) -> None:
        """Send the planned files (in parallel), then the planned small objects.

        The first failure cancels the uploads not yet started and is raised; what was sent
        stays, so the next publish only sends the rest.
        """
        bar = Progress("publish", "", len(self.files) + len(self.blobs))

        def send(u: Upload) -> bool:
            return self.store.put_file(u.key, Path(u.path), u.sha256)

        for sent in bounded_map(send, self.files, self.workers):
            self.count(sent)
            bar.advance()
        for key, data in self.blobs:
            self.count(self.store.put_bytes(key, data))
            bar.advance()
        self.files, self.blobs = [], []

    def put_bytes(self, key: str, data: bytes) -> None:
        self.count(self.store.put_bytes(key, data))


def publish(
    workdirs: Sequence[Path | str],
    store_uri: str,
    config: RunConfig | None = None,
    release_id: str | None = None,
    report_dir: Path | str | None = None,
    *,
    report: ReportMaker | None = None,
    store: Store | None = None,
    workers: int = 8,
) -> ReleaseInfo:
    """Validate, split and upload rendered work directories as one release (module docstring).

    ``store`` overrides opening ``store_uri`` (e.g. an S3Store built with a Prefect block's
    boto3 session). ``report`` builds the release's report from the :class:`StagedRelease`
    (its own splits and id); ``report_dir`` is a finished report folder to upload instead.
    With neither the release has no ``report/``.
    """
    if report is not None and report_dir is not None:
        raise ValueError("publish: pass report (a maker) or report_dir (a folder), not both")
    cfg = config or RunConfig()
    wds = [Path(w) for w in workdirs]
    if not wds:
        raise ManifestError("publish: no work directory given")
    st = store or open_store(store_uri, cfg.release)
    st.check_ready()  # a missing bucket fails here, before any validation or upload
    validate_workdirs(wds, cfg)
    items = split_items(wds)
    plan = plan_splits(items, cfg.release)
    # what the split facts are needed for, drawn now so they are not held through the upload
    report_rows = split_report(items, plan.splits)
    by_cat: dict[str, dict[str, int]] = {s: {} for s in SPLITS}
    for it in items:
        split = plan.splits.get(it.dialogue_id)
        if split is not None:
            by_cat[split][it.category] = by_cat[split].get(it.category, 0) + 1
    del items
    parity = _cue_parity(wds, cfg, plan.dropped)  # refuses a failing release before any upload
    pub = _Publisher(st, workers)
    st.remove_stale_temporaries()  # what a killed publish left (never a live writer's)
    remove_stale_staging(_STAGING)

    with tempfile.TemporaryDirectory(prefix=staging_prefix(_STAGING)) as tmp:
        staging = Path(tmp)
        by_licence: Counter[tuple[str, str]] = Counter()
        counts, audio = stage_manifests(wds, staging, plan.splits, plan.dropped, by_licence)
        # trainers (issue 27): the turn-taking events of every dialogue, from its turns
        counts[EVENTS] = stage_events(
            staging / "turns.parquet", staging / f"{EVENTS}.parquet", cfg.turns
        )
        digests = {
            name: sha256_file(staging / f"{name}.parquet")
            for name in ("dialogues", "turns", "rejections")
        }
        rid = check_release_id(
            release_id or cfg.release.release_id or default_release_id(digests, cfg)
        )
        prefix = release_prefix(rid)
        if report is not None:
            scratch = staging / "attachments"
            scratch.mkdir()
            splits = MappingProxyType(plan.splits)  # read-only, not a copy
            report_dir = report(StagedRelease(rid, tuple(wds), splits, cfg, scratch, parity))

        audio_objects = len(audio)
        pub.add_uploads(audio)
        del audio
        for name in (*SPLITS, "dialogues", "turns", "rejections", EVENTS):
            pub.add_file(manifest_key(rid, name), staging / f"{name}.parquet")
        pub.add_bytes(prefix + "splits.json", json_bytes([asdict(r) for r in report_rows]))
        pub.add_bytes(prefix + "splits.md", format_split_report(report_rows).encode())
        design = _design_report(wds, plan.dropped, cfg) if cfg.design.declared else None
        if design is not None:
            pub.add_bytes(prefix + "design.json", design_json(design))
            pub.add_bytes(prefix + "design.md", format_design_report(design).encode())
        if report_dir is not None and Path(report_dir).is_dir():
            for rel, path in _iter_report_files(Path(report_dir)):
                pub.add_file(prefix + "report/" + rel, path)
        if parity is not None:
            for path in write_audit(parity, staging / "cues"):
                pub.add_file(prefix + "cues/" + path.name, path)
        for i, wd in enumerate(wds):
            stats = wd / "stats.json"
            if stats.is_file():
                pub.add_file(prefix + f"stats/{i:02d}-{safe_id(wd.name)}.json", stats)

        full_counts = {
            **counts,
            "by_split_category": by_cat,
            "hours": {
                s: round(sum(r.hours for r in report_rows if r.split == s), 6) for s in SPLITS
            },
            "audio_objects": audio_objects,
            # trainers (issue 16): dialogues per licence and split
            "by_licence": licence_counts(by_licence),
        }
        if parity is not None:
            full_counts["cue_parity"] = {
                "mode": parity.verdict.mode,
                "passed": parity.verdict.passed,
                "failing": [str(f) for f in parity.verdict.failures],
            }
        doc = release_json(
            {
                "format": RELEASE_FORMAT,
                "release_id": rid,
                "code_version": __version__,
                "config_hash": content_config_hash(cfg),
                "release_config": cfg.release.model_dump(
                    mode="json", exclude=set(TRANSPORT_FIELDS)
                ),
                "render_config": cfg.render.model_dump(mode="json"),
                "window_config": cfg.window.model_dump(mode="json"),
                # the settings the event table was classified with (issue 27)
                "turns_config": cfg.turns.model_dump(mode="json"),
                "workdirs": [wd.name for wd in wds],
                "counts": full_counts,
                "licences": sorted({lic for lic, _ in by_licence}),
                "manifests": {n: manifest_key(rid, n) for n in MANIFEST_NAMES},
            },
            pub.records(),
        )
        key = release_json_key(rid)
        if st.exists(key) and st.get_bytes(key) != doc:
            raise StorageError(
                f"{st.uri}: release {rid} already exists with different content; "
                "publish under another release id"
            )
        pub.count(claim_release(st, rid, doc))  # before any object of the release is written
        pub.upload()  # audio, manifests, reports: everything RELEASE.json lists
        pub.put_bytes(key, doc)  # the release becomes visible ...
        pub.put_bytes(LATEST_KEY, f"{rid}\n".encode())  # ... and then the newest

    uri = f"{st.uri.rstrip('/')}/releases/{rid}"
    log.info(
        "published %s: %d dialogues (%s), %d object(s) uploaded, %d already present",
        uri,
        counts["dialogues"],
        ", ".join(f"{s} {counts[s]}" for s in SPLITS),
        pub.uploaded,
        pub.skipped,
    )
    problems = tuple(design.problems) if design is not None else ()
    for line in problems:
        log.warning("design: %s", line)
    lines = tuple(parity.verdict.lines()) if parity is not None else ()
    return ReleaseInfo(rid, uri, full_counts, pub.uploaded, pub.skipped, problems, lines)


def _design_report(
    workdirs: Sequence[Path], dropped: Mapping[str, str], cfg: RunConfig
) -> DesignReport:
    """The design contract of the dialogues the release holds (one pass over their rows)."""
    tally = DesignTally()
    for wd in workdirs:
        for rec in iter_records(wd / DIALOGUES, RenderedDialogueRow):
            if rec.dialogue_id not in dropped:
                tally.add(rec.category, rec.language, rec.design)
    return tally.report(cfg.design)


def _cue_parity(
    workdirs: Sequence[Path], cfg: RunConfig, dropped: Mapping[str, str]
) -> AuditResult | None:
    """The release's cue audit (``release.cue_parity``): None when off; the failing cues
    logged as warnings; :class:`~duetflow.fairness.gate.CueParityError` in ``fail`` mode."""
    mode = cfg.release.cue_parity
    if mode == "off":
        return None
    result = audit_workdirs(
        workdirs,
        cfg.release.cue_thresholds,
        seed=cfg.seed,
        mode=mode,
        skip=dropped,
        levels=Levels.of(cfg.render),
    )
    for line in result.verdict.lines():
        log.warning("%s", line)
    enforce(result.verdict)
    return result
