"""The numbers behind a recommendation, one module per question: how much memory (ledger), which
layouts (layouts), how fast (speed: time only), at what cost (cost: money only), judged how
(objective), which layout of one GPU (planner), the whole estimate (estimate); the value they make is
a frozen Plan (plan). Pure functions over a Workload and the Catalog; no I/O and no decisions (rules
decide). Imports advisor.inputs and advisor.base (see README.md beside this file)."""
