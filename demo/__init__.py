"""The atlas-web demo. ``python -m demo`` runs every example on every available backend
(``demo.native``) and prints a table: example, backend, check, and timings."""
