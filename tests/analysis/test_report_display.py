"""How the report page shows a table's figures (analysis/templatetags/report_format.py): an interval is one
`[low, high]` column, and a figure whose interval is null (of zero width, docs/domain.md 'Metrics') reads
"undefined" rather than a dash that would say the figure itself is missing."""

from __future__ import annotations

from analysis.templatetags.report_format import presented


def _cells(table: dict) -> list[list[str]]:
    return [[cell["text"] for cell in row] for row in presented(table)["rows"]]


def test_a_defined_kappa_with_a_null_interval_reads_undefined():
    table = {
        "name": "prob_vs_gen",
        "columns": ["model", "kappa", "kappa_ci_low", "kappa_ci_high"],
        "rows": [
            ["a-b", "0.000", "—", "—"],  # one rater constant: kappa 0, interval of zero width
            ["a-c", "—", "—", "—"],  # no shared items: no kappa at all
            ["b-c", "0.412", "0.101", "0.690"],
        ],
    }

    assert _cells(table) == [["a-b", "0.000", "undefined"], ["a-c", "—", "—"], ["b-c", "0.412", "[0.101, 0.690]"]]


def test_a_bootstrap_interval_follows_its_figure_too():
    table = {
        "name": "judge_verdict_agreement",
        "columns": ["against", "cohen_kappa", "cohen_kappa_boot_ci_low", "cohen_kappa_boot_ci_high"],
        "rows": [["human", "1.000", "—", "—"]],
    }

    assert _cells(table) == [["human", "1.000", "undefined"]]


def test_a_column_empty_in_every_row_is_left_out_and_a_column_with_one_figure_kept():
    table = {
        "name": "accuracy",
        "columns": ["model", "n", "prob", "prob_sem", "gen", "gen_sem", "human", "human_sem"],
        "rows": [["m1", "4", "—", "—", "0.500", "0.250", "—", "—"], ["m2", "2", "—", "—", "1.000", "—", "0.500", "—"]],
    }

    shown = presented(table)

    assert [column["name"] for column in shown["columns"]] == ["model", "n", "gen", "gen_sem", "human"]
    assert [[cell["text"] for cell in row] for row in shown["rows"]] == [
        ["m1", "4", "0.500", "0.250", "—"],
        ["m2", "2", "1.000", "—", "0.500"],
    ]


def test_the_accuracy_table_is_shown_as_a_table_per_kind_of_measure_each_with_its_cell():
    from analysis.templatetags.report_format import presented_all

    cell = ["m1", "misgendered", "pre", "xe"]
    measures = ["prob", "prob_sem", "prob_n", "gen", "gen_sem", "gen_n", "human", "human_sem", "human_n"]
    table = {
        "name": "accuracy",
        "columns": ["model", "dataset", "setting", "pronoun", "n", *measures],
        "rows": [[*cell, "4", "—", "—", "0", "0.500", "0.250", "4", "1.000", "—", "2"]],
    }

    shown = {part["name"]: part for part in presented_all([table])}

    assert set(shown) == {"accuracy_generation", "accuracy_human"}  # nothing probability-based: left out
    assert [c["name"] for c in shown["accuracy_human"]["columns"]] == [
        "model", "dataset", "setting", "pronoun", "human", "human_n",
    ]  # fmt: skip
    assert [cell["text"] for cell in shown["accuracy_generation"]["rows"][0]] == [*cell, "0.500", "0.250", "4"]
    assert all(part["csv"] == "accuracy" for part in shown.values())
