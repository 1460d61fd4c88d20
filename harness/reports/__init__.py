"""What renders: the behaviour matrix (report_model.py, read from the records by report_reading.py, with
report_provenance.py and report_scenarios.py; its words report_words.py, its rendering report.py + templates/, its
timelines timeline_marks.py, timeline_layout.py and timeline_svg.py), spread.py, the claim ranges and their live runs
(coverage.py, with coverage_releases.py, coverage_plan.py and coverage_words.py), what changes between two releases
(upgrade_model.py, compared over the live observations by upgrade_compare.py, with its ends upgrade_ends.py and its
recordings upgrade_atlas.py, its words upgrade_words.py, its screen upgrade.py), wording.py."""
