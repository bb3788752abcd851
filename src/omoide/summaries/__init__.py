"""Rolling summaries (seed 003): models here; the generator is :mod:`omoide.summaries.service`."""

from omoide.stores.summaries import ShortTermHistoryConfig, Summary, SummaryDraft, SummaryKind, SummaryScope

__all__ = ["ShortTermHistoryConfig", "Summary", "SummaryDraft", "SummaryKind", "SummaryScope"]
