"""Admission and pacing of calls per vendor, and the limit shared across processes."""
