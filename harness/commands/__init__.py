"""The `make ...` commands, one module per concern; harness/cli.py parses the command line and dispatches."""
