"""Real inspect_ai logs, written by inspect_ai itself (mockllm, no network), once per test run.

The task: two samples, two epochs, one tool (``lookup``) and the ``includes`` scorer. The
mock model calls ``lookup`` once per sample and then answers with the tool's text; sample
``s2`` asks for the key ``missing``, for which the tool raises ``ToolError``. Every model
call reports 100 input / 20 output tokens and $0.001, so each sample × epoch used 200 / 40
tokens and $0.002 (two calls). These numbers are the spec the tests assert against.

``before/runs/`` holds a copy of the ``.eval`` log as written and ``after/runs/`` the same
copy re-scored in place with the ``answered`` scorer (``overwrite``), so inspect's own file
no longer shows the ``includes`` scores. ``beside/`` holds the log and the copy
``inspect score`` without ``--overwrite`` writes next to it (``<name>-scored.eval``: the
``answered`` scores appended to ``includes``), ``elsewhere/other/`` only that copy.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

TASK = "lookup_task"
SAMPLES = ("s1", "s2")
EPOCHS = 2
CALL_INPUT, CALL_OUTPUT, CALL_COST = 100, 20, 0.001
TOOL_ERROR = "no such key: missing"


def require_inspect() -> None:
    """Skip without inspect_ai locally; in CI (``CI`` set) its absence is a failure."""
    try:
        import inspect_ai  # noqa: F401
    except ImportError:
        if os.environ.get("CI"):
            pytest.fail("inspect_ai is a dev dependency; CI must run the inspect tests")
        pytest.skip("inspect_ai not installed (pip install -e '.[dev]')")


def _task():  # noqa: ANN202 - inspect types are imported lazily
    from inspect_ai import Task
    from inspect_ai.dataset import Sample
    from inspect_ai.scorer import includes
    from inspect_ai.solver import generate, use_tools
    from inspect_ai.tool import ToolError, tool

    @tool
    def lookup():  # noqa: ANN202
        async def execute(key: str) -> str:
            """Look a key up.

            Args:
                key: the key to look up
            """
            if key == "missing":
                raise ToolError(TOOL_ERROR)
            return f"value-of-{key}"

        return execute

    return Task(
        name=TASK,
        dataset=[
            Sample(id="s1", input="look up alpha", target="value-of-alpha"),
            Sample(id="s2", input="look up missing", target="value-of-missing"),
        ],
        solver=[use_tools(lookup()), generate()],
        scorer=includes(),
        epochs=EPOCHS,
    )


def _mock_outputs(input, tools, tool_choice, config):  # noqa: ANN001, ANN202, ARG001
    from inspect_ai.model import ModelOutput, ModelUsage

    last = input[-1]
    if last.role == "tool":
        out = ModelOutput.from_content("mockllm/model", f"answer: {last.text}")
    else:
        key = "missing" if "missing" in last.text else "alpha"
        out = ModelOutput.for_tool_call("mockllm/model", "lookup", {"key": key})
    out.usage = ModelUsage(
        input_tokens=CALL_INPUT,
        output_tokens=CALL_OUTPUT,
        total_tokens=CALL_INPUT + CALL_OUTPUT,
        total_cost=CALL_COST,
    )
    return out


def _answered():  # noqa: ANN202
    from inspect_ai.scorer import Score, accuracy, scorer

    @scorer(metrics=[accuracy()])
    def answered():  # noqa: ANN202
        async def score(state, target):  # noqa: ANN001, ANN202, ARG001
            text = state.output.completion
            ok = text.strip() != "answer:"
            return Score(value=1.0 if ok else 0.0, explanation=f"answer was {text!r}")

        return score

    return answered()


def write_logs(root: Path, log_format: str = "eval") -> Path:
    """Run the task on mockllm and return the log file inspect wrote under ``root``."""
    from inspect_ai import eval as inspect_eval
    from inspect_ai.model import get_model

    model = get_model("mockllm/model", custom_outputs=_mock_outputs)
    (log,) = inspect_eval(
        _task(), model=model, log_dir=str(root), log_format=log_format, display="none"
    )
    return Path(log.location)


def convert(source: Path, target: Path) -> None:
    """The log rewritten in the other format by inspect's own reader and writer."""
    from inspect_ai.log import read_eval_log, write_eval_log

    write_eval_log(read_eval_log(str(source)), str(target))


def rescore(path: Path) -> None:
    """Re-score the log with ``answered`` (overwrite) and write it back in place."""
    from inspect_ai import score
    from inspect_ai.log import read_eval_log, write_eval_log

    log = score(read_eval_log(str(path)), _answered(), action="overwrite", display="none")
    write_eval_log(log, str(path))


def score_to_new_file(path: Path, target: Path) -> None:
    """What ``inspect score`` without ``--overwrite`` does: the scores appended, the log
    written to a new file (its name: inspect's ``-scored`` suggestion)."""
    from inspect_ai import score
    from inspect_ai.log import read_eval_log, write_eval_log

    log = score(read_eval_log(str(path)), _answered(), action="append", display="none")
    write_eval_log(log, str(target))


@dataclass(frozen=True)
class InspectLogs:
    logs: Path  # a directory holding the .eval log
    eval_log: Path
    json_log: Path  # the same log rewritten as .json by inspect's writer, in its own directory
    original: Path  # a copy of eval_log before re-scoring, alone in its directory
    rescored: Path  # eval_log's copy, re-scored in place
    beside: Path  # a directory: eval_log's copy and its -scored copy
    elsewhere: Path  # a directory holding only a -scored copy


@pytest.fixture(scope="session")
def inspect_logs(tmp_path_factory: pytest.TempPathFactory) -> InspectLogs:
    require_inspect()
    base = tmp_path_factory.mktemp("inspect")
    logs = base / "logs"
    eval_log = write_logs(logs, "eval")
    json_log = base / "json" / "logs" / eval_log.with_suffix(".json").name
    json_log.parent.mkdir(parents=True)
    convert(eval_log, json_log)
    original = base / "before" / "runs" / eval_log.name
    original.parent.mkdir(parents=True)
    shutil.copyfile(eval_log, original)
    rescored = base / "after" / "runs" / eval_log.name
    rescored.parent.mkdir(parents=True)
    shutil.copyfile(eval_log, rescored)
    rescore(rescored)
    beside = base / "beside"
    beside.mkdir()
    shutil.copyfile(eval_log, beside / eval_log.name)
    scored_name = eval_log.name.replace(".eval", "-scored.eval")
    score_to_new_file(eval_log, beside / scored_name)
    elsewhere = base / "elsewhere" / "other"
    elsewhere.mkdir(parents=True)
    shutil.copyfile(beside / scored_name, elsewhere / scored_name)
    return InspectLogs(logs, eval_log, json_log, original, rescored, beside, elsewhere)
