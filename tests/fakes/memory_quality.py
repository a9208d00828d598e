"""In-memory fake of the evaluation-times port (``ports/quality.py``): what GetDataQualityResult would answer."""

from __future__ import annotations

from lakehook.domain.glue_quality import EvaluationTimes
from lakehook.ports.quality import EvaluationTimesReader


class InMemoryEvaluationTimes(EvaluationTimesReader):
    """The start and end of each known result id; an unknown one cannot be read (None), as a missing result."""

    def __init__(self, known: dict[str, EvaluationTimes] | None = None) -> None:
        self.known = dict(known or {})

    def evaluation_times(self, result_id: str) -> EvaluationTimes | None:
        return self.known.get(result_id)
