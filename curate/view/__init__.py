"""`curate view`: a read-only web application over run folders (docs/view.md).

`query` answers every question a page asks with a Polars query pushed down to the run's Parquet shards (no
run is ever loaded whole); `app` is the thin HTTP layer (Starlette, Jinja2 templates with autoescaping, a strict
Content Security Policy). Nothing here is imported by `import curate` or by other commands: the web framework
is the optional extra `view`.
"""
