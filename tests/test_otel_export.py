"""`vledger export --otel FILE`: OTLP/JSON that opentelemetry-proto parses, convention names only.

The oracles are the two OpenTelemetry packages: ``opentelemetry-proto`` parses the document
as ``TracesData`` (after the one documented OTLP/JSON deviation from protobuf's JSON: ids
are hex, not base64), and every attribute key must be a constant of
``opentelemetry-semantic-conventions``.
"""

from __future__ import annotations

import base64
import importlib
import json
import pkgutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from ledger.app.ingest import ingest_into as ingest
from ledger.cli import main
from ledger.log.store import open_ledger
from tests.inspect_support import SAMPLES, TOOL_ERROR, InspectLogs
from tests.inspect_support import inspect_logs as _session_logs

# one xdist worker builds this module's shared fixture once (make test: --dist loadgroup)
pytestmark = pytest.mark.xdist_group("inspect")


inspect_logs = _session_logs  # the session-scoped fixture, under the name the tests ask for

ROOT = Path(__file__).resolve().parents[1]
CORPORA = ROOT / "corpora"  # what `vledger demo` ingests


def _convention_names() -> set[str]:
    import opentelemetry.semconv._incubating.attributes as incubating
    import opentelemetry.semconv.attributes as stable

    names: set[str] = set()
    for pkg in (stable, incubating):
        for mod in pkgutil.iter_modules(pkg.__path__):
            m = importlib.import_module(f"{pkg.__name__}.{mod.name}")
            names |= {v for k, v in vars(m).items() if k.isupper() and isinstance(v, str)}
    return names


def _parse(doc: dict):  # noqa: ANN202
    """The document as opentelemetry-proto's TracesData (hex ids → protobuf's base64)."""
    from google.protobuf.json_format import ParseDict
    from opentelemetry.proto.trace.v1.trace_pb2 import TracesData

    def b64(h: str) -> str:
        return base64.b64encode(bytes.fromhex(h)).decode()

    doc = json.loads(json.dumps(doc))
    for rs in doc["resourceSpans"]:
        for ss in rs["scopeSpans"]:
            for span in ss["spans"]:
                for key in ("traceId", "spanId", "parentSpanId"):
                    if key in span:
                        span[key] = b64(span[key])
    return ParseDict(doc, TracesData())


def _keys(data) -> Iterator[str]:  # noqa: ANN001
    for rs in data.resource_spans:
        yield from (a.key for a in rs.resource.attributes)
        for ss in rs.scope_spans:
            for span in ss.spans:
                yield from (a.key for a in span.attributes)
                for ev in span.events:
                    yield from (a.key for a in ev.attributes)


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory, inspect_logs: InspectLogs) -> dict:
    base = tmp_path_factory.mktemp("otel")
    with open_ledger(base / "L", create=True) as lg:
        ingest(lg, [CORPORA, inspect_logs.logs])
    out = base / "traces.json"
    res = CliRunner().invoke(main, ["export", "--otel", str(out), "--ledger", str(base / "L"),
                                    "--json"])  # fmt: skip
    assert res.exit_code == 0, res.output
    report = json.loads(res.stdout)
    return {"report": report, "doc": json.loads(out.read_bytes()), "out": out, "ledger": base / "L"}


def test_the_export_parses_as_otlp_and_names_only_convention_attributes(exported: dict) -> None:
    from opentelemetry.semconv._incubating.attributes.gen_ai_attributes import (
        GenAiOperationNameValues,
    )

    data = _parse(exported["doc"])
    spans = [s for rs in data.resource_spans for ss in rs.scope_spans for s in ss.spans]
    assert len(spans) == exported["report"]["spans"]
    unknown = set(_keys(data)) - _convention_names()
    assert unknown == set()
    ops = {a.value.string_value for s in spans for a in s.attributes
           if a.key == "gen_ai.operation.name"}  # fmt: skip
    assert ops == {"invoke_agent", "chat", "execute_tool"}
    assert ops <= {v.value for v in GenAiOperationNameValues}


