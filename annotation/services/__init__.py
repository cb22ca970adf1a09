"""Writes for the annotation app. Every entry point (commands, pages, API) calls these functions."""

from annotation.services.adjudication import adjudication_save
from annotation.services.annotation import AnnotationRejected, IdempotencyConflict, Submitted, annotation_submit
from annotation.services.assignment import AssignmentError, AssignResult, assignments_create
from annotation.services.imports import GenerationImportError, GenerationsImportResult, generations_import
from annotation.services.pool import PoolSampleError, PoolSampleResult, ShortCell, pool_from_generations, pool_sample

__all__ = [
    "AnnotationRejected",
    "IdempotencyConflict",
    "AssignResult",
    "AssignmentError",
    "GenerationImportError",
    "GenerationsImportResult",
    "PoolSampleError",
    "PoolSampleResult",
    "ShortCell",
    "Submitted",
    "adjudication_save",
    "annotation_submit",
    "assignments_create",
    "generations_import",
    "pool_from_generations",
    "pool_sample",
]
