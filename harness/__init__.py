"""The probe suite's harness: versions and images, kind, transports, observation, expectations, records."""
