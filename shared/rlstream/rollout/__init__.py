"""Rollouts: one graded conversation, the unit every stage after grading works on.

* :class:`ScoredRollout` -- the transcript plus every reward's verdict and the combined score;
* :class:`TurnScore` -- one assistant turn's score against its task's passing rollouts;
* its id -- :meth:`ScoredRollout.make_id` (conversation id + reward spec, the one definition);
* its task key (peer group) -- :attr:`ScoredRollout.task_key`, which is
  :attr:`rlstream.transcript.Transcript.group_key` (the one definition; ``rlstream.taskkey``
  resolves the key at ingest).
"""

from rlstream.rollout.model import ScoredRollout, TurnScore, TurnSource

__all__ = ["ScoredRollout", "TurnScore", "TurnSource"]
