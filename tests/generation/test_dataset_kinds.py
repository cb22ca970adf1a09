"""Dataset kinds are a registry (generation/datasets/): the code outside that package reads a kind's spec and does not
name a kind, and `import_dataset` takes its choices from the registry."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from generation.datasets.base import DatasetKind
from generation.datasets.registry import DATASET_KINDS, dataset_kind
from tests.conftest import REPO
from tests.source_trees import source_tree
from tests.test_architecture import LAYERS

KIND_NAMES = set(DATASET_KINDS) | set(DatasetKind.values)
# These two words also name other things (a report table, a related name, a folder, a form field): they count where
# a kind stands: compared with something, passed as a kind or a dataset, as an `x or "..."` default, or beside another
# kind's name in a list, a tuple, a set or a dict's keys.
AMBIGUOUS = {"tango", "templates"}
KIND_ARGUMENTS = {"kind", "dataset", "dataset_kind"}
KIND_FUNCTIONS = {"codebook_for", "dataset_kind", "label_codebook"}
MOST_REFERENCES = 3


def _is_kind_name(node: ast.AST | None) -> bool:
    return isinstance(node, ast.Constant) and node.value in KIND_NAMES - AMBIGUOUS


def _where_a_kind_stands(node: ast.Constant, parent: ast.AST) -> bool:
    if isinstance(parent, ast.Compare | ast.BoolOp):
        return True
    if isinstance(parent, ast.List | ast.Tuple | ast.Set):
        return any(_is_kind_name(element) for element in parent.elts)
    if isinstance(parent, ast.Dict) and node in parent.keys:
        return any(_is_kind_name(key) for key in parent.keys)
    if isinstance(parent, ast.keyword):
        return parent.arg is not None and (parent.arg in KIND_ARGUMENTS or parent.arg.endswith("__kind"))
    if isinstance(parent, ast.Call):
        called = parent.func
        name = called.attr if isinstance(called, ast.Attribute) else getattr(called, "id", "")
        return name in KIND_FUNCTIONS and node in parent.args
    return False


def kind_references(path: Path) -> list[tuple[int, str]]:
    """(line, what) for each reference to a specific dataset kind in the module: a `DatasetKind.MEMBER`, or a string
    that is a kind's name (for the ambiguous words, only where a kind stands)."""
    tree = source_tree(path)
    parents = {id(child): node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "DatasetKind":
            if node.attr in DatasetKind.names:
                found.append((node.lineno, f"DatasetKind.{node.attr}"))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in KIND_NAMES:
            if node.value not in AMBIGUOUS or _where_a_kind_stands(node, parents[id(node)]):
                found.append((node.lineno, repr(node.value)))
    return found


def _references_outside_the_package() -> list[str]:
    found = []
    for top in LAYERS:
        for path in sorted((REPO / top).rglob("*.py")):
            relative = path.relative_to(REPO)
            if "migrations" in relative.parts or relative.parts[:2] == ("generation", "datasets"):
                continue
            found += [f"{relative}:{line}: {what}" for line, what in kind_references(path)]
    return found


def test_at_most_three_references_to_a_specific_kind_remain_outside_generation_datasets():
    found = _references_outside_the_package()
    assert len(found) <= MOST_REFERENCES, "read the kind's spec (generation/datasets/) instead:\n" + "\n".join(found)


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ('if dataset.kind == "tango":\n    pass\n', [(1, "'tango'")]),
        ('kind = item.dataset or "ruff"\n', [(1, "'ruff'")]),
        ('Dataset.objects.filter(kind="templates")\n', [(1, "'templates'")]),
        ('rows.filter(job__dataset__kind="tango")\n', [(1, "'tango'")]),
        ('codebook_for("misgendered")\n', [(1, "'misgendered'")]),
        ("x = DatasetKind.RUFF\ny = DatasetKind.choices\n", [(1, "DatasetKind.RUFF")]),
        ('KINDS = ["misgendered", "tango"]\n', [(1, "'misgendered'"), (1, "'tango'")]),
        ('NAMES = {"ruff": "RUFF", "tango": "TANGO"}\n', [(1, "'ruff'"), (1, "'tango'")]),
        ('ForeignKey(Dataset, related_name="templates")\nTABLES = {"tango": build, "agreement": other}\n', []),
    ],
)
def test_the_count_finds_kinds_where_they_stand_and_not_the_words_elsewhere(tmp_path, source, expected):
    module = tmp_path / "module.py"
    module.write_text(source)
    assert kind_references(module) == expected


def test_import_dataset_offers_the_registrys_kinds_in_its_order():
    from generation.management.commands.import_dataset import Command

    parser = Command().create_parser("manage.py", "import_dataset")
    kind = next(action for action in parser._actions if action.dest == "kind")
    assert list(kind.choices) == list(DATASET_KINDS) == [
        "misgendered", "ruff", "tango", "ruff-distractors", "templates", "crows-pairs", "stereoset", "gifi",
    ]  # fmt: skip


def test_every_stored_kind_has_a_spec_and_every_spec_a_stored_kind():
    assert {spec.kind for spec in DATASET_KINDS.values()} == set(DatasetKind)
    for kind in DatasetKind.values:
        assert dataset_kind(kind).kind == kind
    with pytest.raises(KeyError, match="no dataset kind 'onnx'"):
        dataset_kind("onnx")
