"""The demo crawl generator used by `make demo` and the tests; not part of the library's core."""
