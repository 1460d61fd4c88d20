"""An existing cluster (KUBECONFIG_FILE and CONTEXT): reached, never made, waited for or removed (clusters.py)."""
