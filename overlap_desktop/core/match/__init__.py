"""Match: lines in offered-time x owned-time, the evidence model, and the comparisons built on them."""
