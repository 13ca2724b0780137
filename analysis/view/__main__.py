"""``python -m analysis.view``: entry point only; the command is :mod:`analysis._cli.view`."""
if __name__ == "__main__":
    from analysis._cli.view import main
    main()
