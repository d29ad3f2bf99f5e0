"""The inputs layer: the workload (its schema, once), the catalog and its price sources, models from
Hugging Face configs. Imports only advisor.base (see README.md beside this file)."""
