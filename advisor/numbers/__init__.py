"""The numbers behind a recommendation, one module per question: how much memory (ledger), which
layout (plan), how fast (speed), at what cost (cost). Pure functions over a Workload and the Catalog;
no I/O and no decisions (rules decide). `advisor.estimator` puts them together per GPU."""
