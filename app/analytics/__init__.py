"""Audit analytics on Spark: turns the audit trail into Parquet figure tables and one self-contained report.

``event_files`` writes the exported Parquet layout (pyarrow) and ``export`` fills it from the database;
``events_schema`` reads it in Spark; ``transforms`` holds the pure DataFrame -> DataFrame steps; ``job``
does the session, reads and writes; ``report_data`` collects the figures' small aggregates, ``charts``
draws them and ``report`` renders the page from ``templates/``. Needs the ``analytics`` extra.
"""
