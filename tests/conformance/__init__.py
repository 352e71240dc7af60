"""One conformance suite for every backend: same programs, compared with the reference."""
