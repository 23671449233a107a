"""Buckets (Paimon's ``bucket`` package): the bucket of every row (Paimon's default and ``mod``
bucket functions, vectorized), the partition of every row, and the bucket modes of a table."""
