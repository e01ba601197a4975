"""Reading a run's own state back: `curate.io.state` (kept in the io layer, so that steps such as dedup read their
phases' files through it too); this name stays for the commands that import it from here."""

from curate.io.state import cause_under, corrupt, is_corrupt_data, parse_json, read_json, reading

__all__ = ["cause_under", "corrupt", "is_corrupt_data", "parse_json", "read_json", "reading"]
