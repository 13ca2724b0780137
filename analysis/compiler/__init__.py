"""The cohort compiler (paper section 3 and appendix A): HD-EPIC annotations -> typed episode
worlds, reference operations, goal-aligned tasks with frozen contracts, the two suites and
the audit, written to ``frozen_exports/cohort`` by :func:`analysis.compiler.cohort.compile_cohort`
(docs/compiler.md)."""
