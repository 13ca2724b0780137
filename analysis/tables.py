"""``python -m analysis.tables``: regenerate every table and figure from the frozen export.

Entry point only; the command is :mod:`analysis._cli.tables` (docs/ARCHITECTURE.md, layers).
"""
if __name__ == "__main__":
    from analysis._cli.tables import main
    main()
