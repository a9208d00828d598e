"""Glue Data Quality results through boto3: ``GetDataQualityResult`` answers when an evaluation started and
completed (``StartedOn``, ``CompletedOn``), which the "Data Quality Evaluation Results Available" event leaves out."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from lakehook.domain.glue_quality import EvaluationTimes
from lakehook.observability import logger
from lakehook.ports.quality import EvaluationTimesReader


class GlueEvaluationTimes(EvaluationTimesReader):
    def __init__(self, glue: Any) -> None:
        self._glue = glue

    def evaluation_times(self, result_id: str) -> EvaluationTimes | None:
        try:
            answer = self._glue.get_data_quality_result(ResultId=result_id)
        except (ClientError, BotoCoreError, NotImplementedError) as exc:
            logger.warning("glue data quality result unreadable", extra={"result_id": result_id, "error": str(exc)})
            return None
        started, completed = answer.get("StartedOn"), answer.get("CompletedOn")
        if not isinstance(started, datetime) or not isinstance(completed, datetime):
            return None
        return EvaluationTimes(_ms(started), _ms(completed))


def _ms(moment: datetime) -> int:
    return int(moment.timestamp() * 1000)
