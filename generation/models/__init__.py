from generation.models.datasets import Dataset, DatasetKind, Instance, PronounForm, Template
from generation.models.jobs import (
    DEFAULT_MODEL_FIELDS,
    DEFAULT_MODEL_NAME,
    Generation,
    GenerationJob,
    JobChunk,
    JobStatus,
    LanguageModel,
    ProbResult,
)

__all__ = [
    "DEFAULT_MODEL_FIELDS",
    "DEFAULT_MODEL_NAME",
    "Dataset",
    "DatasetKind",
    "Generation",
    "GenerationJob",
    "Instance",
    "JobChunk",
    "JobStatus",
    "LanguageModel",
    "ProbResult",
    "PronounForm",
    "Template",
]
