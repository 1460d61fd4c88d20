"""Every kind node image the suite makes, tagged as `tags.py` says: `release.py` (kind's own builder, from a
published release), `node.py` with images.py, addons.py and crictl.py (from Go modules and Debian packages: no
registry needed), and `shutdown.py` (a base image's graceful-shutdown sibling)."""
