"""Go builds from the Go module proxy, for the local provider and the node images alike: go.py (the go command,
its environment, a build step), toolchain.py (which Go builds a release), modules.py (what the proxy serves),
staging.py (k8s.io/kubernetes's staging modules and their published twins), kubernetes.py (a release's
components, built once), openapi.py (the file tags before 1.24 lack) and progress.py (a running build's progress)."""
