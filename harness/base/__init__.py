"""What every part of the harness stands on: errors.py (the failures front doors turn into one line), process.py
(running a command), paths.py (the one owner of .tools/ paths and the names the suite gives), run.py (a run's
directory and provenance), versions.py (Kubernetes versions, version ranges, the oldest supported minor), inputs.py
(what a user gives, checked once for both front doors) with kubeconfig.py, families.py and manifests.py +
manifest_check.py (the claim families and what their probes apply), kubeapi.py (the API calls, as REST through
ApiClient)."""
