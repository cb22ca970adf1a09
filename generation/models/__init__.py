from generation.models.dataset_imports import DatasetUpload
from generation.models.datasets import Dataset, DatasetKind, Instance, PronounForm, Template
from generation.models.endpoints import EndpointReply, ModelEndpoint
from generation.models.jobs import (
    DEFAULT_MODEL_FIELDS,
    DEFAULT_MODEL_NAME,
    GENERATION_KIND,
    JOB_DEFAULTS,
    Generation,
    GenerationRun,
    Job,
    JobChunk,
    JobInput,
    JobStatus,
    LanguageModel,
    ProbResult,
)
from generation.models.pairs import PAIR_METHODS, Pair, PairScore
from generation.models.tango import TangoTemplate

__all__ = [
    "DEFAULT_MODEL_FIELDS",
    "DEFAULT_MODEL_NAME",
    "Dataset",
    "DatasetUpload",
    "DatasetKind",
    "EndpointReply",
    "GENERATION_KIND",
    "Generation",
    "GenerationRun",
    "Job",
    "Instance",
    "JOB_DEFAULTS",
    "JobChunk",
    "JobInput",
    "JobStatus",
    "LanguageModel",
    "ModelEndpoint",
    "PAIR_METHODS",
    "Pair",
    "PairScore",
    "ProbResult",
    "PronounForm",
    "TangoTemplate",
    "Template",
]
