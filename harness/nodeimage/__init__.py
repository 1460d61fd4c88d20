"""Kind node images made here from Go modules and Debian packages: no registry is needed (issue 14)."""
