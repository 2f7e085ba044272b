"""Index: the lab's fingerprint store (APSW + search shards), the indexer that fills it, merge and scale-out."""
