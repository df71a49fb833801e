"""What a campaign gives the agent besides the evaluator and the goal: one arm per :class:`MethodKind`.

- ``questions``: short questions at the five moments (quaere's own method; the hooks as they are);
- ``tooled``: the AVO-style arm: a profiler digest, a documentation search, a lessons store, a lineage of
  kernel versions (bash commands: ``quaere tool ...``) and a supervisor that breaks loops of failed edits;
- ``goal-only``: the Stop hook and nothing else, the control.

The campaign sees one :class:`~quaere.methods.base.Method` (:mod:`.base`); :func:`~quaere.methods.arms.make_method`
builds it. Modules are imported by name: nothing heavy here.
"""

from quaere.records import MethodKind

__all__ = ["MethodKind"]
