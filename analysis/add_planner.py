"""``python -m analysis.add_planner``: add a planner's records to the export.

Entry point only; the command is :mod:`analysis._cli.add_planner` (docs/ARCHITECTURE.md, layers).
"""
if __name__ == "__main__":
    from analysis._cli.add_planner import main
    main()
