"""The toolkit's shared runtime: what every package uses and no contract defines.

``schemas/`` is the published contract (record models, JSON Schemas, rules, the release format) that other labs
write traces against; this package holds the code the toolkit's own packages share at run time: the one error
hierarchy and exit-code table (:mod:`toolkit.errors`), plug-in discovery for every registry
(:mod:`toolkit.plugins`), locking, strict JSON, the SQL sandbox, URL scrubbing, DuckDB's memory limit, hashing,
TOML lines, organisation names and the noise ceiling. It imports no other package of the toolkit.
"""