def test_one_trace_per_trial_rooted_at_the_agent_turn(exported: dict) -> None:
    spans = exported["doc"]["resourceSpans"][0]["scopeSpans"][0]["spans"]
    roots = [s for s in spans if "parentSpanId" not in s]
    # 17 shipped notes trials + 2 inspect samples × 2 epochs
    assert len(roots) == exported["report"]["traces"] == 17 + len(SAMPLES) * 2
    assert len({s["traceId"] for s in roots}) == len(roots)
    by_id = {s["spanId"]: s for s in spans}
    for s in spans:
        if "parentSpanId" in s:
            parent = by_id[s["parentSpanId"]]
            assert parent["traceId"] == s["traceId"] and "parentSpanId" not in parent


def _attrs(span: dict) -> dict:
    return {a["key"]: next(iter(a["value"].values())) for a in span["attributes"]}


def test_a_failed_tool_call_is_an_error_span_and_the_grade_sits_on_the_trial(
    exported: dict,
) -> None:
    spans = exported["doc"]["resourceSpans"][0]["scopeSpans"][0]["spans"]
    failed = [s for s in spans if s.get("status", {}).get("code") == 2
              and _attrs(s).get("gen_ai.operation.name") == "execute_tool"]  # fmt: skip
    inspect_failed = [s for s in failed if s["status"]["message"] == TOOL_ERROR]
    assert len(inspect_failed) == 2  # s2, both epochs
    # the agent that made the call: inspect's top-level solver here; a bundle names none
    assert {_attrs(s).get("gen_ai.agent.name") for s in inspect_failed} == {"generate"}
    assert all("gen_ai.agent.name" not in _attrs(s) for s in failed if s not in inspect_failed)
    for s in inspect_failed:
        a = _attrs(s)
        assert (a["gen_ai.tool.name"], a["error.type"]) == ("lookup", "error")
        assert a["gen_ai.tool.call.id"]
    inspect_roots = [s for s in spans if "parentSpanId" not in s
                     and _attrs(s).get("gen_ai.request.model") == "mockllm/model"]  # fmt: skip
    labels = sorted(_attrs(s)["gen_ai.evaluation.score.label"] for s in inspect_roots)
    assert labels == ["fail", "fail", "pass", "pass"]
    for root in inspect_roots:
        a = _attrs(root)
        # two mock calls of 100 input / 20 output tokens each (tests/inspect_support.py)
        assert (a["gen_ai.usage.input_tokens"], a["gen_ai.usage.output_tokens"]) == ("200", "40")
        assert [e["name"] for e in root["events"]] == ["gen_ai.evaluation.result"]


def test_the_export_is_deterministic_and_never_overwrites(exported: dict, tmp_path: Path) -> None:
    again = tmp_path / "again.json"
    args = ["export", "--otel", str(again), "--ledger", str(exported["ledger"])]
    assert CliRunner().invoke(main, args).exit_code == 0
    assert again.read_bytes() == exported["out"].read_bytes()
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 1 and "exists" in res.output and "Traceback" not in res.output


def test_the_export_refuses_a_file_inside_the_ledger(exported: dict, tmp_path: Path) -> None:
    """No command writes inside a ledger directory but the store (README § CLI reference):
    --otel was the one output that did, and wrote LEDGER/x.json. Refused, nothing written,
    also when --parquet is given beside it."""
    lg = exported["ledger"]
    before = sorted(p.name for p in lg.iterdir())
    (tmp_path / "link").symlink_to(lg, target_is_directory=True)
    for target in (lg / "x.json", tmp_path / "link" / "x.json"):
        pq = ["--parquet", str(tmp_path / "pq")]
        res = CliRunner().invoke(main, ["export", "--otel", str(target), *pq, "--ledger", str(lg)])
        assert res.exit_code == 1 and "refusing to write the OpenTelemetry export" in res.stderr
        assert sorted(p.name for p in lg.iterdir()) == before and not (tmp_path / "pq").exists()
