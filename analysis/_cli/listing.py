"""``python -m analysis``: the package's commands, one line each.

Every command of :data:`analysis._cli.config_check.COMMANDS` (with the first sentence of what
it does; ``python -m analysis.<command> --help`` gives its keys and examples), then the
tools that take plain arguments.

>>> text = listing()
>>> "python -m analysis.tables" in text and "python -m analysis.run" in text
True
"""
from __future__ import annotations

import sys

__all__ = ["listing", "main", "TOOLS"]

#: Tools outside the configured commands: (module, what it does).
TOOLS = (
    ("analysis.planners.llm.subset", "a small export of the first episodes of an export, "
                                     "for trying a model"),
    ("analysis.planners.llm.accounting", "summarize a chat run's call log (calls, tokens, "
                                         "latency, cost)"),
    ("analysis.planners.llm.testserver", "a loopback OpenAI-compatible server, for trying "
                                         "the chat runner without a model"),
)


def _first_sentence(text: str) -> str:
    head = text.split(". ", 1)[0].strip().rstrip(".")
    return head + "."


def listing() -> str:
    """The text ``python -m analysis`` prints."""
    from .config_check import COMMANDS
    width = max(len(f"python -m analysis.{n}") for n in COMMANDS)
    lines = ["ego2world-analysis commands (python -m analysis.<command> --help for the keys "
             "and examples of each):", ""]
    lines += [f"  {'python -m analysis.' + n:<{width}}  {_first_sentence(c.does)}"
              for n, c in COMMANDS.items()]
    lines += ["", "Tools (--help for their arguments):", ""]
    width = max(len(f"python -m {m}") for m, _ in TOOLS)
    lines += [f"  {'python -m ' + m:<{width}}  {what}" for m, what in TOOLS]
    lines += ["", "The Python API: import analysis; analysis.load() (docs/api.md)."]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] not in ("-h", "--help"):
        from .config_check import COMMANDS, suggest
        print(f"python -m analysis: takes no arguments; {argv[0]!r} is not a command"
              f"{suggest(argv[0], list(COMMANDS))} (run python -m analysis.<command>)",
              file=sys.stderr)
        return 2
    print(listing())
    return 0
