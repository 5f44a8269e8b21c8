"""The actions that write: assertions, the import, withdrawals, merges, reverts,
review claims. Above store/; never imports maintenance/.
"""
