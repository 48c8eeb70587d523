"""Retrieval evaluation on real data (LoCoMo, BEIR SciFact): `memory-engine eval ...`."""
