"""The store: the models and their QuerySets, the one apply, and what every writer
shares (roles, lookups, the vocabulary, slot locks, the audit feed, refusals, the
touched-slot marks). Imports nothing of write/, maintenance/, reads/, portability/.
"""
