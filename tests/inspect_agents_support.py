"""Agent logs written by inspect_ai itself (mockllm, no network): react(), handoff(),
as_tool(), nested agents, a ToolError inside a sub-agent, a tool run without a model call.

``team``: one sample, solver ``react(name="boss")`` with the tools ``lookup``, a handoff
to ``helper`` and ``researcher`` as a tool. ``helper`` calls ``fetch``, which raises
``ToolError(FETCH_ERROR)``, then submits; ``researcher`` calls ``search``, then its own
sub-agent ``checker`` (as a tool), which calls ``verify``; then it submits. ``boss``
hands off, asks the researcher, calls ``lookup`` and submits. The mock model picks each
call from the tools it is offered and the results it has seen, so ``CALLS`` below is the
spec: every tool call inspect runs, in the order it starts, with the agent that makes it.

``kept``: react() with ``AgentSubmit(keep_in_messages=True)``: lookup, then submit.
``manual``: a solver runs ``lookup`` through ``execute_tools`` with a call no model made,
then ``generate()``: a tool call nothing declares.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

FETCH_ERROR = "fetch failed: host unreachable"
ANSWER = "value-of-alpha"
# (tool, agent) of every tool call of ``team``, in the order inspect starts them
CALLS = (
    ("transfer_to_helper", "boss"),
    ("fetch", "boss/helper"),
    ("submit", "boss/helper"),
    ("researcher", "boss"),
    ("search", "boss/researcher"),
    ("checker", "boss/researcher"),
    ("verify", "boss/researcher/checker"),
    ("submit", "boss/researcher/checker"),
    ("submit", "boss/researcher"),
    ("lookup", "boss"),
    ("submit", "boss"),
)


def _tools():  # noqa: ANN202 - inspect types are imported lazily
    from inspect_ai.tool import ToolError, tool

    @tool
    def lookup():  # noqa: ANN202
        async def execute(key: str) -> str:
            """Look a key up.

            Args:
                key: the key
            """
            return f"value-of-{key}"

        return execute

    @tool
    def fetch():  # noqa: ANN202
        async def execute(url: str) -> str:
            """Fetch a page.

            Args:
                url: the page
            """
            raise ToolError(FETCH_ERROR)

        return execute

    @tool
    def search():  # noqa: ANN202
        async def execute(query: str) -> str:
            """Search.

            Args:
                query: what to find
            """
            return f"found {query}"

        return execute

    @tool
    def verify():  # noqa: ANN202
        async def execute(claim: str) -> str:
            """Verify a claim.

            Args:
                claim: the claim
            """
            return f"verified {claim}"

        return execute

    return lookup, fetch, search, verify


def _done(input, name: str) -> bool:  # noqa: ANN001
    return any(m.role == "tool" and m.function == name for m in input)


def _policy(input, tools):  # noqa: ANN001, ANN202
    """(tool, arguments) the mock model calls next, from what it is offered and has seen."""
    offered = {t.name for t in tools}
    if "verify" in offered:
        steps = [("verify", {"claim": "alpha"})]
    elif "search" in offered:
        steps = [("search", {"query": "alpha"}), ("checker", {"input": "check alpha"})]
    elif "fetch" in offered:
        steps = [("fetch", {"url": "http://alpha"})]
    elif "transfer_to_helper" in offered:
        steps = [("transfer_to_helper", {}), ("researcher", {"input": "research alpha"}),
                 ("lookup", {"key": "alpha"})]  # fmt: skip
    else:
        steps = [("lookup", {"key": "alpha"})]
    for name, args in steps:
        if not _done(input, name):
            return name, args
    return ("submit", {"answer": ANSWER}) if "submit" in offered else None


def _mock_outputs(input, tools, tool_choice, config):  # noqa: ANN001, ANN202, ARG001
    from inspect_ai.model import ModelOutput, ModelUsage

    call = _policy(input, tools)
    if call is None:
        out = ModelOutput.from_content("mockllm/model", ANSWER)
    else:
        out = ModelOutput.for_tool_call("mockllm/model", *call)
    out.usage = ModelUsage(input_tokens=10, output_tokens=2, total_tokens=12)
    return out


def _task(name: str, solver: object):  # noqa: ANN202
    """One sample, scored by inclusion of the answer: every task here asks the same."""
    from inspect_ai import Task
    from inspect_ai.dataset import Sample
    from inspect_ai.scorer import includes

    return Task(
        name=name,
        dataset=[Sample(id="q1", input="look up alpha", target=ANSWER)],
        solver=solver,
        scorer=includes(),
    )


def _team_task():  # noqa: ANN202
    from inspect_ai.agent import as_tool, handoff, react

    lookup, fetch, search, verify = _tools()
    checker = react(name="checker", description="checks claims", tools=[verify()])
    researcher = react(
        name="researcher", description="researches", tools=[search(), as_tool(checker)]
    )
    helper = react(name="helper", description="fetches pages", tools=[fetch()])
    boss = react(name="boss", tools=[lookup(), handoff(helper), as_tool(researcher)])
    return _task("team", boss)


def _kept_task():  # noqa: ANN202
    from inspect_ai.agent import AgentSubmit, react

    lookup = _tools()[0]
    agent = react(name="solo", tools=[lookup()], submit=AgentSubmit(keep_in_messages=True))
    return _task("kept", agent)


def _manual_task():  # noqa: ANN202
    from inspect_ai.model import ChatMessageAssistant, execute_tools
    from inspect_ai.solver import generate, solver, use_tools
    from inspect_ai.tool import ToolCall

    lookup = _tools()[0]

    @solver
    def run_lookup_unasked():  # noqa: ANN202
        async def solve(state, generate_):  # noqa: ANN001, ANN202, ARG001
            call = ToolCall(id="unasked-1", function="lookup", arguments={"key": "beta"})
            await execute_tools([ChatMessageAssistant(content="", tool_calls=[call])],
                                [lookup()])  # fmt: skip
            return state

        return solve

    return _task("manual", [use_tools(lookup()), run_lookup_unasked(), generate()])


@dataclass(frozen=True)
class AgentLogs:
    team: Path
    kept: Path
    manual: Path


def write_agent_logs(root: Path) -> AgentLogs:
    """Each task's log, each alone in its own directory under ``root``."""
    from inspect_ai import eval as inspect_eval
    from inspect_ai.model import get_model

    model = get_model("mockllm/model", custom_outputs=_mock_outputs)
    paths = {}
    for name, task in (("team", _team_task()), ("kept", _kept_task()),
                       ("manual", _manual_task())):  # fmt: skip
        (log,) = inspect_eval(task, model=model, log_dir=str(root / name), display="none")
        assert log.status == "success", log.error
        paths[name] = Path(log.location)
    return AgentLogs(**paths)
