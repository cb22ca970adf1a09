"""A pool's report: its tables, each declared once as a `Table` (table.py) in tables/, and everything that reads the
declarations: the report's build (build.py) and type (shape.py), its exports (exports/: JSON, CSV, LaTeX, HTML), the
page (analysis/templatetags/report_format.py), the figures (analysis/plots) and the API schema (analysis/apis.py).

A new metric is then:
1. a metric function (analysis/metrics/);
2. a selector (analysis/selectors/) that applies it to the report's inputs (inputs.py) and returns typed rows: its
   TypedDict row type goes in types.py (machine_types.py for the judges), and mypy checks the selector against it;
3. one declaration in tables/ (people.py, automatic.py, machine.py or active.py): key, title, row type, column
   titles, the sentence shown while it is empty and the CSV header then, the builder (mypy checks it returns the
   row type), and its LaTeX table (exports/latex_tables.py) if any;
4. optionally a template partial (templates/analysis/) or a figure: one `FigureDeclaration` (analysis/plots/) that
   names the table it draws, what else it reads, its heading and caption.
The JSON report and its type, the CSV files, the LaTeX and HTML exports, the page's table and its empty-table
sentence, the figures shown and the API schema then follow from the declaration. tests/analysis/test_report_tables.py
checks that a built report's rows have exactly the keys of their row types, and that every table has a title, an
empty sentence and a title for every column it shows.
"""
