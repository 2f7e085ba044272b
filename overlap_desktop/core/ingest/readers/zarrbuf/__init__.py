"""zarr ReplayBuffers: the stored layout and per-chunk checks (:mod:`.layout`) and the
reader (:mod:`.reader`). zarr (the ``robotdata`` extra) is imported only when a buffer is opened."""
