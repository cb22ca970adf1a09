"""Reads for reports. `report_data` (analysis/report/build.py) composes them into the report, one declared table each."""
