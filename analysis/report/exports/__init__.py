"""The report's exports: JSON, CSV (one file per table, zipped when more than one), LaTeX tables and standalone HTML.
`render.report_render` is the one dispatch from a format (and an optional table) to a body, a content type and a file
name; the `report` command, the page's downloads and the API all call it. Every table's CSV header, LaTeX table and
title come from its declaration (analysis/report/tables/)."""
