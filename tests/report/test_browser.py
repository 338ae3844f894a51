"""The HTML report in a real headless Chromium: loads without errors, shows every section, every
embedded figure decodes, and a screenshot lands in the test artifacts."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from duetflow.report import SECTIONS, build_report

pytestmark = pytest.mark.browser

# Appended to a *copy* of the page (the report itself has no scripts): asks the browser, after
# load, whether each section is rendered with a visible height and every image decoded.
_PROBE = """<script>
window.addEventListener("load", () => {
  const sections = [...document.querySelectorAll("main > section")].map(s => ({
    id: s.id, height: s.getBoundingClientRect().height,
    heading: (s.querySelector("h2") || {}).textContent || ""}));
  const images = [...document.images].map(i => ({
    ok: i.complete && i.naturalWidth > 0, w: i.naturalWidth, alt: i.alt}));
  console.log("REPORT-PROBE " + JSON.stringify({sections, images, title: document.title}));
});
</script>"""

_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
]


def _chromium(binary: str, profile: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [binary, *_FLAGS, f"--user-data-dir={profile}", *args],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )


def _console(stderr: str) -> list[str]:
    """Console messages Chromium logged (``INFO:CONSOLE`` lines) with --enable-logging=stderr."""
    return [line for line in stderr.splitlines() if ":CONSOLE" in line]


def _load(binary: str, page: Path, profile: Path) -> tuple[str, list[str]]:
    res = _chromium(
        binary,
        profile,
        "--enable-logging=stderr",
        "--v=0",
        "--virtual-time-budget=5000",
        "--dump-dom",
        page.as_uri(),
    )
    assert res.returncode == 0, res.stderr[-2000:]
    return res.stdout, _console(res.stderr)


def _errors(console: list[str]) -> list[str]:
    return [c for c in console if "REPORT-PROBE" not in c]


def test_console_error_check_catches_a_broken_page(chromium: str, tmp_path: Path) -> None:
    """The detector used below is real: a page with a script error is caught."""
    page = tmp_path / "broken.html"
    page.write_text("<!DOCTYPE html><html><body><script>undefinedFn();</script></body></html>")
    _, console = _load(chromium, page, tmp_path / "profile")
    assert any("undefinedFn is not defined" in c for c in _errors(console))


def _check_page(chromium: str, html: Path, n_plots: int, tmp: Path, shot: Path) -> str:
    """Load the page, probe it, screenshot it; returns the DOM Chromium rendered."""
    # 1. a probed copy of the page: no console message but the probe's, every section in the
    # DOM and rendered with a height, every figure decoded by the browser
    probed = tmp / "probed.html"
    probed.write_text(html.read_text().replace("</body>", _PROBE + "</body>"))
    dom, console = _load(chromium, probed, tmp / "p1")
    assert _errors(console) == []
    for sid, heading in SECTIONS:
        assert re.search(rf'<section id="{sid}"><h2>[^<]*</h2>', dom), sid
        assert heading.split(" ")[0] in dom
    probe_lines = [c for c in console if "REPORT-PROBE" in c]
    assert len(probe_lines) == 1, console
    payload = probe_lines[0].split("REPORT-PROBE ", 1)[1]
    payload = payload.rsplit('", source:', 1)[0].encode().decode("unicode_escape")
    probe = json.loads(payload)
    assert [s["id"] for s in probe["sections"]] == [sid for sid, _ in SECTIONS]
    assert all(s["height"] > 40 for s in probe["sections"]), probe["sections"]
    assert len(probe["images"]) == n_plots
    assert all(i["ok"] and i["w"] > 200 for i in probe["images"]), probe["images"]

    # 3. the screenshot, kept as a test artifact
    shot.unlink(missing_ok=True)
    # 2. the page itself (no probe), screenshot kept as a test artifact
    res = _chromium(
        chromium,
        tmp / "p2",
        "--enable-logging=stderr",
        "--v=0",
        f"--screenshot={shot}",
        "--window-size=1280,2400",
        html.as_uri(),
    )
    assert _errors(_console(res.stderr)) == []
    assert res.returncode == 0 and shot.exists(), res.stderr[-2000:]
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 50_000
    print(f"report screenshot: {shot}")
    return dom


def test_report_loads_in_headless_chromium(
    chromium: str, work_root: Path, tmp_path: Path, artifacts_dir: Path
) -> None:
    """Work directories with HH in two languages, mono and stereo audio, and PH."""
    wds = sorted(p for p in work_root.iterdir() if p.is_dir())
    report = build_report(wds, tmp_path / "report", audio_sample=4)
    assert len(report.plots) >= 10
    (tmp_path / "a").mkdir()
    dom = _check_page(
        chromium, report.html, len(report.plots), tmp_path / "a", artifacts_dir / "report.png"
    )
    assert "runaway_generation" in dom and "CC BY-NC-SA 4.0" in dom


def test_sample_pipeline_release_report_in_chromium(
    chromium: str, sample_release: Path, tmp_path: Path, artifacts_dir: Path
) -> None:
    """The acceptance check: the sample pipeline's published release, reported and viewed."""
    rep = build_report(sample_release, tmp_path / "report", audio_sample=4)
    (tmp_path / "c").mkdir()
    dom = _check_page(
        chromium, rep.html, len(rep.plots), tmp_path / "c", artifacts_dir / "sample-release.png"
    )
    assert rep.data.provenance.release_id and rep.data.provenance.release_id in dom
    assert "magicdata_ramc" in dom and "floor-transfer offset" in dom
