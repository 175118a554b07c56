"""Regenerate the results tables of README.md and the model card from the committed evaluation files.

    python jobs/render_docs.py            # rewrite the blocks between <!-- results:begin NAME --> and its end
    python jobs/render_docs.py --check    # exit 1 if a document differs from what the results files give

NAME is the stem of a CSV in --results-dir (default docs/results/evaluation-*.csv, written by jobs/evaluate.py;
its .md beside it gives the command, checkpoint, machine and date). Only the text between the markers changes.
Exit status 0 when the documents agree (or were rewritten), 1 with --check when one would change, 2 when a
block names no results file or a file cannot be read.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from pipeline.evaluation.doc_tables import update_documents

REPO = Path(__file__).resolve().parents[1]
DOCUMENTS = ("README.md", "model/weights/MODEL_CARD.md")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--check", action="store_true", help="change nothing; exit 1 if a document would change")
    p.add_argument("--results-dir", type=Path, default=REPO / "docs" / "results",
                   help="folder of evaluation-*.csv files (default: docs/results)")
    p.add_argument("--documents", type=Path, nargs="+", default=[REPO / d for d in DOCUMENTS],
                   help="documents holding result blocks (default: README.md and the model card)")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    csvs = sorted(args.results_dir.glob("evaluation-*.csv"))
    try:
        changed = update_documents(args.documents, csvs, check=args.check, root=REPO)
    except (OSError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for doc in changed:
        print(f"{'would change' if args.check else 'rewrote'}: {doc}")
    return 1 if args.check and changed else 0


if __name__ == "__main__":
    sys.exit(main())
