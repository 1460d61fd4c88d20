"""Runs and reports: report.py + templates/ + timeline_svg.py (the behaviour matrix), spread.py, schedule.py
(PARALLEL=auto), matrix.py and bisect.py (the version axis, on any kind of cluster), compare.py, coverage.py,
radar.py and upgrade.py (what the records say across versions)."""
