"""The parts of the suite's pytest plugin, by concern (harness/doors/pytest_plugin.py registers them)."""
