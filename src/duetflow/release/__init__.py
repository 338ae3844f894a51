"""Releases: deterministic splits, publishing to a store, validation, pulling and exports.

Submodules: :mod:`~duetflow.release.splits`, :mod:`~duetflow.release.publish`,
:mod:`~duetflow.release.pull`, :mod:`~duetflow.release.validate`,
:mod:`~duetflow.release.export`, :mod:`~duetflow.release.layout`.
"""
