"""``python -m analysis.report.cards [export_root] [out_dir]``: write one Markdown card per
task of the (hash-verified) export under ``<out_dir>/tables/cards/``, with an index
``README.md`` (linked from ``tables/README.md`` by ``table14_grounding``).

>>> main(["/no/such/export"])  # doctest: +SKIP
1
"""
from __future__ import annotations

import sys
from pathlib import Path

from .grounding import CARDS_DIR, write_cards


def main(argv: list[str]) -> int:
    from analysis.frozen import IntegrityError, load
    root = argv[0] if argv else "frozen_exports"
    out = argv[1] if len(argv) > 1 else "."
    try:
        export = load(root)
    except IntegrityError as exc:
        print(f"cards: verification FAILED, nothing written: {exc}", file=sys.stderr)
        return 1
    n = len(write_cards(export, out))
    print(f"cards: wrote {n} files under {Path(out) / 'tables' / CARDS_DIR}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
