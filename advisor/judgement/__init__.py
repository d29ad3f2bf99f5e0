"""The judgement layer: the knowledge base (rule language, evaluation, lint, load and cache), facts,
the engine, the ranking, the decision and its record, explain, and the one advise() path. Imports
advisor.numbers, advisor.inputs and advisor.base (see README.md beside this file)."""
