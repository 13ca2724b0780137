"""``python -m analysis.run``: run a planner on a suite and write the run into the export.

Entry point only; the command is :mod:`analysis._cli.run` (docs/ARCHITECTURE.md, layers).
"""
if __name__ == "__main__":
    from analysis._cli.run import main
    main()
