"""Every kind of cluster the suite runs probes on: lifecycle.py (one life for any of them), and one package per
kind: kind/ (a kind cluster from a node image), local/ (Kubernetes built here and run as processes)."""
