"""The Qt-free core: readers -> frames -> fingerprint -> index -> manifest -> match -> report."""
