"""The version axis: the releases Kubernetes published (releases.py), the feature gates of each (gates.py), the
releases the suite pins (pinned.py), the runs across them (make matrix, bisect, radar), any kind of cluster's releases
reached through its ReleaseAxis, and the one replay of recordings (replay.py)."""
