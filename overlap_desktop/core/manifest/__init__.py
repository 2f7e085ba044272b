"""Manifest: the ``.ovlm`` format (encode, parse, sections, Merkle binding), export and delivery verification."""
