"""Tool calls that did not return: inspect_ai logs written by inspect_ai itself (mockllm).

``crash``: the tool raises an exception that is not a ToolError, which ends the sample in
error (``fail_on_error=False`` keeps the log); inspect marks its ToolEvent ``failed`` and
records no ``error`` and an empty result. ``slow``: the tool sleeps past the sample's
one-second ``time_limit``; inspect leaves its ToolEvent ``pending`` (no result, no
completion time), as it does for every call running when a sample is cancelled.
``unknown``: the model calls a tool the sample does not have; inspect files it as a
``parsing`` error ``Tool <name> not found``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ledger.analytics.sql import query
from ledger.app.ingest import ingest_into as ingest
from ledger.log.store import open_ledger
from tests.inspect_support import require_inspect

pytestmark = pytest.mark.xdist_group("inspect")


def _task():  # noqa: ANN202 - inspect types are imported lazily
    import asyncio

    from inspect_ai import Task
    from inspect_ai.dataset import Sample
    from inspect_ai.scorer import includes
    from inspect_ai.solver import generate, use_tools
    from inspect_ai.tool import tool

    @tool
    def wait():  # noqa: ANN202
        async def execute(secs: int) -> str:
            """Wait.

            Args:
                secs: seconds to wait
            """
            await asyncio.sleep(secs)
            return "waited"

        return execute

    @tool
    def crash():  # noqa: ANN202
        async def execute() -> str:
            """Crash."""
            raise RuntimeError("crashed past the tool")

        return execute

    return Task(
        name="outcomes",
        dataset=[Sample(id="slow", input="30"), Sample(id="crash", input="crash"),
                 Sample(id="unknown", input="unknown")],
        solver=[use_tools(wait(), crash()), generate()],
        scorer=includes(),
        time_limit=1,
    )


def _mock_outputs(input, tools, tool_choice, config):  # noqa: ANN001, ANN202, ARG001
    from inspect_ai.model import ModelOutput, ModelUsage

    last = input[-1]
    if last.role == "tool":
        out = ModelOutput.from_content("mockllm/model", "done")
    elif last.text in ("crash", "unknown"):
        name = "crash" if last.text == "crash" else "no_such_tool"
        out = ModelOutput.for_tool_call("mockllm/model", name, {})
    else:
        out = ModelOutput.for_tool_call("mockllm/model", "wait", {"secs": int(last.text)})
    out.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)
    return out


@pytest.fixture(scope="module")
def log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    require_inspect()
    from inspect_ai import eval as inspect_eval
    from inspect_ai.model import get_model

    model = get_model("mockllm/model", custom_outputs=_mock_outputs)
    root = tmp_path_factory.mktemp("outcomes")
    (written,) = inspect_eval(
        _task(), model=model, log_dir=str(root), display="none", fail_on_error=False
    )
    return Path(written.location)


def test_a_tool_call_that_crashed_never_returned_or_named_no_tool_is_not_a_success(
    log: Path, tmp_path: Path
) -> None:
    from inspect_ai.log import read_eval_log

    samples = read_eval_log(str(log)).samples
    tools = {s.id: [e for e in s.events if e.event == "tool"] for s in samples}
    # the shapes under test, as inspect wrote them: no error recorded on either call
    (crashed,), (cut,), (unknown,) = tools["crash"], tools["slow"], tools["unknown"]
    assert (crashed.failed, crashed.error, crashed.result) == (True, None, "")
    assert (cut.pending, cut.error, cut.completed) == (True, None, None)
    assert (unknown.error.type, unknown.error.message) == ("parsing", "Tool no_such_tool not found")
    with open_ledger(tmp_path / "ledger", create=True) as lg:
        ingest(lg, [log])
    rows = query(
        tmp_path / "ledger",
        "SELECT c.call_id, c.status, t.termination_reason FROM tool_calls c "
        "JOIN trials t USING (trial) ORDER BY c.call_id",
    ).to_pylist()
    got = {r["call_id"]: (r["status"], r["termination_reason"]) for r in rows}
    assert got == {crashed.id: ("error", "error"), cut.id: ("error", "time_limit"),
                   unknown.id: ("tool_not_found", "completed")}  # fmt: skip
    statuses = query(
        tmp_path / "ledger", "SELECT status FROM timeline WHERE kind = 'tool_result'"
    ).to_pylist()
    assert sorted(r["status"] for r in statuses) == ["error", "error", "tool_not_found"]
