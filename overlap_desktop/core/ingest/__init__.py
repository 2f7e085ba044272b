"""Ingest: readers open recordings, frames are sampled and normalised, PDQ fingerprints computed."""
