"""Admission records (SPEC §6)."""
