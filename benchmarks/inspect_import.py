"""Importing inspect_ai logs beside inspect_ai's own ``read_eval_log`` over the same files.

    PYTHONPATH=. python -m benchmarks.inspect_import [--samples 1000] [--logs 4] [--repeat 3]

Writes ``--logs`` real logs with inspect_ai itself (mockllm, a ``lookup`` tool, the
``includes`` scorer; every other sample's tool call errors) holding ``--samples`` samples
in all (kept under ``benchmarks/out/inspect_logs`` and reused when already there), then,
best of ``--repeat``, interleaved in one process:

* baseline — inspect_ai's own ``read_eval_log(f)`` over every file, and
  ``read_eval_log(f, resolve_attachments=True)``, the call the importer makes (both with
  the cyclic GC on, as plain inspect use runs; ingest pauses it while planning, as for
  bundles, which is why ingest can undercut the second line);
* ``ingest`` into a fresh ledger (read + map + timeline + one append);
* re-ingest of the same logs into that ledger (0 new, all already present).

Needs the ``inspect`` extra (``pip install -e '.[inspect]'``).
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

from ledger.app.ingest import ingest_into as ingest
from ledger.log.store import open_ledger

ROOT = Path(__file__).resolve().parents[1]


def _outputs(input, tools, tool_choice, config):  # noqa: ANN001, ANN202, ARG001
    from inspect_ai.model import ModelOutput, ModelUsage

    last = input[-1]
    if last.role == "tool":
        out = ModelOutput.from_content("mockllm/model", f"answer: {last.text}")
    else:
        key = "missing" if "missing" in last.text else "alpha"
        out = ModelOutput.for_tool_call("mockllm/model", "lookup", {"key": key})
    out.usage = ModelUsage(input_tokens=100, output_tokens=20, total_tokens=120, total_cost=0.001)
    return out


def write_logs(out: Path, samples: int, logs: int) -> list[Path]:
    """``logs`` tasks of ``samples // logs`` samples each, one eval, one log per task."""
    from inspect_ai import Task
    from inspect_ai import eval as inspect_eval
    from inspect_ai.dataset import Sample
    from inspect_ai.model import get_model
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
                raise ToolError("no such key")
            return f"value-of-{key}"

        return execute

    per = samples // logs
    tasks = [
        Task(
            name=f"bench_{t}",
            dataset=[
                Sample(
                    id=f"s{i}",
                    input="look up missing" if i % 2 else "look up alpha",
                    target="value-of-alpha",
                )
                for i in range(per)
            ],  # fmt: skip
            solver=[use_tools(lookup()), generate()],
            scorer=includes(),
        )
        for t in range(logs)
    ]
    model = get_model("mockllm/model", custom_outputs=_outputs)
    done = inspect_eval(tasks, model=model, log_dir=str(out), display="none", max_tasks=logs)
    return sorted(Path(log.location) for log in done)


def _timed(fn) -> float:  # noqa: ANN001
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--samples", type=int, default=1000)
    ap.add_argument("--logs", type=int, default=4)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "out" / "inspect_logs")
    args = ap.parse_args()
    from inspect_ai.log import read_eval_log

    out = args.out / f"{args.samples}x{args.logs}"
    files = sorted(out.glob("*.eval")) if out.is_dir() else []
    if len(files) != args.logs:
        shutil.rmtree(out, ignore_errors=True)
        t = _timed(lambda: files.extend(write_logs(out, args.samples, args.logs)))
        print(f"wrote {len(files)} log(s) with inspect_ai in {t:.1f} s")
    n = sum(len(read_eval_log(str(f)).samples or ()) for f in files)
    size = sum(f.stat().st_size for f in files)
    best = {"floor": 1e9, "plain": 1e9, "ingest": 1e9, "reingest": 1e9}
    events = 0
    for _ in range(args.repeat):
        best["plain"] = min(best["plain"], _timed(lambda: [read_eval_log(str(f)) for f in files]))
        best["floor"] = min(best["floor"], _timed(
            lambda: [read_eval_log(str(f), resolve_attachments=True) for f in files]))  # fmt: skip
        with tempfile.TemporaryDirectory() as tmp, open_ledger(Path(tmp) / "L", create=True) as lg:
            t0 = time.perf_counter()
            rep = ingest(lg, [out])
            best["ingest"] = min(best["ingest"], time.perf_counter() - t0)
            events = rep.events_new
            t0 = time.perf_counter()
            again = ingest(lg, [out])
            best["reingest"] = min(best["reingest"], time.perf_counter() - t0)
            assert again.events_new == 0 and again.trials_present == n
    base = best["plain"]
    print(f"{n} samples in {len(files)} .eval logs, {size / 1e6:.1f} MB; "
          f"best of {args.repeat}, interleaved")  # fmt: skip
    print("| measurement | seconds | samples/s | × plain read_eval_log |")
    print("| --- | ---: | ---: | ---: |")
    rows = [
        ("inspect_ai read_eval_log (plain)", best["plain"]),
        ("inspect_ai read_eval_log(resolve_attachments=True)", best["floor"]),
        (f"vledger ingest into a fresh ledger ({events} events, one append)", best["ingest"]),
        ("re-ingest (0 new, all already present)", best["reingest"]),
    ]
    for label, secs in rows:
        print(f"| {label} | {secs:.2f} | {n / secs:,.0f} | {secs / base:.2f} |")


if __name__ == "__main__":
    main()
