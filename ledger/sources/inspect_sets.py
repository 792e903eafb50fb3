"""The logs of one directory read as inspect lays them out (docs/readme/inspect.md § "Eval sets").

An ``eval_set`` directory holds one log per task attempt: a retried task leaves the
failed attempt's log beside the retry's, which inspect seeds with every sample the
failed attempt completed (same sample ``uuid``) and re-runs the rest. Logs are read in
name order, which inspect's timestamped names make the order they were started, so a
sample is read where it ran — the first attempt holding its uuid — and a later
attempt's copy of it is left out rather than counted as a second trial. Every log is
read once; each task's attempts are reported in order, and the newest is the one
inspect counts as final (``latest_completed_task_eval_logs``: a task's newest log).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class _TaskLogs:
    task: str
    eval_set_id: str | None
    logs: list[tuple[str, str, str]] = field(default_factory=list)  # (created, eval_id, label)
    ran_in: dict[str, str] = field(default_factory=dict)  # sample uuid/epoch -> eval_id
    reused: int = 0


@dataclass
class LogSet:
    """What the logs of one PATH read so far hold, by inspect ``task_id``."""

    tasks: dict[str, _TaskLogs] = field(default_factory=dict)

    def opened(self, spec: Any, label: str) -> None:
        """A log of ``spec``'s task starts being read."""
        entry = self.tasks.setdefault(
            spec.task_id, _TaskLogs(spec.task, getattr(spec, "eval_set_id", None))
        )
        entry.logs.append((str(spec.created), spec.eval_id, label))

    def first_run(self, spec: Any, sample: Any) -> bool:
        """False for a sample an earlier attempt (another eval_id) of the same task already
        ran: a retry's copy, same uuid. The same eval read twice (a re-scored copy) is the
        same trial and counts, and so does a sample without a uuid (inspect < 0.3.70)."""
        uuid = getattr(sample, "uuid", None)
        if uuid is None:
            return True
        entry = self.tasks[spec.task_id]
        ran = entry.ran_in.setdefault(f"{uuid}/{sample.epoch}", spec.eval_id)
        if ran != spec.eval_id:
            entry.reused += 1
            return False
        return True

    def summary(self) -> list[dict[str, Any]]:
        """One row per task read more than once: its attempts in order and the final one."""
        rows = []
        for task_id, t in self.tasks.items():
            ordered = sorted(set(t.logs))
            if len({e for _, e, _ in ordered}) < 2:  # one eval (its copies are not retries)
                continue
            rows.append(
                {
                    "task": t.task,
                    "task_id": task_id,
                    "eval_set_id": t.eval_set_id,
                    "attempts": [{"eval_id": e, "log": label} for _, e, label in ordered],
                    "final": ordered[-1][2],
                    "reused_samples": t.reused,
                }
            )
        return rows
