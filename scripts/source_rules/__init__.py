"""Helpers of scripts/check_source.py."""
