"""Audit analytics on Spark: turns the audit trail into Parquet figure tables and one self-contained report.

``events_schema`` fixes the event columns and the exported Parquet layout, ``transforms`` holds the pure
DataFrame -> DataFrame steps, ``job`` does the session, reads and writes, and ``report`` draws the HTML.
"""
