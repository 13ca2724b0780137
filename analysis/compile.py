"""``python -m analysis.compile``: compile the HD-EPIC annotations into the frozen cohort.

Entry point only; the command is :mod:`analysis._cli.compile` (docs/ARCHITECTURE.md, layers).
"""
if __name__ == "__main__":
    from analysis._cli.compile import main
    main()
