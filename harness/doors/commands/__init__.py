"""The `make ...` commands, one module per concern; harness/doors/cli.py parses the command line and dispatches."""
