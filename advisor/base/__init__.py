"""The base layer: errors with a location, safe file writing, the cache, YAML read as plain data.
Imports nothing else of the advisor (see README.md beside this file)."""
