"""Every kind of cluster the suite runs probes on, behind one interface: kinds.py (ClusterKind, and the version
axis of kinds that run a given release), registry.py (the kinds, each registered once, and where a front door
chooses one), lifecycle.py (one life for any cluster), and one package per kind: kind/ (a kind cluster from a node
image), local/ (Kubernetes built here and run as processes), existing/ (a cluster the user gives)."""
