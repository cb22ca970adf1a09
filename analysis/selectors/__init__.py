"""Reads for reports. `report_data` (in analysis.selectors.report) composes the human and automatic parts."""
