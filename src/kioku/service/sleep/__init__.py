"""Sleep: consolidation of one context, logged action by action and reversible (docs/concepts.md).

One module per phase (``sweep``, ``edges``, ``merge``, ``importance``, ``llm_phases``), the
``runner`` that runs them in order inside one logged run, and ``service`` with the operations
every surface exposes (``sleep``, ``sleep_report``, ``rollback_sleep``) and the schedule.
"""

from kioku.service.sleep.config import LLMConfig, SleepConfig
from kioku.service.sleep.service import SleepService, sleep_job

__all__ = ["LLMConfig", "SleepConfig", "SleepService", "sleep_job"]
