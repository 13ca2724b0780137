"""Private plumbing of the file system (docs/ARCHITECTURE.md, "Layers"): the package's
errors (:mod:`.errors`), confinement of paths read from state (:mod:`.confine`), writer
locks (:mod:`.locking`), journaled transactions (:mod:`.transaction`) and where the
package's data lives (:mod:`.resources`). Imports nothing else of the package.
"""
