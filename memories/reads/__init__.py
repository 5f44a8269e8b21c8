"""Reads too big for a QuerySet: current truth, contested values, slot history.
Above store/; imports nothing of write/ or maintenance/.
"""
