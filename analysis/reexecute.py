"""``python -m analysis.reexecute``: replay every run of the export through the executor.

Entry point only; the command is :mod:`analysis._cli.reexecute` (docs/ARCHITECTURE.md, layers).
"""
if __name__ == "__main__":
    from analysis._cli.reexecute import main
    main()
