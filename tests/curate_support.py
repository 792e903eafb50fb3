"""Small recorded trials written for the curation tests, in the run layout a run writes.

``<root>/<run-id>/trials/<task-id>/<index>/`` (FORMATS.md § 1). Each helper writes only
what the rule under test needs; the defaults make an admissible trial.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import yaml

from tests.data_paths import NOTES

CRITERION = "checked_duplicates_first"
AGENT = "openai/gpt-4o-mini"
JUDGE = "openai/gpt-4.1-mini"

_OMIT = object()


def _messages(calls: list[tuple[str, str]]) -> list[dict[str, Any]]:
    blank = {"content_blocks": None, "tool_calls": None, "tool_call_id": None, "reasoning": None}
    out = [{**blank, "role": "user", "content": "add a note", "ts": "2026-08-03T06:30:19Z"}]
    if calls:
        decl = [{"id": cid, "name": name, "arguments": {}} for cid, name in calls]
        out.append({**blank, "role": "assistant", "content": "", "tool_calls": decl,
                    "ts": "2026-08-03T06:30:20Z"})  # fmt: skip
        for cid, _ in calls:
            out.append({**blank, "role": "tool", "content": "ok", "tool_call_id": cid,
                        "ts": "2026-08-03T06:30:21Z"})  # fmt: skip
    out.append({**blank, "role": "assistant", "content": "done", "ts": "2026-08-03T06:30:22Z"})
    return out


def write_trial(
    root: Path,
    run: str = "run_a",
    task: str = "notes_task",
    index: int = 0,
    *,
    task_yaml: Any = None,
    grade: Any = None,
    judge_status: Any = "completed",
    results: Any = None,
    met: Any = True,
    calls: list[str] | None = None,  # statuses of recorded calls; None: no tool_log.yaml
    agent: Any = AGENT,
    judge: Any = JUDGE,
    metrics: Any = None,
    layout: bool = True,
) -> Path:
    """Write one bundle and return its directory. ``_OMIT`` leaves a file out."""
    bundle = root / run / "trials" / task / str(index) if layout else root / f"{run}_{index}"
    bundle.mkdir(parents=True)
    names = ["list_notes", "add_note", "get_note", "list_notes"]
    declared = [(f"call_{i}", names[i % len(names)]) for i in range(len(calls or []))]
    traj = {"task_id": task, "trial_index": index, "status": "completed",
            "termination_reason": "user_stop", "messages": _messages(declared)}  # fmt: skip
    _dump(bundle / "trajectory.yaml", traj)
    if task_yaml is None:
        models: dict[str, Any] = {}
        if agent is not _OMIT:
            models["agent"] = {"provider": "openrouter", "name": agent}
        if judge is not _OMIT:
            models["judge"] = {"provider": "openrouter", "name": judge}
        task_yaml = {"task_id": task, "model_config": models}
    if task_yaml is not _OMIT:
        _dump(bundle / "task.yaml", task_yaml)
    if grade is None:
        if results is None:
            results = [{"id": CRITERION, "met": met, "score": 1.0 if met else 0.0},
                       {"id": "clarity", "met": True, "score": 1.0}]  # fmt: skip
        grade = {"binary_pass": bool(met), "score": 1.0, "criterion_results": results}
        if judge_status is not _OMIT:
            grade["judge_status"] = judge_status
    if grade is not _OMIT:
        _dump(bundle / "grade.yaml", grade)
    if calls is not None:
        log = [
            {"call_id": cid, "sequence": i, "tool_name": name, "arguments": {},
             "executor": "agent", "status": status, "output": "x", "latency_seconds": 0.1}
            for i, ((cid, name), status) in enumerate(zip(declared, calls, strict=True))
        ]  # fmt: skip
        _dump(bundle / "tool_log.yaml", log)
    _dump(bundle / "metrics.yaml", metrics if metrics is not None else {"schema_version": 4})
    _dump(bundle / "tools_schemas.yaml", [])
    return bundle


def _dump(path: Path, doc: Any) -> None:
    path.write_text(yaml.safe_dump(doc, sort_keys=False))


def shipped_runs(out: Path) -> list[Path]:
    """The 17 shipped trials put back into the run directories their manifests name.

    Each bundle goes to ``<source_run>/trials/<task_id>/<index>``, read off the shipped
    ``corpus.yaml`` rows the reference wrote; returns the run directories, sorted.
    """
    for half in ("met", "not_met"):
        manifest = yaml.safe_load((NOTES / half / "corpus.yaml").read_text())
        for row in manifest["bundles"]:
            index = row["directory"].rsplit("_trial", 1)[1]
            dest = out / row["source_run"] / "trials" / row["task_id"] / index
            shutil.copytree(NOTES / half / row["directory"], dest)
    return sorted(p for p in out.iterdir() if p.is_dir())


def shipped_rows() -> list[dict[str, Any]]:
    """Every bundle row of the two shipped manifests (the reference's own account)."""
    rows = []
    for half in ("met", "not_met"):
        rows += yaml.safe_load((NOTES / half / "corpus.yaml").read_text())["bundles"]
    return rows


OMIT = _OMIT
