"""The pure core of the memory store: no database, no clock, no Django.

``decisions`` (the write path's decision), ``confidence`` (decay from the
clock a caller passes in), ``normalize`` (comparison keys) and ``text`` (what
a required reason is) take values and return values, so their tests are
tables of data in and data out.
"""
