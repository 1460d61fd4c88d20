"""What renders: report.py + templates/ + timeline_svg.py (the behaviour matrix), spread.py, schedule.py
(PARALLEL=auto), coverage.py and upgrade.py (what the records say across versions), wording.py."""
