from generation.models.datasets import Dataset, DatasetKind, Instance, PronounForm, Template
from generation.models.jobs import Generation, GenerationJob, JobStatus, LanguageModel, ProbResult

__all__ = [
    "Dataset",
    "DatasetKind",
    "Generation",
    "GenerationJob",
    "Instance",
    "JobStatus",
    "LanguageModel",
    "ProbResult",
    "PronounForm",
    "Template",
]
