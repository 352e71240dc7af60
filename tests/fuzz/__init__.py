"""The project's own fuzzing campaign (issue 16): random valid programs and API abuse against the reference.

``python -m tests.fuzz.run --seconds 600`` is the long run; tests/fuzz/test_fuzz_slice.py the seeded CI slice.
"""
