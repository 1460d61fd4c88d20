"""What renders: the behaviour matrix (report_model.py, its words report_words.py, its rendering report.py +
templates/ + timeline_svg.py), spread.py, coverage.py and upgrade.py (what the records say across versions),
wording.py."""
