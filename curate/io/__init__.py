"""Everything that opens files: fsspec paths, readers, writers, corpus scans, model files. Imports only `curate.core`."""
