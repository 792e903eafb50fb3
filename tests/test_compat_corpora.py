"""The Tolokaforge 0.33.1 compatibility corpora through every command (issue 15).

``../shared/compat/`` holds 610 bundles written and judged by the reference itself. No input
there may make ``ingest``, ``grade``, ``retrace``, ``reconcile`` or ``verify --deep`` print a
traceback; and ``retrace`` must re-derive what the reference concluded, compared by the
corpus's own tools (``compat/tools/*_compare.py``, the same comparison ``compat/check``
makes).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from ledger.cli import main

COMPAT = Path(__file__).resolve().parents[1] / ".." / "shared" / "compat"
REF = COMPAT / "tolokaforge-0.33.1"
KINDS = ("trace", "grade")


def _invoke(*args: str):
    res = CliRunner().invoke(main, list(args))
    # click's runner catches what would have been a traceback: any exception but SystemExit
    assert res.exception is None or isinstance(res.exception, SystemExit), (
        args,
        res.exception,
    )
    assert "Traceback" not in res.output, args
    return res


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("compat")
    for kind in KINDS:
        shutil.copytree(REF / f"{kind}-corpus", root / f"{kind}-corpus")
    return root


@pytest.fixture(scope="module")
def retraced(work: Path) -> dict[str, tuple[int, Path]]:
    out = {}
    for kind in KINDS:
        ledger = str(work / f"ledger-{kind}")
        _invoke("init", "--ledger", ledger)
        res = _invoke(
            "retrace", "--source", str(work / f"{kind}-corpus"), "--json", "--ledger", ledger
        )
        path = work / f"{kind}.json"
        path.write_text(res.output)
        out[kind] = (res.exit_code, path)
    return out


def test_ingest_grade_and_verify_deep_never_print_a_traceback(work: Path) -> None:
    ledger = str(work / "ledger-all")
    _invoke("init", "--ledger", ledger)
    for kind in KINDS:
        _invoke("ingest", str(work / f"{kind}-corpus"), "--ledger", ledger, "--json")
        for bundle in sorted((work / f"{kind}-corpus").iterdir()):
            _invoke("grade", str(bundle), "--json", "--ledger", ledger)
    verify = _invoke("verify", "--deep", "--ledger", ledger)
    assert verify.exit_code == 0, verify.output


def test_reconcile_over_packs_cut_from_the_corpora_never_prints_a_traceback(
    work: Path,
) -> None:
    """Each task's recorded grading_config written back as an authored pack: reconcile may
    refuse a pack the authoring rules reject (exit 3, named), never crash."""
    for kind in KINDS:
        packs = work / f"packs-{kind}"
        for task in sorted((work / f"{kind}-corpus").glob("*/task.yaml")):
            doc = yaml.safe_load(task.read_text())
            pack = packs / doc["task_id"]
            if pack.exists():
                continue
            pack.mkdir(parents=True)
            (pack / "task.yaml").write_text(yaml.safe_dump({"task_id": doc["task_id"]}))
            (pack / "grading.yaml").write_text(yaml.safe_dump(doc["grading_config"] or {}))
        res = _invoke(
            "reconcile", "--packs", str(packs), "--source", str(work / f"{kind}-corpus"),
            "--base", str(work), "--dry-run", "--json",
        )  # fmt: skip
        assert res.exit_code in (0, 1, 3), res.output
        if res.exit_code != 3:
            json.loads(res.output)
