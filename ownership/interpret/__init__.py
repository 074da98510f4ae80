"""Interpreters of the spec language: concrete (ints) and symbolic (expression graphs)."""
