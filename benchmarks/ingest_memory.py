"""Peak memory of ``vledger ingest`` against the bytes it reads (bounded readers).

    python -m benchmarks.ingest_memory [--trials 1000] [--file-mib 48] [--seed 0] [--scale 10]

Two inputs, each ingested by a fresh ``vledger ingest`` process into a fresh ledger, its
peak RSS read from ``getrusage(RUSAGE_CHILDREN)``:

* the generated corpus (``benchmarks.generate_corpus``, ``--trials`` bundles);
* one bundle whose trajectory.yaml is ``--file-mib`` MiB of messages: 48 MiB is the
  largest tried that the store's one-batch append accepts today. The reader's own limit
  is 64 MiB (``--max-file-bytes``), but at 63 MiB the append fails inside DuckDB ("Out
  of Memory", its buffer pool is capped at 128 MB, README § Performance) — refused as
  one Error line with the ledger unchanged, not a traceback.

With ``--scale K`` a third input, ``K × --trials`` generated bundles, shows whether the
peak stays flat in the corpus size (the plan is spooled to disk and appended in
bounded batches); its ratio to the first row is printed last.

Each row divides the peak by the bytes of the files read. A process that only creates an
empty ledger (``vledger init``) gives the fixed floor (interpreter, DuckDB, PyArrow, the
store), shown beside it, so the ratio of what ingest adds can be read too. (``vledger
--help`` loads none of those, so it is no floor.)
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from benchmarks.baseline import ROOT, peak_rss
from benchmarks.generate_corpus import generate


def child_peak_rss(*args: str | Path) -> int:
    """Peak RSS in bytes of one fresh ``vledger ARGS`` process of this tree."""
    return peak_rss(ROOT, list(args))


def input_bytes(root: Path) -> int:
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file())


def big_bundle(out: Path, corpus: Path, mib: int) -> Path:
    """A copy of one generated bundle whose trajectory holds ``mib`` MiB of messages."""
    src = next(p for p in sorted(corpus.iterdir()) if (p / "trajectory.yaml").is_file())
    out.mkdir(parents=True)
    for f in src.iterdir():
        if f.is_file():
            (out / f.name).write_bytes(f.read_bytes())
    text = (src / "trajectory.yaml").read_text()
    head, _, _ = text.partition("messages:")
    chunk = "lorem ipsum dolor sit amet " * 2400  # ~64 KiB per message
    n = (mib << 20) // (len(chunk) + 60)
    lines = [head, "messages:\n"]
    for i in range(n):
        role = "user" if i % 2 == 0 else "assistant"
        lines.append(f"- role: {role}\n  content: '{chunk}'\n")
    (out / "trajectory.yaml").write_text("".join(lines))
    (out / "tool_log.yaml").unlink(missing_ok=True)  # a message view only: no calls to join
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--trials", type=int, default=1000)
    ap.add_argument("--file-mib", type=int, default=48)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--scale", type=int, default=0, help="also ingest K × --trials bundles")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="vledger-bench-mem-") as tmp:
        work = Path(tmp)
        corpus = work / "corpus"
        generate(corpus, args.trials, args.seed)
        floor = child_peak_rss("init", "--ledger", work / "floor")
        rows = []
        for label, path in (
            (f"{args.trials} generated bundles", corpus),
            (f"one bundle, trajectory.yaml {args.file_mib} MiB", big_bundle(
                work / "big" / "big_trial0", corpus, args.file_mib)),
            *(((f"{args.scale * args.trials} generated bundles", _scaled(work, args)),)
              if args.scale else ()),
        ):  # fmt: skip
            size = input_bytes(path)
            peak = child_peak_rss("ingest", "--ledger", work / f"L-{len(rows)}", path)
            rows.append((label, size, peak))
    print(f"floor (vledger init): peak RSS {floor / 2**20:.0f} MiB")
    print("| input | bytes read | peak RSS | peak ÷ input | (peak − floor) ÷ input |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for label, size, peak in rows:
        print(
            f"| {label} | {size / 2**20:.1f} MiB | {peak / 2**20:.0f} MiB | "
            f"{peak / size:.1f}× | {(peak - floor) / size:.1f}× |"
        )
    if args.scale:
        print(f"peak at {args.scale}× the bundles ÷ peak at 1×: {rows[2][2] / rows[0][2]:.2f}")


def _scaled(work: Path, args: argparse.Namespace) -> Path:
    out = work / "scaled"
    generate(out, args.scale * args.trials, args.seed)
    return out


if __name__ == "__main__":
    main()
