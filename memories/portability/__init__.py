"""The store's export and its restore."""
