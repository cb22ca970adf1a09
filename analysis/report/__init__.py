"""A pool's report: its tables, each declared once as a `Table` in analysis/report/tables.py, and everything that reads
the declarations: the report's build (build.py), its exports (exports/: JSON, CSV, LaTeX, HTML), the page
(analysis/templatetags/report_format.py), the figures (analysis/plots) and the API schema (analysis/openapi.py).

A new metric is then:
1. a metric function (analysis/metrics/), tested against an independent computation;
2. a selector (analysis/selectors/) that applies it to the report's inputs and returns typed rows (a TypedDict row
   type in types.py or machine_types.py, which mypy checks the selector against);
3. one declaration in tables.py: key, title, row type, column titles, the sentence shown while it is empty, its CSV
   header when empty, the builder, and its LaTeX table and plots if any;
4. optionally a template partial (templates/analysis/) or a plot (analysis/plots/, named in the declaration's `plots`).
The JSON report, the CSV files, the LaTeX and HTML exports, the page's table, its empty-table sentence and the API
schema then follow from the declaration; tests/analysis/test_report_tables.py checks the rows against the row type.
"""
