"""HDF5 robot datasets: ALOHA / ACT episode files and robomimic / LIBERO datasets.

The readers live in :mod:`.aloha` and :mod:`.robomimic` (the ``overlap.readers`` entry
points name them there); :mod:`._h5` holds the bounded, link-refusing HDF5 reads they
share. h5py (the ``robotdata`` extra) is imported only when a file is opened.
"""
