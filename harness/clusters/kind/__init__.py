"""kind clusters: clusters.py (kind as a ClusterKind), provider.py (one run's cluster), cluster.py (the kind CLI and
Docker), install.py (the kind release that built a node image), node_images.py (a node image for a release kind
does not publish), axis.py (the version axis on kind), node_shutdown.py (the graceful-node-shutdown cluster's config
and signal), leftovers.py."""
