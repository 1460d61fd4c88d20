"""The version axis: the releases Kubernetes published, the feature gates of each, and the runs across them (make
matrix, bisect, radar), any kind of cluster's releases reached through its ReleaseAxis."""
