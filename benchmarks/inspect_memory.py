"""Peak memory of ``vledger ingest LOG`` against the number of samples in one inspect_ai log.

Writes one ``.eval`` log with inspect_ai itself (mockllm, a ``lookup`` tool, the
``includes`` scorer: ``benchmarks.inspect_import``), then rewrites it through inspect's
own ``write_eval_log`` holding ``--small`` and ``--large`` samples (copies of the real
ones under new ids and uuids), and measures the peak RSS of one fresh ``vledger ingest``
process over each, into a fresh ledger, beside the peak of a fresh process that reads
the same log with inspect_ai's own ``read_eval_log(f, resolve_attachments=True)`` (the
whole log at once), and, with ``--baseline REV``, ``vledger ingest`` from that revision.
Flat means the large peak is at most 1.3x the small one.

    PYTHONPATH=. python -m benchmarks.inspect_memory [--small 1000] [--large 10000] [--baseline REV]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

from benchmarks.baseline import OWN_PEAK, ROOT, export, peak_rss
from benchmarks.inspect_import import write_logs

MIB = 1024 * 1024
_READ = (
    "import sys; from inspect_ai.log import read_eval_log; "
    "read_eval_log(sys.argv[1], resolve_attachments=True); "
    f"print({OWN_PEAK})"
)


def read_peak(log: Path) -> int:
    """Peak RSS in bytes of a fresh process reading ``log`` whole with inspect_ai."""
    done = subprocess.run([sys.executable, "-c", _READ, str(log)], capture_output=True,
                          text=True, check=True)  # fmt: skip
    return int(done.stdout.split()[-1])


def scaled_log(seed: Path, samples: int, dest: Path) -> Path:
    """``seed``'s samples copied round-robin to ``samples`` of them, written by inspect."""
    from inspect_ai.log import read_eval_log, write_eval_log
    from shortuuid import uuid

    log = read_eval_log(str(seed))
    real = log.samples or []
    log.samples = [
        real[i % len(real)].model_copy(update={"id": f"s{i}", "uuid": uuid()})
        for i in range(samples)
    ]
    if log.eval.dataset is not None:
        log.eval.dataset.samples = samples
        log.eval.dataset.sample_ids = [s.id for s in log.samples]
    write_eval_log(log, str(dest))
    return dest


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--small", type=int, default=1000)
    ap.add_argument("--large", type=int, default=10000)
    ap.add_argument("--baseline", default=None, help="also measure this git revision")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        (seed,) = write_logs(tmp / "seed", 20, 1)
        logs = {n: scaled_log(seed, n, tmp / f"{n}" / f"{seed.stem}.eval")
                for n in (args.small, args.large)}  # fmt: skip
        trees = {"this code": ROOT}
        if args.baseline:
            trees[args.baseline] = export(args.baseline, tmp / "base")
        print(f"peak RSS (MiB) of vledger ingest over one .eval log of "
              f"{args.small:,} / {args.large:,} samples:")  # fmt: skip
        print("| code | small | large | large / small |")
        print("| --- | ---: | ---: | ---: |")
        rows = {}
        for name, code in trees.items():
            rows[f"vledger ingest ({name})"] = {
                n: peak_rss(code, ["ingest", log],
                            {"VLEDGER_HOME": str(tmp / f"L-{name}-{n}".replace(" ", "_"))})
                for n, log in logs.items()
            }  # fmt: skip
        rows["inspect_ai read_eval_log(resolve_attachments=True)"] = {
            n: read_peak(log) for n, log in logs.items()
        }
        for name, peak in rows.items():
            small, large = peak[args.small], peak[args.large]
            print(f"| {name} | {small / MIB:.0f} | {large / MIB:.0f} | {large / small:.2f} |")


if __name__ == "__main__":
    main()
