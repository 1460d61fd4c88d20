"""Local clusters, Kubernetes built here and run as processes: clusters.py (local as a ClusterKind), provider.py (one
run's cluster), cluster.py (its components started in order) and what it relies on beside it."""
