"""Log directories as inspect_ai lays them out: an eval_set with a retried task, and a
directory holding bundles and logs together.

The eval set is written by inspect_ai's own ``eval_set`` (mockllm, no network): task
``steady`` (samples a, b) and task ``shaky``, whose solver raises on sample ``b`` the
first time only, so inspect retries the task: the failed attempt's log stays beside the
retry's (``retry_cleanup=False``), and the retry reuses sample ``a`` (same uuid) and
re-runs ``b``.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from ledger.app.ingest import ingest_into as ingest
from ledger.log.store import Ledger, open_ledger
from tests.inspect_support import EPOCHS, SAMPLES, InspectLogs, require_inspect
from tests.inspect_support import inspect_logs as _session_logs

pytestmark = pytest.mark.xdist_group("inspect")
inspect_logs = _session_logs
ROOT = Path(__file__).resolve().parents[1]


def _eval_set(log_dir: Path, flag: Path) -> list:  # noqa: ANN202
    from inspect_ai import Task, eval_set
    from inspect_ai.dataset import Sample
    from inspect_ai.model import ModelOutput, ModelUsage, get_model
    from inspect_ai.scorer import includes
    from inspect_ai.solver import generate, solver

    @solver
    def flaky():  # noqa: ANN202
        async def solve(state, generate_):  # noqa: ANN001, ANN202, ARG001
            if state.sample_id == "b" and not flag.exists():
                flag.write_text("failed once")
                raise RuntimeError("transient failure")
            return state

        return solve

    def outputs(input, tools, tool_choice, config):  # noqa: ANN001, ANN202, ARG001
        out = ModelOutput.from_content("mockllm/model", "ok")
        out.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)
        return out

    def task(name: str, solvers: list) -> Task:
        samples = [Sample(id="a", input="x", target="ok"), Sample(id="b", input="y", target="ok")]
        return Task(name=name, dataset=samples, solver=solvers, scorer=includes())

    ok, logs = eval_set(
        [task("steady", [generate()]), task("shaky", [flaky(), generate()])],
        log_dir=str(log_dir), model=get_model("mockllm/model", custom_outputs=outputs),
        retry_attempts=2, retry_wait=0.1, retry_cleanup=False, display="none",
    )  # fmt: skip
    assert ok
    return logs


@pytest.fixture(scope="module")
def eval_set_dir(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list]:
    require_inspect()
    base = tmp_path_factory.mktemp("evalset")
    final = _eval_set(base / "logs", base / "flag")
    return base / "logs", final


@pytest.fixture
def lg(tmp_path: Path) -> Iterator[Ledger]:
    with open_ledger(tmp_path / "ledger", create=True) as ledger:
        yield ledger


def _headers(logs: Path) -> list:
    from inspect_ai.log import read_eval_log

    return [read_eval_log(str(p), header_only=True) for p in sorted(logs.glob("*.eval"))]


def test_an_eval_set_directory_reads_every_log_once_and_names_each_retry(
    lg: Ledger, eval_set_dir: tuple[Path, list]
) -> None:
    logs, final = eval_set_dir
    headers = _headers(logs)
    shaky = [h for h in headers if h.eval.task == "shaky"]
    assert sorted(h.status for h in shaky) == ["error", "success"]  # a retry left two logs
    assert (logs / "logs.json").is_file()
    report = ingest(lg, [logs])
    assert report.skipped == [] and report.inconsistent == []
    # steady: a, b; shaky: a and the failed b in the first attempt, b again in the retry
    assert report.trials_new == 5
    (retried,) = report.retried_tasks
    (final_shaky,) = [f for f in final if f.eval.task == "shaky"]
    assert retried["task"] == "shaky" and retried["task_id"] == final_shaky.eval.task_id
    assert [a["eval_id"] for a in retried["attempts"]][-1] == final_shaky.eval.eval_id
    assert retried["final"].endswith(Path(final_shaky.location).name)
    assert retried["reused_samples"] == 1  # the retry's copy of a, not a second trial
    assert retried["eval_set_id"] == final_shaky.eval.eval_set_id
    shaky_a = [s for s in report.trial_streams if "/shaky/a_epoch1_" in s]
    assert len(shaky_a) == 1
    # read again: nothing new, the same trials
    again = ingest(lg, [logs])
    assert (again.events_new, again.trials_present) == (0, 5)


def test_a_directory_of_bundles_and_logs_reads_both(
    lg: Ledger, inspect_logs: InspectLogs, tmp_path: Path
) -> None:
    mixed = tmp_path / "mixed"
    shutil.copytree(ROOT / "corpora" / "notes_duplicate_check", mixed)
    shutil.copyfile(inspect_logs.eval_log, mixed / inspect_logs.eval_log.name)
    bundles = sum(1 for _ in mixed.rglob("trajectory.yaml"))
    report = ingest(lg, [mixed])
    assert report.trials_new == bundles + len(SAMPLES) * EPOCHS
