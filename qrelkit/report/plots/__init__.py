"""Figures of the audit, FD and NRG (matplotlib Figure objects, never pyplot)."""
