"""Where an external quality evaluation's times are read: Glue Data Quality's events name no start time."""

from __future__ import annotations

from abc import ABC, abstractmethod

from lakehook.domain.glue_quality import EvaluationTimes


class EvaluationTimesReader(ABC):
    @abstractmethod
    def evaluation_times(self, result_id: str) -> EvaluationTimes | None:
        """When the evaluation of this result started and completed; None when it cannot be read (no such
        result, no permission, the service unreachable): the verdict is then not pinned, with that reason."""
