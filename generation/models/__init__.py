from generation.models.datasets import Dataset, DatasetKind, Instance, PronounForm, Template
from generation.models.jobs import Generation, GenerationJob, JobChunk, JobStatus, LanguageModel, ProbResult

__all__ = [
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
