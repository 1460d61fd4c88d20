"""kind clusters: cluster.py (the kind CLI and Docker), install.py (the kind release that built a node image) and
node_shutdown.py (the graceful-node-shutdown cluster's config and signal)."""
